"""Spark backfill and validation rates beside the engine's copy rate, for the same data, in one run.

One data set (N records of 100 B with keys and a header, 8 partitions) is written twice into the
local source: one topic the engine copies, one whose history the Spark backfill copies (the engine
only records the snapshot). Then validation reads back what the engine copied, on both clusters.
Each Spark job runs once per master (local[1], local[2] by default), in fresh sessions started before
the timings (their start-up is printed on its own line); each backfill run copies the same history to
its own target topic (a plan of its own, with MM2's default policy and alias), and so does the engine:
each round copies the data again with the engine just before its Spark jobs, which are compared with
that copy (the load of a shared machine changes from minute to minute), and validation checks that
copy. The last row compares the last copy without Spark, as the DAG does for a small copy
(`validate.py --in-process`).

    .venv/bin/python bench/backfill_validation.py                 # 1,000,000 records
    .venv/bin/python bench/backfill_validation.py --records 20000 --masters 'local[2]'
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator

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


def _plan(source: KafkaCluster, target: KafkaCluster, topic: str, backfill: bool, run: int) -> dict:
    """Run `run`'s plan: MM2's default policy, so each run copies into its own target topic src<run>.<topic>."""
    return {"name": f"bench-{topic}-{run}", "source": {"alias": f"src{run}", "bootstrap_servers": source.bootstrap},
            "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap}, "topics": {"include": [topic]},
            "replication_policy": {"type": "default"}, **({"backfill": {"topics": [topic]}} if backfill else {})}


def _warm(batches: Any) -> Any:
    """A Python worker's first task: load what the jobs' tasks load."""
    import pyarrow as pa

    import spark_jobs.range_copy
    import spark_jobs.record_pairing  # noqa: F401

    yield pa.RecordBatch.from_pydict({"n": [sum(batch.num_rows for batch in batches)]})


def _session(master: str) -> tuple[float, float]:
    """A fresh Spark session on this master, then its Python workers: their start-up times.

    Both are paid once per Spark application, whatever the data: the session's JVM, and the first job with a
    Python function, which starts Spark's Python worker daemon and workers (they import pyspark from
    pyspark.zip, without bytecode, then the job's modules). A job's rate is measured after both."""
    from pyspark.sql import SparkSession

    from spark_jobs.session import build_session

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    started = time.perf_counter()
    spark = build_session("bench", master=master)
    session = time.perf_counter() - started
    started = time.perf_counter()
    cores = spark.sparkContext.defaultParallelism
    spark.range(cores, numPartitions=cores).mapInArrow(_warm, "n long").collect()
    return session, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--masters", default="local[1],local[2]", help="Spark masters, comma-separated")
    parser.add_argument("--in-process-max", type=int, default=1_000_000,
                        help="time validate.py --in-process too when there are at most this many records")
    args = parser.parse_args()
    masters = args.masters.split(",")
    logging.basicConfig(level=logging.WARNING)
    from spark_jobs import backfill, validate

    rows, starts = [], []
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            megabytes = _load(source, "copied", args.records)
            _load(source, "history", args.records)

            reports = str(Path(workdir) / "reports")
            for run, master in enumerate(masters, start=1):
                # The machine's load changes from minute to minute: each round times the engine again, just
                # before its jobs, and the jobs' ratios are to that copy.
                copied = _plan(source, target, "copied", backfill=False, run=run)
                started = time.perf_counter()
                summary = Replicator(plan_from_dict(copied), source.client_config(), target.client_config()).run(
                    until_caught_up=True)
                engine = time.perf_counter() - started
                rows.append((f"engine copy (round {run})", engine, engine))
                assert summary.ok and summary.records == args.records, summary
                copied_file = Path(workdir) / f"copied-{run}.yaml"
                copied_file.write_text(yaml.safe_dump(copied))

                history = _plan(source, target, "history", backfill=True, run=run)
                Replicator(plan_from_dict(history), source.client_config(), target.client_config()).run(
                    max_seconds=3)
                plan_file = Path(workdir) / f"history-{run}.yaml"
                plan_file.write_text(yaml.safe_dump(history))
                starts.append((master, _session(master)))
                started = time.perf_counter()
                assert backfill.main(["--plan", str(plan_file)]) == 0
                rows.append((f"backfill {master}", time.perf_counter() - started, engine))
                started = time.perf_counter()
                assert validate.main(["--plan", str(copied_file), "--report-dir", reports]) == 0
                rows.append((f"validation {master}", time.perf_counter() - started, engine))
            if args.records <= args.in_process_max:
                started = time.perf_counter()
                assert validate.main(["--plan", str(copied_file), "--report-dir", reports, "--in-process"]) == 0
                rows.append(("validation in-process", time.perf_counter() - started, engine))
        finally:
            source.stop()
            target.stop()
    print("\nSpark start-up, once per application (not in the figures below): "
          + ", ".join(f"{master} session {session:.1f} s + Python workers {workers:.1f} s"
                      for master, (session, workers) in starts))
    print(f"{args.records:,} records of 100 B (keys, values), 8 partitions; validation reads both sides")
    print(f"{'job':<24} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'vs engine':>10}")
    for job, seconds, engine_seconds in rows:
        print(f"{job:<24} {seconds:8.1f} {args.records / seconds:11,.0f} {megabytes / seconds:7.1f} "
              f"{engine_seconds / seconds:10.2f}")


if __name__ == "__main__":
    main()
