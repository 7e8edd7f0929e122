"""Confluent framing, and the translation of its schema ids: a framed key or value is the magic byte 0, a 4-byte
big-endian schema id, then the payload (for Protobuf, message indexes first). A translation rewrites exactly
bytes 1-4; it changes no offset, so offset-syncs, checkpoints and switch proofs stay exact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["MAGIC_BYTE", "CopyUnmapped", "IdTranslation", "StopAtUnmapped", "TopicFraming", "UnmappedRecord",
           "UnmappedRule", "framed_id"]

MAGIC_BYTE = 0
SAME = b"\x00same"  # in `IdTranslation.prefixes`: the id is the same on the target (compared by identity)


def framed_id(data: bytes | None) -> int | None:
    """The schema id of a framed key or value, or None for data that is not framed."""
    if data is None or len(data) < 5 or data[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(data[1:5], "big")


class UnmappedRecord(Exception):
    """A record the translation cannot rewrite and the plan says to stop at: why, in a sentence."""


class UnmappedRule:
    """What becomes of a framed part whose id the source registry does not know, or of a part that should be
    framed and is not (the plan's `schemas.unknown_ids`)."""

    def unmapped(self, data: bytes | None, reason: str) -> bytes | None:
        raise NotImplementedError


class CopyUnmapped(UnmappedRule):
    """Copied as it is, and counted."""

    def __init__(self) -> None:
        self.count = 0

    def unmapped(self, data: bytes | None, reason: str) -> bytes | None:
        self.count += 1
        return data


class StopAtUnmapped(UnmappedRule):
    """The partition stops before the record (`UnmappedRecord`)."""

    count = 0

    def unmapped(self, data: bytes | None, reason: str) -> bytes | None:
        raise UnmappedRecord(reason)


@dataclass(frozen=True)
class TopicFraming:
    """Which parts of a topic's records are framed: those with a subject on the source (under the topic-name
    strategy `<topic>-key` and `<topic>-value`; under the record-name strategies, values)."""

    key: bool
    value: bool


@dataclass
class IdTranslation:
    """Source ids to target ids, for every writer of the target: `target_id_of` answers an id not seen yet
    (registering its schema on the target if needed; None for an id the source registry does not know)."""

    target_id_of: Callable[[int], int | None]
    rule: UnmappedRule
    ids: dict[int, int] = field(default_factory=dict)
    unknown: set[int] = field(default_factory=set)
    # A source id's 4 bytes -> the target's 5 leading bytes (SAME where the ids are equal), for ids seen before.
    prefixes: dict[bytes, bytes] = field(default_factory=dict)

    def rewrite(self, data: bytes | None, part: str) -> bytes | None:
        """A framed key or value with its target id (`part`: "key" or "value", for the sentence)."""
        if data is None:
            return None  # a tombstone, or no key
        if len(data) < 5 or data[0] != MAGIC_BYTE:
            return self.rule.unmapped(data, f"its {part} is not in Confluent framing (no magic byte and schema id)")
        source_id = int.from_bytes(data[1:5], "big")
        target_id = self.ids.get(source_id)
        if target_id is None:
            target_id = self._resolve(source_id)
            if target_id is None:
                return self.rule.unmapped(data, f"its {part} names schema id {source_id}, which the source "
                                                "registry does not know")
        self.prefixes[data[1:5]] = SAME if target_id == source_id else b"\x00" + target_id.to_bytes(4, "big")
        if target_id == source_id:
            return data
        return b"\x00" + target_id.to_bytes(4, "big") + data[5:]

    def _resolve(self, source_id: int) -> int | None:
        if source_id in self.unknown:
            return None
        target_id = self.target_id_of(source_id)
        if target_id is None:
            self.unknown.add(source_id)
        else:
            self.ids[source_id] = target_id
        return target_id

    def record_rewrite(self, framing: TopicFraming) -> Callable[[bytes | None, bytes | None],
                                                               tuple[bytes | None, bytes | None]]:
        """The rewrite of a topic's records: (key, value) -> (key, value).

        Per record, the engine's copy loop calls it once: an id seen before is looked up by its 4 raw bytes
        (`prefixes`: the target's magic byte and id, ready to prepend), the rest of the data sliced once; only an id
        met for the first time, or data that is not framed, takes `rewrite`."""
        rewrite, prefixes = self.rewrite, self.prefixes

        def part(data: bytes | None, name: str) -> bytes | None:
            if data is not None and len(data) > 4 and data[0] == 0:
                prefix = prefixes.get(data[1:5])
                if prefix is not None:
                    return data if prefix is SAME else prefix + data[5:]
            return rewrite(data, name)

        if framing.key and framing.value:
            return lambda key, value: (part(key, "key"), part(value, "value"))
        if framing.value:
            def value_only(key: bytes | None, value: bytes | None) -> tuple[bytes | None, bytes | None]:
                if value is not None and len(value) > 4 and value[0] == 0:
                    prefix = prefixes.get(value[1:5])
                    if prefix is not None:
                        return key, (value if prefix is SAME else prefix + value[5:])
                return key, rewrite(value, "value")
            return value_only
        if framing.key:
            return lambda key, value: (part(key, "key"), value)
        return lambda key, value: (key, value)
