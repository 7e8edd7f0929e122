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

With `--code NAME=DIR,...` each round is run once per code tree (a folder holding a `spark_jobs`
package, e.g. an export of an earlier commit), alternating which goes first, each with the engine timed
just before it: before and after side by side on the same data, in the same minutes. The Spark jobs of
each round run in a child process of their own (its Spark session, its code tree first on the path).

    .venv/bin/python bench/backfill_validation.py                 # 1,000,000 records
    .venv/bin/python bench/backfill_validation.py --records 20000 --masters 'local[2]'
    git archive HEAD~1 spark_jobs | tar -x -C /tmp/before
    .venv/bin/python bench/backfill_validation.py --records 3000000 --code before=/tmp/before,after=.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
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
ROOT = Path(__file__).resolve().parent.parent


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
    import importlib
    import importlib.util

    import pyarrow as pa

    # An earlier code tree (--code) may lack some of them.
    for name in ("spark_jobs.range_copy", "spark_jobs.record_pairing", "spark_jobs.range_validation"):
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)

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


def _tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants (the Spark JVM, its Python daemon and workers):
    on a shared machine a job's CPU moves less with the load than its wall time."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _jobs(master: str, history_plan: str, copied_plan: str, reports: str) -> None:
    """The child's part: a session, then the backfill and the validation, timed (wall and CPU seconds of the
    child's processes); one JSON line on stdout."""
    import spark_jobs
    from spark_jobs import backfill, validate

    logging.basicConfig(level=logging.WARNING)
    session, workers = _session(master)
    started, cpu = time.perf_counter(), _tree_cpu()
    assert backfill.main(["--plan", history_plan]) == 0
    backfilled, backfill_cpu = time.perf_counter() - started, _tree_cpu() - cpu
    started, cpu = time.perf_counter(), _tree_cpu()
    assert validate.main(["--plan", copied_plan, "--report-dir", reports]) == 0
    validated, validation_cpu = time.perf_counter() - started, _tree_cpu() - cpu
    print(json.dumps({"session": session, "workers": workers, "backfill": backfilled, "validation": validated,
                      "backfill_cpu": backfill_cpu, "validation_cpu": validation_cpu,
                      "code": str(Path(spark_jobs.__file__).parent.parent)}))


def _run_jobs(code_dir: Path, master: str, history_plan: Path, copied_plan: Path, reports: str) -> dict:
    """The round's Spark jobs in a child process with `code_dir` first on the path (also the Python workers':
    Spark passes PYTHONPATH on, and the child runs in `code_dir`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code_dir), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--jobs", master, str(history_plan),
                             str(copied_plan), reports], env=env, cwd=code_dir, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"the Spark jobs of {code_dir} on {master} failed: {result.stderr[-3000:]}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    if Path(found["code"]).resolve() != code_dir.resolve():
        raise RuntimeError(f"the jobs ran the code of {found['code']}, not of {code_dir}")
    return found


def _own_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _codes(value: str | None) -> list[tuple[str, Path]]:
    if not value:
        return [("", ROOT)]
    codes = []
    for item in value.split(","):
        name, _, folder = item.partition("=")
        if not (Path(folder) / "spark_jobs").is_dir():
            raise SystemExit(f"--code {item}: {folder} holds no spark_jobs package (NAME=DIR, DIR holding spark_jobs)")
        codes.append((name, Path(folder).resolve()))
    return codes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--masters", default="local[1],local[2]", help="Spark masters, comma-separated")
    parser.add_argument("--code", help="NAME=DIR,...: run each round's jobs with each code tree (default: this one)")
    parser.add_argument("--in-process-max", type=int, default=1_000_000,
                        help="time validate.py --in-process too when there are at most this many records")
    parser.add_argument("--jobs", nargs=4, metavar=("MASTER", "HISTORY_PLAN", "COPIED_PLAN", "REPORTS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jobs:
        _jobs(*args.jobs)
        return
    masters, codes = args.masters.split(","), _codes(args.code)
    logging.basicConfig(level=logging.WARNING)
    from spark_jobs import validate

    rows, starts, loads = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            megabytes = _load(source, "copied", args.records)
            _load(source, "history", args.records)

            reports = str(Path(workdir) / "reports")
            rounds = [(master, code) for i, master in enumerate(masters)
                      for code in (codes if i % 2 == 0 else codes[::-1])]
            for run, (master, (name, code_dir)) in enumerate(rounds, start=1):
                label = f"{master} {name}".strip()
                loads.append(os.getloadavg()[0])
                # The machine's load changes from minute to minute: each round times the engine again, just
                # before its jobs, and the jobs' ratios are to that copy.
                copied = _plan(source, target, "copied", backfill=False, run=run)
                started, cpu = time.perf_counter(), _own_cpu()
                summary = Replicator(plan_from_dict(copied), source.client_config(), target.client_config()).run(
                    until_caught_up=True)
                engine = time.perf_counter() - started
                rows.append((f"engine copy (round {run})", engine, engine, _own_cpu() - cpu))
                assert summary.ok and summary.records == args.records, summary
                copied_file = Path(workdir) / f"copied-{run}.yaml"
                copied_file.write_text(yaml.safe_dump(copied))

                history = _plan(source, target, "history", backfill=True, run=run)
                Replicator(plan_from_dict(history), source.client_config(), target.client_config()).run(
                    max_seconds=3)
                plan_file = Path(workdir) / f"history-{run}.yaml"
                plan_file.write_text(yaml.safe_dump(history))
                found = _run_jobs(code_dir, master, plan_file, copied_file, reports)
                starts.append((label, (found["session"], found["workers"])))
                rows.append((f"backfill {label}", found["backfill"], engine, found.get("backfill_cpu")))
                rows.append((f"validation {label}", found["validation"], engine, found.get("validation_cpu")))
                loads.append(os.getloadavg()[0])
            if args.records <= args.in_process_max:
                started, cpu = time.perf_counter(), _own_cpu()
                assert validate.main(["--plan", str(copied_file), "--report-dir", reports, "--in-process"]) == 0
                rows.append(("validation in-process", time.perf_counter() - started, engine, _own_cpu() - cpu))
        finally:
            source.stop()
            target.stop()
    print("\nSpark start-up, once per application (not in the figures below): "
          + ", ".join(f"{label} session {session:.1f} s + Python workers {workers:.1f} s"
                      for label, (session, workers) in starts))
    print(f"load average (1 min) at each round's start and end: {', '.join(f'{load:.1f}' for load in loads)}")
    print(f"{args.records:,} records of 100 B (keys, values), 8 partitions; validation reads both sides")
    print("CPU s: the engine's process, or the Spark job's processes (its JVM and Python workers); brokers not counted")
    print(f"{'job':<32} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'vs engine':>10} {'CPU s':>7}")
    for job, seconds, engine_seconds, cpu_seconds in rows:
        cpu_text = f"{cpu_seconds:7.1f}" if cpu_seconds is not None else f"{'':>7}"
        print(f"{job:<32} {seconds:8.1f} {args.records / seconds:11,.0f} {megabytes / seconds:7.1f} "
              f"{engine_seconds / seconds:10.2f} {cpu_text}")


if __name__ == "__main__":
    main()
