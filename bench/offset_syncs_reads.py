"""A fresh read of a flow's mapping as its offset-syncs topic grows: the known limit of long migrations at scale.

The offset-syncs topic keeps every sync (the syncs at gaps are what exact translation of old offsets needs), and the
engine writes one for every partition that moved every `engine.offset_sync_interval_s`. Every fresh read of the
mapping (a switch, a sensor, validation, a checkpoint loop starting) reads them all. This writes `--partitions`
partitions' syncs `--rounds` times per size (one size per `--rounds`, each into a flow of its own on the target,
`--bootstrap`; the plan's source, `--source`, is never contacted) and times a fresh `FlowMapping.refresh()`.

    .venv/bin/python bench/offset_syncs_reads.py --source 127.0.0.1:9092 --bootstrap 127.0.0.1:9093 \\
        --rounds 10 --rounds 100
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import uuid

from confluent_kafka import Producer

from mirror_engine.flow import FlowMapping, InternalTopics, ensure_internal_topics
from mirror_engine.kafka import admin_client
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import plan_from_dict


def _rss_mib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS:"))


def _read_after(source: str, target: str, partitions: int, rounds: int) -> tuple[float, float, int, int]:
    run = uuid.uuid4().hex[:6]
    plan = plan_from_dict({"name": f"syncs{run}", "source": {"alias": f"s{run}", "bootstrap_servers": source},
                           "target": {"alias": "tgt", "bootstrap_servers": target},
                           "topics": {"include": ["orders-.*"]}})
    topics = InternalTopics.for_plan(plan)
    config = {"bootstrap.servers": target}
    ensure_internal_topics(admin_client(config), topics)
    producer = Producer({**config, "linger.ms": 20, "batch.size": 1_000_000, "compression.type": "lz4"})
    for round_ in range(rounds):
        for i in range(partitions):
            sync = OffsetSync(f"orders-{i // 10:05d}", i % 10, 100 * round_, 100 * round_)
            while True:
                try:
                    producer.produce(topics.offset_syncs, sync.record_value(), sync.record_key(), 0)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    wall, cpu = time.monotonic(), time.process_time()
    with FlowMapping(plan, config) as mapping:
        mapping.refresh(1800)
        seconds, cpu = time.monotonic() - wall, time.process_time() - cpu
        gc.collect()
        return seconds, cpu, len(mapping.offsets.partitions()), _rss_mib()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="the target cluster, where the flow's topics are")
    parser.add_argument("--source", default="127.0.0.1:9", help="the plan's source (never contacted)")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, action="append", help="syncs per partition (default 10 and 100)")
    args = parser.parse_args()
    # RSS: this process's resident memory with the mapping read and still open (the sizes run in increasing order,
    # so a size's figure includes what the allocator kept of the smaller ones).
    print("| syncs in the topic | fresh mapping read, s | CPU s | partitions found | RSS with the mapping open, MiB |")
    print("|---|---|---|---|---|")
    for rounds in args.rounds or [10, 100]:
        seconds, cpu, found, rss = _read_after(args.source, args.bootstrap, args.partitions, rounds)
        print(f"| {args.partitions * rounds:,} | {seconds:.1f} | {cpu:.1f} | {found:,} | {rss:,} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
