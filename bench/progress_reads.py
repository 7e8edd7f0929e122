"""What a fresh reader of a flow's progress reads after the flow ran a while: the broker's default segment (1 GiB)
against the engine's compacted segment (`COMPACTED_SEGMENT_BYTES`), side by side in one run.

Two progress topics are written as the engine writes them at `--partitions` partitions that all move every
second (one record per partition per interval, `--intervals` intervals), one topic created with the broker's
default segment, one with the engine's. After `--settle` seconds (the broker's cleaner runs every 15 s by
default) each is read from its start as a switch, a sensor or a worker taking partitions reads it
(`load_progress`): the records read, the seconds, and the partitions found (the same on both, or the compaction
lost something).

    .venv/bin/python bench/progress_reads.py --bootstrap 127.0.0.1:9092 --partitions 10000 --intervals 150
"""

from __future__ import annotations

import argparse
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.flow import COMPACTED_SEGMENT_BYTES, PartitionProgress, load_progress
from mirror_engine.kafka import read_to_end, wait_until_served


def _write(producer: Producer, topic: str, partitions: int, intervals: int) -> None:
    for interval in range(intervals):
        for i in range(partitions):
            progress = PartitionProgress(f"t{i // 10:05d}", i % 10, 100 * (interval + 1), 100 * (interval + 1),
                                         "AAAAAAAAAAAAAAAAAAAAAA")
            while True:
                try:
                    producer.produce(topic, progress.value(), progress.key("src"), 0)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--intervals", type=int, default=150)
    parser.add_argument("--settle", type=float, default=40.0)
    args = parser.parse_args()
    config = {"bootstrap.servers": args.bootstrap}
    admin = AdminClient(config)
    run = uuid.uuid4().hex[:6]
    shapes = {"default segment": {"cleanup.policy": "compact"},
              "engine's segment": {"cleanup.policy": "compact", "segment.bytes": str(COMPACTED_SEGMENT_BYTES)}}
    topics = {name: f"bench-progress-{run}-{i}" for i, name in enumerate(shapes)}
    for future in admin.create_topics([NewTopic(topics[name], 1, -1, config=shapes[name]) for name in shapes]).values():
        future.result()
    wait_until_served(admin, list(topics.values()))
    producer = Producer({**config, "linger.ms": 20, "batch.size": 1_000_000, "compression.type": "lz4"})
    for name in shapes:
        started = time.monotonic()
        _write(producer, topics[name], args.partitions, args.intervals)
        print(f"{name}: wrote {args.partitions * args.intervals:,} records in {time.monotonic() - started:.1f} s",
              flush=True)
    time.sleep(args.settle)
    print(f"{'topic':<18} {'records read':>13} {'seconds':>8} {'partitions':>11}")
    for name in shapes:
        started = time.monotonic()
        found = load_progress(config, topics[name])
        seconds = time.monotonic() - started
        records = len(read_to_end(config, topics[name]))
        print(f"{name:<18} {records:>13,} {seconds:>8.2f} {len(found):>11,}", flush=True)
    admin.delete_topics(list(topics.values()))


if __name__ == "__main__":
    main()
