"""The `--workers` step of `scale.py`: two `mirror-engine worker` processes sharing one flow, one joining, one leaving.

On topics of its own (`w<partitions>.t<i>`, the shape's topics and partitions, `--records` records of 100 B per
partition), with a producer writing a few hundred records a second across the topics all along:
- worker A runs alone until it owns every partition and copied the backlog;
- worker B joins: the seconds from its launch, and from its joining the group (its "subscribed" line), until the
  assignment settles: both workers' status records show every partition owned by exactly one of them, both
  copying;
- A leaves (SIGTERM): the seconds until B's status shows it owns every partition;
- the producer stops, B copies to the end and stops; the target then holds each source partition's records once
  and in order (duplicates and missing records counted partition by partition).
It also counts the workers' log lines and their longest line over each rebalance: a line or a request per
partition would show there first.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from harness import cluster_section

from kafka_local.cluster import KafkaCluster
from mirror_engine.flow import InternalTopics, ensure_internal_topics
from mirror_engine.kafka import TopicPartitionKey, list_offsets, wait_until_served
from mirror_engine.observe import WorkerStatusFeed, assigned_partitions, is_live, partition_count
from mirror_engine.plan import plan_from_dict

log = logging.getLogger("scale.workers")


@dataclass
class WorkerFigures:
    """What the workers step measured at one shape; None where it did not settle."""

    partitions: int = 0
    join_from_launch_s: float | None = None
    join_from_group_s: float | None = None  # from B's joining the group (its start-up done) to the settled assignment
    leave_s: float | None = None
    join_log_lines: int = 0
    leave_log_lines: int = 0
    longest_log_line: int = 0
    records: int = 0
    duplicates: int | None = None
    missing: int | None = None
    load: list[float] = field(default_factory=list)  # load average (1 min) at the start and end of the step
    callbacks: list[str] = field(default_factory=list)  # the workers' rebalance lines, with their durations


class LiveProducer:
    """A few hundred records a second across the topics, each value unique (`live-<n>`), until stopped."""

    def __init__(self, cluster: KafkaCluster, names: list[str], partitions: int, per_second: int = 300) -> None:
        self.producer = Producer({**cluster.client_config(), "linger.ms": 20, "enable.idempotence": True})
        self.names, self.partitions, self.per_second = names, partitions, per_second
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(11)
        while not self._stop.is_set():
            for _ in range(self.per_second // 10):
                self.producer.produce(rng.choice(self.names), b"live-%d" % self.sent, b"live",
                                      rng.randrange(self.partitions))
                self.sent += 1
            self.producer.poll(0)
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        assert self.producer.flush(60) == 0, "the source did not take every live record"


def _start_worker(plan_file: Path, worker: str, log_file: Path, env: dict[str, str]) -> subprocess.Popen:
    with log_file.open("w") as out:
        return subprocess.Popen([*_engine(), "worker", "--plan", str(plan_file), "--worker-id", worker,
                                 "--status-port", "0"], stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=plan_file.parent)


def _engine() -> list[str]:
    import sys
    return [sys.executable, "-m", "mirror_engine.cli"]


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines()


def _wait(condition, what: str, timeout_s: float, workers: dict[str, subprocess.Popen]) -> float | None:
    """Seconds until `condition()` holds (polled), None after `timeout_s` or when a worker died."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        dead = [w for w, p in workers.items() if p.poll() not in (None, 0)]
        if dead:
            log.warning("worker(s) %s exited while waiting for %s", dead, what)
            return None
        time.sleep(0.2)
    log.warning("timed out after %.0f s waiting for %s", timeout_s, what)
    return None


def read_all(cluster: KafkaCluster, names: list[str], partitions: int) -> dict[TopicPartitionKey, list[bytes]]:
    """Every record's (key + value) of every partition of `names`, in order, with one consumer."""
    tps = [TopicPartition(n, p) for n in names for p in range(partitions)]
    ends = list_offsets(AdminClient(cluster.client_config()), tps, OffsetSpec.latest(), timeout_s=60)
    records: dict[TopicPartitionKey, list[bytes]] = {key: [] for key in ends}
    todo = {key for key, end in ends.items() if end > 0}
    consumer = Consumer({**cluster.client_config(), "group.id": "scale-workers-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in todo])
    deadline = time.monotonic() + 600
    try:
        while todo and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1):
                if message.error():
                    continue
                key = (message.topic(), message.partition())
                records[key].append((message.key() or b"") + b"=" + (message.value() or b""))
                if message.offset() + 1 >= ends[key]:
                    todo.discard(key)
    finally:
        consumer.close()
    if todo:
        raise TimeoutError(f"{len(todo)} partitions not read to their end")
    return records


def compare(source: dict[TopicPartitionKey, list[bytes]], target: dict[TopicPartitionKey, list[bytes]],
            alias: str) -> tuple[int, int]:
    """(duplicates, missing) over every partition: records on the target beyond the source's, and source
    records not on the target; a partition whose records differ otherwise (order) counts all of them missing."""
    duplicates = missing = 0
    for (topic, partition), records in source.items():
        copied = target.get((f"{alias}.{topic}", partition), [])
        if copied == records:
            continue
        extra = len(copied) - len(set(copied))
        duplicates += extra
        unique = list(dict.fromkeys(copied))
        missing += len(records) - len(unique) if unique == records[:len(unique)] else len(records)
    return duplicates, missing


def measure_workers(shape, source: KafkaCluster, target: KafkaCluster, workdir: Path, per_partition: int,
                    env: dict[str, str], create_topics, produce_records) -> WorkerFigures:
    """The workers step at `shape` (see the module's docstring). `create_topics` and `produce_records`: scale.py's."""
    figures = WorkerFigures(partitions=shape.total_partitions, load=[os.getloadavg()[0]])
    prefix = f"w{shape.total_partitions}"
    names = [f"{prefix}.t{i:05d}" for i in range(shape.topics)]
    alias = "wk"
    log.info("workers at %s: creating topics", shape)
    create_topics(source, names, shape.partitions)
    produce_records(source, names, shape.partitions, per_partition)
    data = {"name": f"{prefix}-workers", "source": cluster_section(alias, source),
            "target": cluster_section("tgt", target), "replication_policy": {"type": "default"},
            "topics": {"include": [rf"{prefix}\..*"]}, "engine": {"status_interval_s": 1}}
    plan_file = workdir / f"{prefix}-workers.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    # The flow's internal topics first, served before `prepare` asks for the shape's partitions: a broker serves
    # topics created right after a burst only once it made the burst's logs (bench/README.md, scale section).
    admin = AdminClient(target.client_config())
    ensure_internal_topics(admin, InternalTopics.for_plan(plan))
    wait_until_served(admin, list(InternalTopics.for_plan(plan).specs()), timeout_s=120)
    subprocess.run([*_engine(), "prepare", "--plan", str(plan_file)], check=True, capture_output=True, env=env,
                   cwd=workdir, timeout=600)
    everything = {(n, p) for n in names for p in range(shape.partitions)}
    # Every target partition led before A starts: this step measures rebalances, not a start-up beside a broker
    # still creating thousands of partitions (a worker started then may exit on NOT_LEADER_FOR_PARTITION).
    list_offsets(admin, [TopicPartition(f"{alias}.{t}", p) for t, p in sorted(everything)], OffsetSpec.latest(),
                 timeout_s=300)
    feed = WorkerStatusFeed(plan, target.client_config(), window_s=60)
    latest: dict[str, dict] = {}

    def refresh() -> dict[str, dict]:
        latest.clear()
        latest.update({s["worker"]: s for s in feed.poll(2) if is_live(s)})
        return latest

    logs = {w: workdir / f"{prefix}-worker-{w}.log" for w in ("A", "B")}
    workers: dict[str, subprocess.Popen] = {}
    producer = LiveProducer(source, names, shape.partitions)
    try:
        workers["A"] = _start_worker(plan_file, "A", logs["A"], env)
        producer.start()

        backlog = shape.total_partitions * per_partition

        def a_alone_caught_up() -> bool:  # the live records keep it a little behind, the more the busier the machine
            a = refresh().get("A")
            return a is not None and partition_count(a) == len(everything) and a["records_copied"] >= backlog \
                and a["lag"] < max(2_000, backlog // 20)
        if _wait(a_alone_caught_up, "A to own every partition and copy the backlog", 600, workers) is None:
            return figures

        def settled_between_both() -> bool:
            statuses = refresh()
            if set(statuses) != {"A", "B"}:
                return False
            owned = {w: assigned_partitions(s) for w, s in statuses.items()}
            if any(o is None or not o for o in owned.values()):
                return False
            return (not owned["A"] & owned["B"] and owned["A"] | owned["B"] == everything
                    and all(s["records_copied"] > 0 for s in statuses.values()))
        lines_before = {w: len(_lines(p)) for w, p in logs.items() if p.exists()}
        launched_epoch = time.time()
        workers["B"] = _start_worker(plan_file, "B", logs["B"], env)
        figures.join_from_launch_s = _wait(settled_between_both, "the assignment to settle after B joined", 300,
                                           workers)
        settled_epoch = time.time()
        joined = [line for line in _lines(logs["B"]) if " subscribed to " in line]
        first = _stamp(joined[0]) if joined else None
        if figures.join_from_launch_s is not None and first is not None:
            # B's log lines carry their time (asctime): it joins the group as it subscribes, its start-up done.
            figures.join_from_group_s = settled_epoch - first
        join_lines = {w: _lines(p)[lines_before.get(w, 0):] for w, p in logs.items()}
        figures.join_log_lines = sum(len(lines) for lines in join_lines.values())

        lines_before = {w: len(_lines(p)) for w, p in logs.items()}
        workers["A"].send_signal(signal.SIGTERM)

        def b_owns_everything() -> bool:
            b = refresh().get("B")
            return (b is not None and "A" not in latest and assigned_partitions(b) == everything
                    and b["updated_ms"] > left_ms)
        left_ms = int(time.time() * 1000)
        figures.leave_s = _wait(b_owns_everything, "B to take every partition after A left", 300,
                                {"B": workers["B"]})
        leave_lines = {w: _lines(p)[lines_before[w]:] for w, p in logs.items()}
        figures.leave_log_lines = sum(len(lines) for lines in leave_lines.values())
        figures.longest_log_line = max((len(line) for lines in (*join_lines.values(), *leave_lines.values())
                                        for line in lines), default=0)
        workers["A"].wait(120)
        # The workers' rebalance lines (time, what, how long): B's launch and joining first.
        figures.callbacks = [f"B launched at {time.strftime('%H:%M:%S', time.localtime(launched_epoch))}, "
                             f"joined at {joined[0][11:23] if joined else '-'}; A stopped at "
                             f"{time.strftime('%H:%M:%S', time.localtime(left_ms / 1000))}"]
        figures.callbacks += [line[11:23] + " " + line.split(" s: ")[0].split("engine ")[-1] + " s"
                              for p in logs.values() for line in _lines(p)
                              if "to the group in" in line or "from the group in" in line]
    finally:
        for worker, process in workers.items():
            if process.poll() not in (None, 0, -signal.SIGTERM):
                log.warning("worker %s exited with %s:\n%s", worker, process.returncode,
                            "\n".join(_lines(logs[worker])[-40:]))
        producer.stop()
        figures.records = producer.sent + shape.total_partitions * per_partition
        feed.close()

    ends = list_offsets(AdminClient(source.client_config()), [TopicPartition(*key) for key in sorted(everything)],
                        OffsetSpec.latest(), timeout_s=60)

    def copied_to_the_end() -> bool:
        b = refresh().get("B")
        return b is not None and b["lag"] == 0 and b["updated_ms"] > stopped_ms
    stopped_ms = int(time.time() * 1000) + 2000
    feed = WorkerStatusFeed(plan, target.client_config(), window_s=60)
    try:
        _wait(copied_to_the_end, "B to copy to the end", 300, {"B": workers["B"]})
    finally:
        feed.close()
        for process in workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in workers.values():
            try:
                process.wait(120)
            except subprocess.TimeoutExpired:
                process.kill()
    log.info("workers at %s: comparing %d records partition by partition", shape, sum(ends.values()))
    figures.duplicates, figures.missing = compare(read_all(source, names, shape.partitions),
                                                  read_all(target, [f"{alias}.{n}" for n in names], shape.partitions),
                                                  alias)
    figures.load.append(os.getloadavg()[0])
    return figures


def _stamp(line: str) -> float | None:
    """The epoch seconds of a log line starting with `YYYY-mm-dd HH:MM:SS,mmm` (logging's asctime), local time."""
    from datetime import datetime
    try:
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return None


GOAL = "<= 30 s at 10,000 p"


def report_workers(results: list[WorkerFigures]) -> None:
    from harness import print_table

    def cell(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"
    header = ["figure", *(f"{r.partitions:,} p" for r in results), "goal"]
    rows = [
        ["B joins: settled, s from its launch", *(cell(r.join_from_launch_s) for r in results), GOAL],
        ["B joins: settled, s from its joining the group", *(cell(r.join_from_group_s) for r in results), GOAL],
        ["A leaves (SIGTERM): B owns all, s", *(cell(r.leave_s) for r in results), GOAL],
        ["log lines over the join (both workers)", *(str(r.join_log_lines) for r in results), ""],
        ["log lines over the leave", *(str(r.leave_log_lines) for r in results), ""],
        ["longest log line, characters", *(str(r.longest_log_line) for r in results), ""],
        ["records (backlog + live)", *(f"{r.records:,}" for r in results), ""],
        ["duplicates on the target", *(cell(r.duplicates, 0) for r in results), "0"],
        ["missing on the target", *(cell(r.missing, 0) for r in results), "0"],
        ["load average (1 min), start / end", *(" / ".join(f"{x:.1f}" for x in r.load) for r in results), ""],
    ]
    print_table("Two workers sharing a flow: one joining, one leaving", header, rows,
                [f"{r.partitions:,} p: {line}" for r in results for line in r.callbacks])
