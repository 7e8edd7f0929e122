"""MirrorMaker 2's internal record formats (offset syncs, checkpoints, heartbeats).

MM2 writes these records with Kafka's wire-protocol `Struct`: the fields of a schema concatenated in
order, big-endian integers, and STRING as an INT16 byte length followed by UTF-8 (non-nullable, at most
32767 bytes). There are no tags and no length prefix, and readers ignore trailing bytes, so a later
version that appends fields stays readable. Every encoder here produces exactly the bytes MM2 produces.
"""

import struct
from dataclasses import dataclass
from typing import Self

__all__ = [
    "CHECKPOINT_VERSION",
    "HEARTBEAT_VERSION",
    "MAX_STRING_BYTES",
    "Checkpoint",
    "Heartbeat",
    "Mm2FormatError",
    "OffsetSync",
]

MAX_STRING_BYTES = 32767
CHECKPOINT_VERSION = 0
HEARTBEAT_VERSION = 0

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_OFFSET_SYNC_VALUE = struct.Struct(">qq")  # upstreamOffset, offset
_CHECKPOINT_VALUE_HEAD = struct.Struct(">hqq")  # version, upstreamOffset, offset (metadata follows)
_HEARTBEAT_VALUE = struct.Struct(">hq")  # version, timestamp


class Mm2FormatError(ValueError):
    """A record or field that cannot be encoded to, or decoded from, MM2's wire format."""


# Encoding. The happy path is plain struct packing; errors are translated only on the failure path so
# that the hot path (one offset sync per replicated batch) pays nothing for them.


def _encode_string(value: str, field: str) -> bytes:
    try:
        data = value.encode("utf-8")
    except AttributeError:
        raise Mm2FormatError(f"cannot encode {field}: STRING is non-nullable, got {value!r}") from None
    except UnicodeEncodeError as exc:
        raise Mm2FormatError(
            f"cannot encode {field}: {value!r} is not encodable as UTF-8 ({exc.reason})"
        ) from None
    if len(data) > MAX_STRING_BYTES:
        raise Mm2FormatError(
            f"cannot encode {field}: {len(data)} UTF-8 bytes, "
            f"more than the STRING maximum of {MAX_STRING_BYTES}"
        )
    return _INT16.pack(len(data)) + data


def _pack_error(what: str, values: tuple[object, ...], exc: struct.error) -> Mm2FormatError:
    return Mm2FormatError(f"cannot encode {what}: {values!r} must be integers in the field's range ({exc})")


# Decoding: each helper returns the value and the position just after it.


def _require(data: bytes | None, what: str) -> bytes:
    if data is None:
        raise Mm2FormatError(f"cannot decode {what}: it is null")
    return data


def _unpack(unpacker: struct.Struct, data: bytes, pos: int, what: str) -> tuple[int, ...]:
    if len(data) - pos < unpacker.size:
        raise Mm2FormatError(
            f"cannot decode {what}: truncated, needs {unpacker.size} bytes at offset {pos}, "
            f"record has {len(data)}"
        )
    return unpacker.unpack_from(data, pos)


def _read_string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    if len(data) - pos < _INT16.size:
        raise Mm2FormatError(
            f"cannot decode {what}: truncated, needs a 2-byte STRING length at offset {pos}, "
            f"record has {len(data)}"
        )
    (length,) = _INT16.unpack_from(data, pos)
    if length < 0:
        raise Mm2FormatError(f"cannot decode {what}: negative STRING length {length} at offset {pos}")
    start = pos + _INT16.size
    end = start + length
    if end > len(data):
        raise Mm2FormatError(
            f"cannot decode {what}: truncated, STRING of {length} bytes at offset {start}, "
            f"record has {len(data)}"
        )
    try:
        return str(data[start:end], "utf-8"), end
    except UnicodeDecodeError as exc:
        raise Mm2FormatError(f"cannot decode {what}: invalid UTF-8 ({exc.reason})") from None


def _read_int32(data: bytes, pos: int, what: str) -> tuple[int, int]:
    (value,) = _unpack(_INT32, data, pos, what)
    return value, pos + _INT32.size


def _check_version(version: int, expected: int, what: str) -> None:
    # MM2 only `assert`s the version, so a JVM without -ea would misread a future layout as V0; refusing
    # it is safer for a tool that acts on the offsets.
    if version != expected:
        raise Mm2FormatError(f"cannot decode {what}: unknown version {version}, only {expected} is supported")


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """Record `upstream_offset` of source `topic`/`partition` landed at `downstream_offset` on the target.

    key = STRING topic, INT32 partition; value = INT64 upstreamOffset, INT64 offset (no version header).
    """

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    def record_key(self) -> bytes:
        try:
            partition = _INT32.pack(self.partition)
        except struct.error as exc:
            raise _pack_error("offset-sync key field 'partition'", (self.partition,), exc) from None
        return _encode_string(self.topic, "offset-sync key field 'topic'") + partition

    def record_value(self) -> bytes:
        try:
            return _OFFSET_SYNC_VALUE.pack(self.upstream_offset, self.downstream_offset)
        except struct.error as exc:
            offsets = (self.upstream_offset, self.downstream_offset)
            raise _pack_error(f"offset-sync value for {self.topic}-{self.partition}", offsets, exc) from None

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Self:
        key = _require(key, "offset-sync key")
        value = _require(value, "offset-sync value")
        topic, pos = _read_string(key, 0, "offset-sync key field 'topic'")
        partition, _ = _read_int32(key, pos, "offset-sync key field 'partition'")
        return cls(topic, partition, *cls.offsets_of_value(value))

    @staticmethod
    def offsets_of_value(value: bytes | None) -> tuple[int, int]:
        """(upstream offset, downstream offset) of a record's value alone: for a reader of millions of syncs that
        decodes each key (the partition) once."""
        upstream, downstream = _unpack(_OFFSET_SYNC_VALUE, _require(value, "offset-sync value"), 0, "offset-sync value")
        return upstream, downstream


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """`group`'s committed `upstream_offset` on the source, translated to `downstream_offset` on the target.

    `topic` is the target-side (renamed) topic. key = STRING group, STRING topic, INT32 partition;
    value = INT16 version (0), INT64 upstreamOffset, INT64 offset, STRING metadata ("" when none).
    """

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def record_key(self) -> bytes:
        try:
            partition = _INT32.pack(self.partition)
        except struct.error as exc:
            raise _pack_error("checkpoint key field 'partition'", (self.partition,), exc) from None
        return (
            _encode_string(self.group, "checkpoint key field 'group'")
            + _encode_string(self.topic, "checkpoint key field 'topic'")
            + partition
        )

    def record_value(self) -> bytes:
        try:
            head = _CHECKPOINT_VALUE_HEAD.pack(
                CHECKPOINT_VERSION, self.upstream_offset, self.downstream_offset
            )
        except struct.error as exc:
            what = f"checkpoint value for group {self.group!r} {self.topic}-{self.partition}"
            raise _pack_error(what, (self.upstream_offset, self.downstream_offset), exc) from None
        return head + _encode_string(self.metadata, "checkpoint value field 'metadata'")

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Self:
        key = _require(key, "checkpoint key")
        value = _require(value, "checkpoint value")
        group, pos = _read_string(key, 0, "checkpoint key field 'group'")
        topic, pos = _read_string(key, pos, "checkpoint key field 'topic'")
        partition, _ = _read_int32(key, pos, "checkpoint key field 'partition'")
        (version,) = _unpack(_INT16, value, 0, "checkpoint value field 'version'")
        _check_version(version, CHECKPOINT_VERSION, "checkpoint value")
        _, upstream, downstream = _unpack(_CHECKPOINT_VALUE_HEAD, value, 0, "checkpoint value offsets")
        metadata, _ = _read_string(value, _CHECKPOINT_VALUE_HEAD.size, "checkpoint value field 'metadata'")
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A liveness beat of the `source_alias` -> `target_alias` flow, emitted at `timestamp_ms`.

    key = STRING sourceClusterAlias, STRING targetClusterAlias; value = INT16 version (0), INT64 timestamp.
    """

    source_alias: str
    target_alias: str
    timestamp_ms: int

    def record_key(self) -> bytes:
        return _encode_string(self.source_alias, "heartbeat key field 'sourceClusterAlias'") + _encode_string(
            self.target_alias, "heartbeat key field 'targetClusterAlias'"
        )

    def record_value(self) -> bytes:
        try:
            return _HEARTBEAT_VALUE.pack(HEARTBEAT_VERSION, self.timestamp_ms)
        except struct.error as exc:
            what = f"heartbeat value for {self.source_alias}->{self.target_alias}"
            raise _pack_error(what, (self.timestamp_ms,), exc) from None

    @classmethod
    def from_record(cls, key: bytes | None, value: bytes | None) -> Self:
        key = _require(key, "heartbeat key")
        value = _require(value, "heartbeat value")
        source, pos = _read_string(key, 0, "heartbeat key field 'sourceClusterAlias'")
        target, _ = _read_string(key, pos, "heartbeat key field 'targetClusterAlias'")
        (version,) = _unpack(_INT16, value, 0, "heartbeat value field 'version'")
        _check_version(version, HEARTBEAT_VERSION, "heartbeat value")
        _, timestamp = _unpack(_HEARTBEAT_VALUE, value, 0, "heartbeat value field 'timestamp'")
        return cls(source, target, timestamp)
