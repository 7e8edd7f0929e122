"""The copy contract: how every writer of a flow's target partitions writes them (the engine and the Spark backfill).

- The target producer is idempotent with `acks=all`; outside transactions it also has the gapless
  guarantee, so a failed record is fatal to the producer instead of leaving a hole: an acknowledged
  record proves every earlier record of its partition was written, in order.
- Its queue is bounded in messages and in bytes, so a writer far behind the source stays small.
- A record is produced to the same partition number with its key, value, headers and timestamp; when
  the local queue is full the writer serves deliveries until the record fits (never drops it).
- An offset-sync is written at every change of (target offset - source offset) (`SyncOnDelta`), and a
  partition's progress never passes an offset-sync the target has not acknowledged: the engine's
  `OffsetSyncWriter` keeps both, a writer of whole ranges stores its syncs before its progress
  (`SideRecordWriter.store_ranges`).
- The records on the target past a stored target position are the copies of the next source records
  past the stored source position: a writer resuming a range counts them as copied (the engine checks
  them by `fingerprint` first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from hashlib import blake2b
from typing import Any

from confluent_kafka import Producer

# The producer's queue: at most this many records and this many KiB of payload wait for the target.
# Both bounds count: librdkafka's byte bound counts payloads only, not its own few hundred bytes per
# message, so small records are bounded by their number.
QUEUE_MAX_MESSAGES = 50_000
QUEUE_MAX_KBYTES = 16 * 1024

Headers = Sequence[tuple[str, bytes | None]] | None


def target_producer_settings(target_config: dict[str, str], *, linger_ms: int, compression: str,
                             batch_bytes: int, transactional_id: str | None = None,
                             transaction_timeout_s: float = 60.0) -> dict[str, Any]:
    """The settings of a producer writing a flow's target partitions (see the module docstring)."""
    settings: dict[str, Any] = {
        **target_config,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": linger_ms,
        "batch.size": max(1, batch_bytes),
        "compression.type": compression,
        "queue.buffering.max.messages": QUEUE_MAX_MESSAGES,
        "queue.buffering.max.kbytes": QUEUE_MAX_KBYTES,
    }
    if transactional_id is not None:
        settings["transactional.id"] = transactional_id
        settings["transaction.timeout.ms"] = int(transaction_timeout_s * 1000)
    else:
        settings["enable.gapless.guarantee"] = True
    return settings


def produce_when_room(producer: Producer, topic: str, value: bytes | None, key: bytes | None, partition: int,
                      on_delivery: Callable[[Any, Any], None] | None, timestamp: int, headers: Headers) -> None:
    """Produce one record, serving deliveries while the local queue is full (the record is never dropped)."""
    while True:
        try:
            producer.produce(topic, value, key, partition, on_delivery, None, timestamp, headers)
            return
        except BufferError:
            producer.poll(0.05)


def fingerprint(key: bytes | None, value: bytes | None, headers: Headers, timestamp: int) -> bytes:
    """What identifies a copied record: its key, value, headers and timestamp (as the validation compares them)."""
    # The digest of one byte string, built with few formats: per part "-" (None) or "+<length>:<bytes>", per
    # header "h<length>:<name>" then its value's part, then "t<timestamp>". One hash call instead of an update
    # per part: the validation fingerprints every record it reads.
    encoded_headers = b""
    if headers:
        for name, header_value in headers:
            encoded = name.encode()
            encoded_headers += (b"h%d:%b-" % (len(encoded), encoded) if header_value is None
                                else b"h%d:%b+%d:%b" % (len(encoded), encoded, len(header_value), header_value))
    if key is not None and value is not None:
        data = b"+%d:%b+%d:%b%bt%d" % (len(key), key, len(value), value, encoded_headers, timestamp)
    else:
        data = b"%b%b%bt%d" % (b"-" if key is None else b"+%d:%b" % (len(key), key),
                               b"-" if value is None else b"+%d:%b" % (len(value), value), encoded_headers, timestamp)
    return blake2b(data, digest_size=16).digest()


def record_hash(key: bytes | None, value: bytes | None, headers: Headers, timestamp: int) -> int:
    """`fingerprint`'s identity of a consumed record (bytes or None parts) as a 64-bit integer, valid within the
    calling process only: Python's own hash of the same parts, whose key is chosen per process (at random, or by
    `PYTHONHASHSEED`: Spark's Python workers get 0 unless it is set).

    For comparing records read by one process (validation pairs both sides of a partition in one Spark task),
    about a tenth of `fingerprint`'s cost. Never store it, and never compare it across processes."""
    # A tuple's hash keeps its parts apart by position, and None, b"" and () hash apart: the same records are
    # equal here as under `fingerprint` (no headers and an empty list alike, as there).
    return hash((key, value, tuple(headers) if headers else (), timestamp))
