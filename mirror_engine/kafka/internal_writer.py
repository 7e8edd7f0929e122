"""The one writer of a few records at a time to a flow's small internal topics on the target (control, reports).

A producer made for the call, told the topic's leader first, flushed before the call returns. Not idempotent: a
fresh idempotent producer waited 0.5 s for its producer id in about one start in three (measured), the longest step
of a `switch-group`. These topics are compacted and keyed, the records of one call have distinct keys, and a record
written twice on a retry is the same record again: nothing idempotence would add.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Producer


def write_records(config: dict[str, str], topic: str, records: Sequence[tuple[bytes, bytes | None]], what: str,
                  settings: dict[str, int] | None = None) -> None:
    """Write (key, value) records (a None value: a tombstone) to partition 0 of `topic`, acknowledged by all
    in-sync replicas; RuntimeError naming `what` when the target does not acknowledge them within 30 s."""
    producer = Producer({**config, "acks": "all", **(settings or {})})
    producer.list_topics(topic, timeout=15)  # its leader now, not at the producer's next scan (0.5 s)
    for key, value in records:
        producer.produce(topic, value, key, 0)
    if producer.flush(30):
        raise RuntimeError(f"the target did not acknowledge {what} on {topic}")
