"""The engine's copy rate beside the machine's raw produce limit, measured side by side in one run.

Data sets: N records of 100 B and M records of 1 KiB (keys and a header each), 8 partitions, in
the local source cluster. For each, two figures on the same target cluster with the same client
settings (acks=all, idempotence, lz4, linger 20 ms, 1 MiB batches):
- raw: a plain producer writing the same records from memory into a fresh target topic;
- engine: `Replicator` copying the source topic into a fresh target topic, from its start until
  every partition is caught up (start-up included).
The ratio engine/raw is what to compare across runs; absolute rates vary with the machine's load.

A second table copies the 100 B data set with `mirror-engine worker` processes sharing the flow
through the group protocol: one worker vs two, at-least-once vs exactly-once (records, offset-syncs
and progress in one transaction per progress interval), each into fresh target topics, timed from
the workers' start until the stored progress shows lag 0 (group join and rebalance included).

    .venv/bin/python bench/engine_vs_raw.py            # full size: 1,000,000 x 100 B and 200,000 x 1 KiB
    .venv/bin/python bench/engine_vs_raw.py --scale 0.01
    .venv/bin/python bench/engine_vs_raw.py --scale 0.3 --baseline /tmp/before   # vs an earlier checkout
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.observe import replication_lag
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator

PARTITIONS = 8
PRODUCER_SETTINGS = {
    "enable.idempotence": True, "acks": "all", "compression.type": "lz4", "linger.ms": 20,
    "batch.size": 1_048_576, "queue.buffering.max.messages": 500_000,
}


def make_records(count: int, value_size: int) -> list[tuple[bytes, bytes, list]]:
    filler = (b"abcdefghij" * (value_size // 10 + 1))[: value_size - 8]
    return [(f"key-{i % 10_000:05d}".encode(), b"%08d" % (i % 10**8) + filler, [("seq", b"%d" % i)])
            for i in range(count)]


def create(cluster: KafkaCluster, name: str) -> None:
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result()
    time.sleep(1)  # leaders settle


def produce_topics(cluster: KafkaCluster, records: dict[str, list[tuple[bytes, bytes, list]]]) -> float:
    """Produce every topic's records (partition = index mod 8) with one producer; seconds to the last ack."""
    producer = Producer({**cluster.client_config(), **PRODUCER_SETTINGS})
    started = time.perf_counter()
    for topic, rows in records.items():
        for i, (key, value, headers) in enumerate(rows):
            while True:
                try:
                    producer.produce(topic, value, key, i % PARTITIONS, headers=headers)
                    break
                except BufferError:
                    producer.poll(0.05)
    if producer.flush(600):
        raise RuntimeError(f"{cluster.name}: records were not acknowledged within 600 s")
    return time.perf_counter() - started


def produce_all(cluster: KafkaCluster, topic: str, records: list) -> float:
    """Produce every record into one topic; seconds from the first produce to the last acknowledgement."""
    return produce_topics(cluster, {topic: records})


def engine_copy(source: KafkaCluster, target: KafkaCluster, topic: str) -> tuple[float, int]:
    plan = plan_from_dict({
        "name": f"bench-{topic}",
        "source": {"alias": "src", "bootstrap_servers": source.bootstrap},
        "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
        "topics": {"include": [topic]},
        "sync": {"acls": False},
        "engine": {"linger_ms": 20, "compression": "lz4", "producer_batch_bytes": 1_048_576},
    })
    replicator = Replicator(plan, source.client_config(), target.client_config())
    started = time.perf_counter()
    summary = replicator.run(max_seconds=1800, until_caught_up=True)
    return time.perf_counter() - started, summary.records


def workers_copy(source: KafkaCluster, target: KafkaCluster, topic: str, workers: int, exactly_once: bool,
                 workdir: Path) -> float:
    """Seconds for `workers` worker processes to copy `topic` into fresh target topics, until lag 0."""
    alias = f"w{workers}{'eos' if exactly_once else 'alo'}"  # a fresh alias: fresh target and internal topics
    data = {
        "name": f"bench-{alias}",
        "source": {"alias": alias, "bootstrap_servers": source.bootstrap},
        "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
        "topics": {"include": [topic]},
        "replication_policy": {"type": "default"},  # copies into <alias>.<topic>
        "sync": {"acls": False},
        "engine": {"linger_ms": 20, "compression": "lz4", "producer_batch_bytes": 1_048_576,
                   "exactly_once": exactly_once, "status_port": -1, "session_timeout_s": 10},
    }
    plan_file = workdir / f"{alias}.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    started = time.perf_counter()
    processes = [subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "worker", "--plan", str(plan_file),
                                   "--worker-id", f"{alias}-{i}"],
                                  stdout=subprocess.DEVNULL, stderr=(workdir / f"{alias}-{i}.log").open("w"))
                 for i in range(workers)]
    try:
        while True:
            lag = replication_lag(plan, source.client_config(), target.client_config())
            if lag and sum(lag.values()) == 0:
                return time.perf_counter() - started
            for i, process in enumerate(processes):
                if process.poll() is not None:
                    log_tail = (workdir / f"{alias}-{i}.log").read_text()[-3000:]
                    raise RuntimeError(f"worker {alias}-{i} exited with {process.returncode}:\n{log_tail}")
            time.sleep(0.25)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(120)


def checkout_copy(source: KafkaCluster, target: KafkaCluster, topic: str, checkout: Path, alias: str,
                  workdir: Path) -> float:
    """Seconds for `mirror-engine run --until-caught-up` of another checkout (its code on PYTHONPATH) to copy
    `topic` into fresh target topics (`<alias>.<topic>`), start-up included."""
    data = {
        "name": f"bench-{alias}",
        "source": {"alias": alias, "bootstrap_servers": source.bootstrap},
        "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
        "topics": {"include": [topic]},
        "replication_policy": {"type": "default"},
        "sync": {"acls": False},
        "engine": {"linger_ms": 20, "compression": "lz4", "producer_batch_bytes": 1_048_576, "status_port": -1},
    }
    plan_file = workdir / f"{alias}.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file), "--until-caught-up",
                    "--max-seconds", "1800"], check=True, stdout=subprocess.DEVNULL,
                   stderr=(workdir / f"{alias}.log").open("w"), env={**os.environ, "PYTHONPATH": str(checkout)})
    return time.perf_counter() - started


def compare_checkouts(source: KafkaCluster, target: KafkaCluster, topic: str, baseline: Path, workdir: Path,
                      rounds: int = 2) -> tuple[float, float]:
    """This checkout's and the baseline's copy of `topic`, alternated (A B A B ...): median seconds of each."""
    here = Path(__file__).resolve().parents[1]
    times: dict[str, list[float]] = {"here": [], "baseline": []}
    for i in range(rounds):
        for label, checkout in (("here", here), ("baseline", baseline)):
            times[label].append(checkout_copy(source, target, topic, checkout, f"{label}{i}", workdir))
    return statistics.median(times["here"]), statistics.median(times["baseline"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full data set")
    parser.add_argument("--baseline", type=Path, help="another checkout of the project (e.g. a `git worktree` of an "
                        "earlier commit): its engine copies the same data sets in the same run, alternated with "
                        "this one's, both as `mirror-engine run` processes; skips the workers table")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sets = [("small", int(1_000_000 * args.scale), 100), ("large", int(200_000 * args.scale), 1024)]
    rows = []
    worker_rows = []
    baseline_rows: list[tuple[str, float, float, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-") as workdir:
        source, target = start_pair(Path(workdir))
        try:
            for name, count, size in sets:
                records = make_records(count, size)
                megabytes = sum(len(k) + len(v) for k, v, _ in records) / 1e6
                create(source, f"{name}-src")
                produce_all(source, f"{name}-src", records)
                create(target, f"{name}-raw")
                raw_seconds = produce_all(target, f"{name}-raw", records)
                if args.baseline:
                    here, baseline = compare_checkouts(source, target, f"{name}-src", args.baseline, Path(workdir))
                    baseline_rows.append((f"{count:,} x {size} B", raw_seconds, here, baseline, count))
                    continue
                engine_seconds, copied = engine_copy(source, target, f"{name}-src")
                assert copied == count, f"engine copied {copied} of {count}"
                rows.append((f"{count:,} x {size} B", "raw produce", raw_seconds, count, megabytes))
                rows.append((f"{count:,} x {size} B", "engine copy", engine_seconds, count, megabytes))
            if args.baseline:
                return print_baseline(baseline_rows, args.baseline)
            name, count, _size = sets[0]
            for exactly_once in (False, True):
                for workers in (1, 2):
                    seconds = workers_copy(source, target, f"{name}-src", workers, exactly_once, Path(workdir))
                    worker_rows.append((workers, exactly_once, seconds, count))
        finally:
            source.stop()
            target.stop()
    print(f"\n{'data set':<22} {'run':<12} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'vs raw':>7}")
    for i, (data, run, seconds, count, megabytes) in enumerate(rows):
        ratio = rows[i - 1][2] / seconds if run == "engine copy" else 1.0
        print(f"{data:<22} {run:<12} {seconds:8.1f} {count / seconds:11,.0f} {megabytes / seconds:7.1f} {ratio:7.2f}")

    base = worker_rows[0][2]
    print(f"\n{'workers':<30} {'seconds':>8} {'records/s':>11} {'vs 1 worker at-least-once':>26}")
    for workers, exactly_once, seconds, count in worker_rows:
        label = f"{workers} worker{'s' if workers > 1 else ''}, {'exactly-once' if exactly_once else 'at-least-once'}"
        print(f"{label:<30} {seconds:8.1f} {count / seconds:11,.0f} {base / seconds:26.2f}")


def print_baseline(rows: list[tuple[str, float, float, float, int]], baseline: Path) -> None:
    print(f"\nmedian of 2 alternated `mirror-engine run --until-caught-up` per checkout (start-up included); "
          f"baseline: {baseline}")
    print(f"{'data set':<22} {'raw rec/s':>11} {'this rec/s':>11} {'base rec/s':>11} {'this/raw':>9} {'base/raw':>9} "
          f"{'this/base':>10}")
    for data, raw, here, base, count in rows:
        print(f"{data:<22} {count / raw:11,.0f} {count / here:11,.0f} {count / base:11,.0f} {raw / here:9.2f} "
              f"{raw / base:9.2f} {base / here:10.2f}")


if __name__ == "__main__":
    main()
