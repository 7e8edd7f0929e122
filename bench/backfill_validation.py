"""Spark backfill and validation rates beside the engine's copy rate, for the same data, in one run.

One data set (N records of 100 B with keys and a header, 8 partitions) is written twice into the
local source: one topic the engine copies, one whose history the Spark backfill copies (the engine
only records the snapshot). Then validation reads back what the engine copied, on both clusters.
The Spark session is started before the timings (its start-up is printed on its own line).

    .venv/bin/python bench/backfill_validation.py                 # 1,000,000 records
    .venv/bin/python bench/backfill_validation.py --records 20000
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.engine import Replicator
from mirror_engine.plan import plan_from_dict

PARTITIONS = 8


def _load(cluster: KafkaCluster, topic: str, count: int) -> float:
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    time.sleep(1)
    producer = Producer({**cluster.client_config(), "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 500_000})
    filler = b"x" * 80
    size = 0
    for i in range(count):
        key, value = b"key-%05d" % (i % 10_000), b"%010d" % i + filler
        size += len(key) + len(value)
        while True:
            try:
                producer.produce(topic, value, key, i % PARTITIONS, headers=[("seq", b"%d" % i)])
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(300)
    return size / 1e6


def _plan(source: KafkaCluster, target: KafkaCluster, topic: str, backfill: bool) -> dict:
    return {"name": f"bench-{topic}", "source": {"alias": "src", "bootstrap_servers": source.bootstrap},
            "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap}, "topics": {"include": [topic]},
            **({"backfill": {"topics": [topic]}} if backfill else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from spark_jobs import backfill, validate
    from spark_jobs.session import build_session

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            megabytes = _load(source, "copied", args.records)
            _load(source, "history", args.records)
            started = time.perf_counter()
            build_session("bench")
            session_seconds = time.perf_counter() - started

            copied = _plan(source, target, "copied", backfill=False)
            started = time.perf_counter()
            summary = Replicator(plan_from_dict(copied), source.client_config(), target.client_config()).run(
                until_caught_up=True)
            rows.append(("engine copy", time.perf_counter() - started))
            assert summary.ok and summary.records == args.records, summary

            history = _plan(source, target, "history", backfill=True)
            Replicator(plan_from_dict(history), source.client_config(), target.client_config()).run(max_seconds=3)
            plan_file = Path(workdir) / "history.yaml"
            plan_file.write_text(yaml.safe_dump(history))
            started = time.perf_counter()
            assert backfill.main(["--plan", str(plan_file)]) == 0
            rows.append(("spark backfill", time.perf_counter() - started))

            plan_file = Path(workdir) / "copied.yaml"
            plan_file.write_text(yaml.safe_dump(copied))
            started = time.perf_counter()
            assert validate.main(["--plan", str(plan_file), "--report-dir", str(Path(workdir) / "reports")]) == 0
            rows.append(("spark validation", time.perf_counter() - started))
        finally:
            source.stop()
            target.stop()
    print(f"\nSpark session start-up (local[2], not in the figures below): {session_seconds:.1f} s")
    print(f"{args.records:,} records of 100 B (keys, values), 8 partitions; validation reads both sides")
    print(f"{'job':<18} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'vs engine':>10}")
    engine_seconds = rows[0][1]
    for job, seconds in rows:
        print(f"{job:<18} {seconds:8.1f} {args.records / seconds:11,.0f} {megabytes / seconds:7.1f} "
              f"{engine_seconds / seconds:10.2f}")


if __name__ == "__main__":
    main()
