"""Offset-syncs written by a steady copy of many slowly moving partitions, by `engine.offset_lag_max`.

Two flows copy the same source topic at the same time, each into a target topic of its own: one with
`engine.offset_lag_max: 0` (a sync for every partition that moved, every `engine.offset_sync_interval_s`: what the
engine did before the setting) and one with the default, MM2's `offset.lag.max` of 100. A producer trickles
`--rate` records a second into each of `--partitions` partitions for `--seconds`; then both engines stop, the syncs
each flow wrote are counted, and a fresh read of its mapping says how many it holds (the changes of delta only).
`--exactly-once` runs both flows in that mode: every transaction leaves a marker in each target partition it wrote,
so each partition's delta changes once per transaction, and each such change needs its sync.

    .venv/bin/python bench/offset_syncs_written.py --source 127.0.0.1:9092 --bootstrap 127.0.0.1:9093
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from harness import EngineProcess, print_table

from mirror_engine.flow import FlowMapping, InternalTopics
from mirror_engine.kafka import list_offsets, read_to_end, wait_until_served
from mirror_engine.plan import plan_from_dict


def _ends(admin: AdminClient, partitions: list[TopicPartition]) -> int:
    return sum(list_offsets(admin, partitions, OffsetSpec.latest()).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--bootstrap", required=True, help="the target cluster")
    parser.add_argument("--partitions", type=int, default=500)
    parser.add_argument("--rate", type=float, default=2.0, help="records a second into each partition")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--lag", type=int, action="append", help="offset_lag_max values (default 0 and 100)")
    parser.add_argument("--exactly-once", action="store_true")
    args = parser.parse_args()
    lags = args.lag or [0, 100]
    run = uuid.uuid4().hex[:6]
    topic = f"trickle-{run}"
    source_admin, target_admin = AdminClient({"bootstrap.servers": args.source}), \
        AdminClient({"bootstrap.servers": args.bootstrap})
    for future in source_admin.create_topics([NewTopic(topic, args.partitions, 1)]).values():
        future.result()
    wait_until_served(source_admin, [topic])

    folder = Path(tempfile.mkdtemp(prefix="syncs-written-"))
    plans, engines = {}, {}
    for lag in lags:
        data = {"name": f"lag{lag}-{run}", "source": {"alias": f"s{lag}x{run}", "bootstrap_servers": args.source},
                "target": {"alias": "tgt", "bootstrap_servers": args.bootstrap},
                "topics": {"include": [topic]}, "replication_policy": {"type": "default"},
                "engine": {"offset_lag_max": lag, "status_port": -1, "exactly_once": args.exactly_once}}
        plans[lag] = plan_from_dict(data)
        plan_file = folder / f"lag{lag}.yaml"
        plan_file.write_text(yaml.safe_dump(data, sort_keys=False))
        engines[lag] = EngineProcess("run", plan_file, folder / f"lag{lag}.log")

    producer = Producer({"bootstrap.servers": args.source, "linger.ms": 50})
    produced, started = 0, time.monotonic()
    tick = 1.0 / args.rate
    while time.monotonic() - started < args.seconds:
        for partition in range(args.partitions):
            producer.produce(topic, b"x" * 100, None, partition)
            produced += 1
        producer.poll(0)
        for engine in engines.values():
            engine.check_alive()
        time.sleep(max(0.0, tick - (time.monotonic() - started) % tick))
    assert producer.flush(60) == 0

    rows = []
    for lag, plan in plans.items():
        target_topic = plan.policy().format_remote_topic(plan.source.alias, topic)
        partitions = [TopicPartition(target_topic, p) for p in range(args.partitions)]
        deadline = time.monotonic() + 120
        while _ends(target_admin, partitions) < produced and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2 * plan.engine.offset_sync_interval_s)  # the last periodic syncs, if due
        engines[lag].stop()
        copied = _ends(target_admin, partitions)
        target_config = {"bootstrap.servers": args.bootstrap}
        syncs = len(read_to_end(target_config, InternalTopics.for_plan(plan).offset_syncs, timeout_s=300))
        with FlowMapping(plan, target_config) as mapping:
            mapping.refresh(300)
            held = sum(len(mapping.offsets.partition(*key) or ()) for key in mapping.offsets.partitions())
        minutes = args.partitions * args.seconds / 60
        rows.append([str(lag), f"{copied:,}", f"{syncs:,}", f"{syncs / minutes:.1f}", f"{held:,}"])
    mode = "exactly-once" if args.exactly_once else "at-least-once"
    print_table(f"{args.partitions} partitions, {args.rate:g} records/s each for {args.seconds:.0f} s "
                f"({produced:,} records), {mode}, offset_sync_interval_s "
                f"{plans[lags[0]].engine.offset_sync_interval_s:g}",
                ["offset_lag_max", "target offsets", "offset-syncs written", "per partition-minute",
                 "held by a fresh mapping"], rows,
                ["target offsets: the copied records and, in exactly-once mode, a transaction marker per partition "
                 "and transaction", f"load average {os.getloadavg()[0]:.1f} at the end"])


if __name__ == "__main__":
    main()
