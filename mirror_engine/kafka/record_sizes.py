"""A record's size as a Kafka broker counts it against a topic's `max.message.bytes`.

The broker compares the size of each record batch it receives (after compression) with the topic's
`max.message.bytes`. A record alone in a batch takes `RECORD_BATCH_OVERHEAD` (the v2 batch header,
`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`) plus its own size (`DefaultRecord.sizeInBytes` with offset
and timestamp deltas 0). librdkafka never sends a compressed batch larger than the same batch
uncompressed (it sends it uncompressed instead), so the uncompressed size is an upper bound of what the
broker sees.
"""

from __future__ import annotations

from collections.abc import Sequence

RECORD_BATCH_OVERHEAD = 61
# Above this raw size (key + value + header names and values) a record may be near a limit: only then is
# its exact size computed. The record's own framing is at most 1 (attributes) + 5 (length) + 10 (timestamp
# delta) + 5 (offset delta) + 5 + 5 (key and value lengths) + 5 (header count) = 36 bytes, each header's
# at most 10 (two lengths), header names at most 4 bytes per character in UTF-8.
RECORD_FRAMING_MAX = 36
HEADER_FRAMING_MAX = 10

Headers = Sequence[tuple[str, bytes | None]] | None


def varint_size(value: int) -> int:
    """Bytes of Kafka's zig-zag varint encoding of a 32- or 64-bit signed value."""
    encoded = (value << 1) ^ (value >> 63)
    size = 1
    while encoded >= 0x80:
        encoded >>= 7
        size += 1
    return size


def record_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """`DefaultRecord.sizeInBytes(0, 0, key, value, headers)`: one record, first in its batch."""
    body = 1 + varint_size(0) + varint_size(0)  # attributes, timestamp delta, offset delta
    body += varint_size(-1) if key is None else varint_size(len(key)) + len(key)
    body += varint_size(-1) if value is None else varint_size(len(value)) + len(value)
    headers = headers or ()
    body += varint_size(len(headers))
    for name, header_value in headers:
        name_bytes = len(name.encode("utf-8"))
        body += varint_size(name_bytes) + name_bytes
        body += varint_size(-1) if header_value is None else varint_size(len(header_value)) + len(header_value)
    return varint_size(body) + body


def batch_size_alone(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    """The size of a batch holding only this record, uncompressed: what `max.message.bytes` must allow."""
    return RECORD_BATCH_OVERHEAD + record_size(key, value, headers)


def header_size_bound(headers: Sequence[tuple[str, bytes | None]]) -> int:
    """An upper bound of the headers' share of `record_size`, cheap enough for every record of the copy."""
    size = 0
    for name, header_value in headers:
        size += 4 * len(name) + (len(header_value) if header_value else 0) + HEADER_FRAMING_MAX
    return size


def raw_size_budget(max_batch_bytes: int) -> int:
    """Records whose key + value + `header_size_bound` stay within this fit a batch of `max_batch_bytes`."""
    return max_batch_bytes - RECORD_BATCH_OVERHEAD - RECORD_FRAMING_MAX
