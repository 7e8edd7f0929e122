"""How a migration's costs grow with the cluster: start-up, copy, status, logs, checkpoints, switch, DAG parse.

Each shape (`--shape TOPICSxPARTITIONSxGROUPS`, several in one run, smallest first) is built on one pair of local
clusters: topics of plain records, consumer groups stopped part-way on 1 to 3 topics each (committed offsets, no
members), and a plan copying them with `engine.run_checkpoints: true`. Then, from outside, as a user runs them:
- `plan`, `prepare --dry-run`, `prepare`: each command's wall time;
- `run`: launched as a child process; the time to the first record on the target (when a target broker appended
  it, read off its disk), to the whole backlog copied,
  and the copy rate beside the raw produce rate of the same records into the same number of partitions (measured
  in the same run, into a topic set of its own); the engine's peak RSS;
- status: the status topic's largest record and the bytes written to it per status interval, in steady state;
- logs: the engine's log lines per minute in steady state (`--steady` seconds after the copy caught up), and its
  CPU over that time;
- a checkpoint round: every group translated (a read-only round beside the engine's own, `run_once(write=False)`);
- `switch-group` of one group: wall time of the command, proof included;
- DAG parse: the migration DAG file parsed with the shape's plan as its only plan.
Each figure is printed per shape, with the goal at 10,000 partitions, 1,000 topics and 1,000 groups.

MirrorMaker 2 (dedicated mode, from the jar set the brokers use) then copies the same source topics into target
topics of the same names (identity policy), launched as a child process: the time to its first record and to the
backlog copied since launch, its CPU seconds until then and its peak RSS, printed beside the engine's (`--no-mm2`
leaves it out).

`--workers` (or `--workers-only`) adds, at each shape, two `mirror-engine worker` processes sharing a flow, one
joining and one leaving, with duplicates counted afterwards (bench/scale_workers.py). The cockpit's pages are
measured by bench/cockpit_overview.py.

`--keep DIR` works in DIR and keeps it (plans, every command's log). `--code LABEL=DIR` (repeatable) measures
several versions of the engine on the same shapes in one run, in turn: each copies into target topics of its own
(the plan's source alias is the label, under the default policy), so their figures are comparable as ratios on a
shared, busy machine. `--rounds N` measures each version N times, alternated (columns LABEL1, LABEL2, ...): after
each run its topics are deleted from the target (its copies and its flow's internal topics), and the next run waits
for the machine to settle (the load average under 0.75 a core and the brokers under a tenth of a core each on
average, at most `--settle` seconds), so every run meets a target of the same size; one run of a version on this
machine can take twice as long as the next. `--quiet-launch` launches each `run` once the machine settles after
`prepare` (the brokers here create the shape's partitions on the engine's own two cores), and prints the load
average and the brokers' CPU at the launch. The build commits a group on the target, so that the target's offsets
topic exists before the first measured run. `--warm-up` runs the engine once on each shape before measuring it, not
counted: on freshly built brokers the first run here started 2-3 s later and copied at half the rate of the next
ones (every request took longer; likely the brokers' JVMs running those paths for the first time). `--trace` runs
`run` through `startup_trace.py` and prints each start-up step. Each version's `mirror_engine` is compiled to
bytecode first, as `make setup` compiles the checkout (on this machine Python writes no bytecode itself: every
command would otherwise compile the project's modules at each start).

The brokers need about one file descriptor per partition and segment: the script raises its own open-file limit
to the hard limit (the brokers inherit it) and says how many brokers per cluster (`--brokers N`) the shapes need
under it. The limit is per process, so N brokers hold N times the partitions one can.

    .venv/bin/python bench/scale.py --shape 250x8x150 --shape 1000x10x1000 --brokers 4 --broker-heap 1g
    .venv/bin/python bench/scale.py --shape 20x4x10 --steady 10             # a quick look
    .venv/bin/python bench/scale.py --shape 250x8x150 --code before=DIR --code after   # two versions
    .venv/bin/python bench/scale.py --shape 1000x10x1000 --no-mm2 --brokers 3 --broker-heap 1g --steady 10 \
        --code before=DIR --code after --rounds 2                  # each twice, alternated
    .venv/bin/python bench/scale.py --shape 20x4x1 --shape 250x8x1 --workers-only    # a join and a leave
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from harness import cluster_section, print_table, stop_clusters
from scale_figures import Code, Figures, Shape
from scale_mm2 import Mm2Figures, cpu_seconds, librdkafka_cpu_seconds, measure_mm2, report_mm2

from kafka_local.cluster import KafkaCluster, start_pair
from kafka_local.mm2 import memory_bytes
from mirror_engine.flow import InternalTopics
from mirror_engine.kafka import list_offsets, wait_until_served
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication.testing import MOST_PRODUCERS, TOPICS_PER_PRODUCER

ROOT = Path(__file__).resolve().parent.parent
ENGINE = [sys.executable, "-m", "mirror_engine.cli"]
VALUE = b"v" * 100
CREATE_BATCH = 500  # topics per CreateTopics request

log = logging.getLogger("scale")


def raise_file_limit(shape: Shape) -> int:
    """Raise this process's open-file limit to the hard one (the brokers inherit it) and return it."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open("/proc/sys/vm/max_map_count") as file:
        maps = int(file.read())
    if maps < 4 * shape.total_partitions:
        log.warning("vm.max_map_count %d: set it to at least %d (sysctl -w vm.max_map_count=...) for this shape",
                    maps, 4 * shape.total_partitions)
    return hard


# A broker's open files per partition of one segment: its log (the indexes are memory-mapped, their files closed;
# measured with 144 partitions: 300 descriptors, 146 of them `.log`). A partition with more segments holds more.
FILES_PER_PARTITION = 1
FILES_SPARE = 5_000  # sockets, jars, internal topics, segments rolled


def brokers_needed(shapes: list[Shape], topic_sets: int, file_limit: int) -> int:
    """Brokers per cluster for the target's partitions to fit the per-process open-file limit: every shape's topics
    stay on the clusters, `topic_sets` times on the target (one per engine version, the raw produce's, MM2's)."""
    files = FILES_PER_PARTITION * topic_sets * sum(shape.total_partitions for shape in shapes)
    return max(1, math.ceil(files / max(1, file_limit - FILES_SPARE)))


def check_brokers(shapes: list[Shape], topic_sets: int, brokers: int, file_limit: int) -> None:
    needed = brokers_needed(shapes, topic_sets, file_limit)
    partitions = topic_sets * sum(shape.total_partitions for shape in shapes)
    log.info("the target will hold %d partitions: %d broker(s) per cluster needed under the open-file limit of "
             "%d per process; running %d", partitions, needed, file_limit, brokers)
    if brokers < needed:
        log.warning("%d broker(s) per cluster are too few for %d partitions on the target (about %d open files "
                    "each, %d per process): run with --brokers %d, or raise the hard limit (ulimit -Hn)",
                    brokers, partitions, FILES_PER_PARTITION, file_limit, needed)


def create_after_failed_prepare(target: KafkaCluster, names: list[str], partitions: int) -> None:
    """`prepare` failed (its log is above): create the target topics it should have, in batches, so that `run` and
    the steps after it are still measured; the table shows `prepare` as failed."""
    metadata = AdminClient(target.client_config()).list_topics(timeout=60).topics
    missing = [name for name in names if name not in metadata]
    log.warning("prepare failed: the benchmark creates the %d target topics it left missing, %d per request, to "
                "measure the rest", len(missing), CREATE_BATCH)
    create_topics(target, missing, partitions)


def create_topics(cluster: KafkaCluster, names: list[str], partitions: int) -> None:
    admin = AdminClient(cluster.client_config())
    for start in range(0, len(names), CREATE_BATCH):
        batch = names[start:start + CREATE_BATCH]
        for future in admin.create_topics([NewTopic(n, partitions, 1) for n in batch], request_timeout=120).values():
            future.result()
        wait_until_served(admin, batch, timeout_s=120)


def produce_records(cluster: KafkaCluster, names: list[str], partitions: int, per_partition: int,
                    producers: int = 1) -> float:
    """Seconds plain producers take to write `per_partition` records into every partition of `names`: one, or the
    topics spread over `producers` as the engine spreads them (`mirror_engine.replication.record_producers`)."""
    settings = {**cluster.client_config(), "linger.ms": 20, "batch.size": 1 << 20, "acks": "all",
                "enable.idempotence": True, "compression.type": "lz4",
                "queue.buffering.max.messages": 1_000_000 // producers}
    pool = [Producer(settings) for _ in range(producers)]
    started = time.monotonic()
    for number, name in enumerate(names):
        producer = pool[number * producers // len(names)]
        for partition in range(partitions):
            for i in range(per_partition):
                while True:
                    try:
                        producer.produce(name, VALUE, b"k%d" % i, partition)
                        break
                    except BufferError:
                        producer.poll(0.05)
        producer.poll(0)
    for producer in pool:
        assert producer.flush(300) == 0, "the cluster did not take every record"
    return time.monotonic() - started


def commit_groups(cluster: KafkaCluster, prefix: str, names: list[str], shape: Shape, per_partition: int) -> None:
    """Each group stopped half-way on 1 to 3 topics: committed offsets, no members."""
    rng = random.Random(7)
    requests = []
    for g in range(shape.groups):
        read = rng.sample(names, min(len(names), rng.randint(1, 3)))
        offsets = [TopicPartition(t, p, per_partition // 2) for t in read for p in range(shape.partitions)]
        requests.append(ConsumerGroupTopicPartitions(f"{prefix}-g{g}", offsets))
    commit_offsets(cluster, requests)


def commit_offsets(cluster: KafkaCluster, requests: list[ConsumerGroupTopicPartitions]) -> None:
    """Commit each group's offsets, 200 groups in flight, again while the cluster's coordinators load (120 s)."""
    admin = AdminClient(cluster.client_config())
    pending = list(requests)
    deadline = time.monotonic() + 120
    while pending:
        futures = []
        for request in pending[:200]:  # bounded in flight
            answers = admin.alter_consumer_group_offsets([request], request_timeout=60)
            futures += [(request, future) for future in answers.values()]
        retry = []
        for request, future in futures:
            try:
                result = future.result()
                failed = [tp for tp in result.topic_partitions if tp.error is not None]
            except KafkaException as error:  # a fresh cluster's coordinator still loading
                failed = [error]
            if failed:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"group {request.group_id}: offsets not committed: {failed[:3]}")
                retry.append(request)
        pending = retry + pending[200:]
        if retry:
            time.sleep(0.5)


def partition_ends(admin: AdminClient, tps: list[TopicPartition]) -> dict[tuple[str, int], int] | None:
    """The end offsets of these partitions, or None when the brokers did not say within a minute (asked again
    later)."""
    try:
        return list_offsets(admin, tps, OffsetSpec.latest(), timeout_s=60)
    except KafkaException as error:
        log.warning("the target's ends unavailable (asked again): %s", error)
        return None


# Asking the ends of 10,000 partitions takes this process about 0.3 s of CPU: asked every 0.1 s, as before
# 2026-11-28, the benchmark took most of a core from the engine it measured (two cores, the brokers beside). So the
# copy is watched by asking the ends of the partitions not copied yet, again after COPY_POLL_FACTOR times as long as
# the last ask took (at least every 0.5 s): at most about a fifth of a core, less as partitions are done.
COPY_POLL_FACTOR = 4
# The first record is read off the target brokers' disks (`CopyWatch.first_record_s`), which asks the brokers
# nothing: until 2026-11-29 a consumer assigned every target partition watched for it. At 10,000 partitions that
# consumer's fetches (every 100 ms, each naming every partition of a broker) held the engine's start back: in four
# runs of the session, the target appended the first record 5.9 and 7.4 s after launch with it running, 2.9 and 3.2 s
# without; and it saw the record 3.4 and 6.1 s after the append.
# Until the first record is on disk the ends are not asked: the disk is looked at every FIRST_LOOK_S.
FIRST_LOOK_S = 1.0
FIRST_SEGMENT = "00000000000000000000.log"


def first_segments(cluster: KafkaCluster, names: list[str], partitions: int) -> list[Path]:
    """The first log segment of each of these partitions, on whichever of the cluster's brokers holds it."""
    wanted = {f"{name}-{partition}" for name in names for partition in range(partitions)}
    folders = [Path(cluster.home) / "data", *(Path(node.home) / "data" for node in cluster.brokers)]
    return [Path(entry.path) / FIRST_SEGMENT for folder in folders for entry in os.scandir(folder)
            if entry.name in wanted]


def first_append(segments: list[Path], since: float) -> float | None:
    """When the broker first appended records to any of these segments since `since` (a `time.time()`), or None.

    A segment's modification time is the time of its last append: a partition appended to again shows the later
    time, but the copy's first records land in hundreds of partitions within milliseconds, so the earliest of them
    is the first append to that precision."""
    times = []
    for segment in segments:
        try:
            status = segment.stat()
        except FileNotFoundError:  # the partition's segment rolled or its topic was deleted
            continue
        if status.st_size and status.st_mtime > since:
            times.append(status.st_mtime)
    return min(times, default=None)


class CopyWatch:
    """The first record and the whole backlog on the target, watched without loading the start it measures: the
    first record off the brokers' disks, the backlog by asking the ends (see COPY_POLL_FACTOR). Made before the
    engine is launched, on a local cluster (`kafka_local`) whose partitions all exist."""

    def __init__(self, target: KafkaCluster, names: list[str], partitions: int, per_partition: int) -> None:
        self.admin = AdminClient(target.client_config())
        self.per_partition = per_partition
        self.pending = [TopicPartition(name, p) for name in names for p in range(partitions)]
        self.segments = first_segments(target, names, partitions)
        if len(self.segments) != len(self.pending):
            raise RuntimeError(f"{len(self.segments)} of the {len(self.pending)} target partitions have a log on "
                               "the brokers' disks: the first record cannot be watched")
        self.launched_at = time.time()
        self.copying = False
        self.next_ask = 0.0

    def launched(self, at: float) -> None:
        """The engine was launched at `at` (a `time.time()`): appends from then on count."""
        self.launched_at, self.copying, self.next_ask = at, False, 0.0

    def first_record_s(self) -> float | None:
        """Seconds from the launch to the target's first append of a copied record, or None before it."""
        appended = first_append(self.segments, self.launched_at)
        return None if appended is None else appended - self.launched_at

    def look(self) -> bool:
        """Look if it is time to; True once every partition holds its records."""
        now = time.monotonic()
        if now < self.next_ask:
            return not self.pending
        if not self.copying:
            self.copying = self.first_record_s() is not None
            if not self.copying:
                self.next_ask = now + FIRST_LOOK_S
                return False
        ends = partition_ends(self.admin, self.pending)
        if ends is not None:
            self.pending = [tp for tp in self.pending if ends[(tp.topic, tp.partition)] < self.per_partition]
        self.next_ask = now + max(0.5, COPY_POLL_FACTOR * (time.monotonic() - now))
        return not self.pending


def timed(command: list[str], log_file: Path, env: dict[str, str] | None = None) -> float | None:
    started = time.monotonic()
    with log_file.open("w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=1800, env=env,
                              cwd=log_file.parent)
    if done.returncode != 0:
        log.warning("%s exited with %d:\n%s", " ".join(command[3:5]), done.returncode,
                    log_file.read_text(errors="replace")[-2000:])
        return None
    return time.monotonic() - started


def status_sizes(target: KafkaCluster, topic: str, since_ms: int) -> tuple[int, int, int]:
    """(largest record, bytes, first-to-last milliseconds) of the status records written since `since_ms`."""
    consumer = Consumer({**target.client_config(), "group.id": "scale-status", "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    largest = total = 0
    first = last = None
    try:
        while True:
            message = consumer.poll(10)
            if message is None or (message.error() and message.error().code() == -191):  # end of partition
                break
            if message.error():
                raise RuntimeError(message.error())
            stamp = message.timestamp()[1]
            if stamp < since_ms:
                continue
            size = len(message.value() or b"") + len(message.key() or b"")
            largest, total = max(largest, size), total + size
            first = stamp if first is None else first
            last = stamp
    finally:
        consumer.close()
    return largest, total, (last - first) if first is not None and last is not None else 0


def dag_parse_seconds(plan_file: Path, workdir: Path, env: dict[str, str]) -> float | None:
    plans = workdir / f"plans-{plan_file.stem}"
    plans.mkdir(exist_ok=True)
    (plans / plan_file.name).write_text(plan_file.read_text())
    # Airflow puts the plugins folder on sys.path in its own processes: so does this one.
    code = (f"import sys, time; sys.path.insert(0, {str(ROOT / 'plugins')!r}); t = time.monotonic(); "
            "from airflow.models.dagbag import DagBag; "
            f"bag = DagBag(dag_folder={str(ROOT / 'dags' / 'migrations.py')!r}); "
            "assert not bag.import_errors, bag.import_errors; print(time.monotonic() - t)")
    env = {**env, "KAFKA_MIGRATION_PLANS": str(plans), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=workdir)
    if done.returncode != 0:
        log.warning("DAG parse failed: %s", done.stderr[-2000:])
        return None
    return float(done.stdout.strip().splitlines()[-1])


def _log_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(errors="replace").splitlines() if not line.startswith("TRACE "))


def build_shape(shape: Shape, source: KafkaCluster, target: KafkaCluster, per_partition: int) -> tuple[float, float]:
    """The shape's topics, records and groups on the source; the raw produce rates into as many target partitions,
    through one producer and through as many as the engine's records would be spread over."""
    prefix = f"s{shape.total_partitions}"
    names = [f"{prefix}.t{i:05d}" for i in range(shape.topics)]
    raw_names = [f"raw{shape.total_partitions}.t{i:05d}" for i in range(shape.topics)]
    log.info("%s: creating topics", shape)
    create_topics(source, names, shape.partitions)
    create_topics(target, raw_names, shape.partitions)
    log.info("%s: writing %d records per partition", shape, per_partition)
    produce_records(source, names, shape.partitions, per_partition)
    raw_rate = shape.total_partitions * per_partition / produce_records(target, raw_names, shape.partitions,
                                                                       per_partition)
    # The same again through as many producers as the engine would spread the topics over.
    spread = min(MOST_PRODUCERS, math.ceil(shape.topics / TOPICS_PER_PRODUCER))
    raw_spread_rate = shape.total_partitions * per_partition / produce_records(
        target, raw_names, shape.partitions, per_partition, producers=spread) if spread > 1 else raw_rate
    commit_groups(source, prefix, names, shape, per_partition)
    # The target's offsets topic is made by its first group's commit: here, not in the first measured `run`'s start
    # (its check that no worker runs beside it asks the target's group coordinator), which would share the two
    # cores with the target's brokers creating its 50 partitions.
    commit_offsets(target, [ConsumerGroupTopicPartitions("scale-warm-up", [TopicPartition(raw_names[0], 0, 0)])])
    return raw_rate, raw_spread_rate


def measure(shape: Shape, code: Code, source: KafkaCluster, target: KafkaCluster, workdir: Path,
            per_partition: int, steady_s: float, trace: bool = False, drop_after: bool = False,
            settle_before_run_s: float = 0.0) -> Figures:
    """Every figure of one version of the engine on a shape built by `build_shape`. Each version copies into
    target topics of its own: the plan's source alias is the version's label, under the default policy
    (`<label>.<topic>`). `drop_after`: delete them, and the flow's internal topics, once measured.
    `settle_before_run_s`: launch `run` once the machine settles after `prepare`, at most this long."""
    figures = Figures()
    prefix = f"s{shape.total_partitions}"
    source_names = [f"{prefix}.t{i:05d}" for i in range(shape.topics)]
    names = [f"{code.label}.{name}" for name in source_names]  # on the target
    data = {"name": f"{prefix}-{code.label}", "source": cluster_section(code.label, source),
            "target": cluster_section("tgt", target), "replication_policy": {"type": "default"},
            "topics": {"include": [rf"{prefix}\..*"]}, "groups": {"include": [f"{prefix}-g.*"]},
            # An earlier version without the field checkpoints nothing; its first record and copy still compare.
            "engine": {"run_checkpoints": True} if code.knows_plan_field("run_checkpoints") else {}}
    prefix = f"{prefix}-{code.label}"  # of the files
    plan_file = workdir / f"{prefix}.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    for step, extra in (("plan", []), ("prepare --dry-run", ["--dry-run"]), ("prepare", [])):
        command = [*ENGINE, step.split()[0], "--plan", str(plan_file), *extra]
        figures.seconds[step] = timed(command, workdir / f"{prefix}-{step.replace(' ', '')}.log", code.env())
    if figures.seconds["prepare"] is None:
        create_after_failed_prepare(target, names, shape.partitions)
    # `prepare` waits 15 s for the new partitions' leaders: brokers of tens of thousands of partitions on a busy
    # machine may need longer, and the copy is measured from a target that serves them all.
    wait_until_served(AdminClient(target.client_config()), names, timeout_s=300)
    if settle_before_run_s:
        figures.launch_load, figures.launch_brokers_cores = settle(settle_before_run_s, [source, target])

    total = shape.total_partitions * per_partition
    engine_log = workdir / f"{prefix}-run.log"
    # Traced: each start-up step stamped (bench/startup_trace.py); its lines are left out of the log's rate.
    command = ([sys.executable, str(ROOT / "bench" / "startup_trace.py")] if trace else ENGINE)

    def launch() -> tuple[subprocess.Popen, int, float]:
        launched_ms = int(time.time() * 1000)
        watch.launched(launched_ms / 1000)
        env = {**code.env(), "STARTUP_TRACE_LAUNCHED_AT": str(launched_ms / 1000)}
        with engine_log.open("a") as out:
            engine = subprocess.Popen([*command, "run", "--plan", str(plan_file)], stdout=out,
                                      stderr=subprocess.STDOUT, env=env, cwd=workdir)
        return engine, launched_ms, time.monotonic()

    engine_log.write_text("")
    watch = CopyWatch(target, names, shape.partitions, per_partition)
    engine, launched_ms, started = launch()
    launches = 1
    try:
        first = caught_up = None
        while caught_up is None and time.monotonic() - started < 1800:
            if engine.poll() is not None:
                # A start-up that failed on brokers still busy with the partitions `prepare` just created (a
                # cluster not answering within 10 s, a leader not elected yet) is launched again, twice at most.
                if first is not None or launches >= 3:
                    break
                log.warning("the engine exited with %d before its first record (its log: %s): launching it again",
                            engine.returncode, engine_log)
                engine, launched_ms, started = launch()
                launches += 1
            done = watch.look()
            now = time.monotonic() - started
            if first is None and watch.copying:
                first = now  # within FIRST_LOOK_S: the disk says when, below
            if done:
                caught_up = now
            time.sleep(0.05)
        if first is not None:
            first = watch.first_record_s()
        figures.seconds["run: first record"], figures.seconds["run: backlog copied"] = first, caught_up
        figures.copy_cpu_s = cpu_seconds(engine.pid)
        if caught_up is not None and first is not None and caught_up > first:
            figures.rate = total / (caught_up - first)  # from the first record: start-up is its own figure
        lines_before, cpu_before = _log_lines(engine_log), cpu_seconds(engine.pid)
        librdkafka_before = librdkafka_cpu_seconds(engine.pid)
        time.sleep(steady_s)
        lines = _log_lines(engine_log) - lines_before
        figures.log_lines_per_minute = lines * 60 / steady_s
        cpu_after, librdkafka_after = cpu_seconds(engine.pid), librdkafka_cpu_seconds(engine.pid)
        if cpu_before is not None and cpu_after is not None:
            figures.steady_cpu_per_minute = (cpu_after - cpu_before) * 60 / steady_s
        if librdkafka_before is not None and librdkafka_after is not None:
            figures.steady_librdkafka_cpu_per_minute = (librdkafka_after - librdkafka_before) * 60 / steady_s
        if engine.poll() is not None:  # its figures are cut short: say why
            tail = engine_log.read_text(errors="replace").splitlines()[-30:]
            log.error("the engine exited with %d before it was stopped; its log ends:\n%s", engine.returncode,
                      "\n".join(tail))
        # Every status record since the launch: the start-up's included, when the most partitions change.
        largest, written, span_ms = status_sizes(target, InternalTopics.for_plan(plan).status, launched_ms)
        figures.largest_status_kib = largest / 1024
        intervals = max(1.0, span_ms / 1000 / plan.engine.status_interval_s)
        figures.status_kib_per_interval = written / 1024 / intervals
        figures.peak_rss_mib = memory_bytes(engine.pid, "VmHWM") / 2**20

        figures.seconds["checkpoint round (read-only)"] = checkpoint_round_seconds(plan_file, code.env())
        figures.seconds["switch-group (one group)"] = timed(
            [*ENGINE, "switch-group", "--plan", str(plan_file), "--group", f"s{shape.total_partitions}-g0"],
            workdir / f"{prefix}-switch.log", code.env())
    finally:
        engine.terminate()
        try:
            engine.wait(120)
        except subprocess.TimeoutExpired:
            engine.kill()
    log.info("engine stopped, %d ms after launch", int(time.time() * 1000) - launched_ms)
    if trace:
        steps = [line for line in engine_log.read_text(errors="replace").splitlines() if line.startswith("TRACE ")]
        print(f"start-up of `run` at {shape} (ms since launch, ms the step took):")
        print("\n".join(steps))
        # The moment the target acknowledged the first copied record, by the engine's own clock: a few milliseconds
        # after the append the watch above reads off the disk.
        acknowledged = [int(line.split()[1]) for line in steps if line.endswith(ACKNOWLEDGED)]
        if acknowledged:
            figures.seconds[TRACED_FIRST] = acknowledged[0] / 1000
    figures.seconds["DAG parse"] = dag_parse_seconds(plan_file, workdir, code.env())
    if drop_after:
        # The flow's own internal topics too; the heartbeats topic is every flow's: it stays.
        internal = InternalTopics.for_plan(plan)
        drop_topics(target, [*names, *(name for name in internal.specs() if name != internal.heartbeats)])
    return figures


def drop_topics(cluster: KafkaCluster, names: list[str]) -> None:
    """Delete these topics (those that exist), in batches."""
    admin = AdminClient(cluster.client_config())
    existing = [name for name in names if name in admin.list_topics(timeout=60).topics]
    for start in range(0, len(existing), CREATE_BATCH):
        for future in admin.delete_topics(existing[start:start + CREATE_BATCH], request_timeout=120).values():
            future.result()
    log.info("deleted %d topics from the target", len(existing))


# The brokers count as quiet under this share of a core each on average (their sum against it times their number),
# over QUIET_WINDOW_S: idle brokers of the 10,000-partition shape here use 0.03-0.06. The load average alone (a
# minute's mean) read under 0.75 a core while the brokers were still creating the partitions `prepare` had just
# asked for.
QUIET_BROKER_CORES = 0.1
QUIET_WINDOW_S = 5.0


def broker_pids(clusters: list[KafkaCluster]) -> list[int]:
    return [pid for cluster in clusters for pid in (cluster.pid, *(node.pid for node in cluster.brokers))]


def brokers_cores(pids: list[int], window_s: float) -> float:
    """The CPU these processes used together over the next `window_s` seconds, in cores."""
    before = [cpu_seconds(pid) or 0.0 for pid in pids]
    time.sleep(window_s)
    return sum((cpu_seconds(pid) or 0.0) - used for pid, used in zip(pids, before, strict=True)) / window_s


def settle(most_s: float, clusters: list[KafkaCluster]) -> tuple[float, float]:
    """Wait until the machine is quiet, or `most_s` seconds: the load average (one minute) under 0.75 a core and
    the brokers under QUIET_BROKER_CORES each on average (they delete the last run's logs, or create the partitions
    `prepare` asked for, in the background). The load average and the brokers' CPU (cores) then."""
    deadline, quiet = time.monotonic() + most_s, 0.75 * (os.cpu_count() or 1)
    pids = broker_pids(clusters)
    time.sleep(min(10.0, most_s))
    while True:
        busy, load = brokers_cores(pids, QUIET_WINDOW_S), os.getloadavg()[0]
        if (load < quiet and busy < QUIET_BROKER_CORES * len(pids)) or time.monotonic() >= deadline:
            break
    log.info("load average %.2f, the brokers %.2f cores", load, busy)
    return load, busy


def checkpoint_round_seconds(plan_file: Path, env: dict[str, str]) -> float | None:
    """A read-only checkpoint round of every group (`Checkpointer.run_once(write=False)`, its clients' start
    included), in a process running the version's code."""
    code = ("import sys, time, yaml; from mirror_engine.cutover import Checkpointer; "
            "from mirror_engine.plan import plan_from_dict; "
            f"plan = plan_from_dict(yaml.safe_load(open({str(plan_file)!r}))); "
            "source, target = plan.client_configs(); t = time.monotonic(); "
            "checkpointer = Checkpointer(plan, source, target); results = checkpointer.run_once(write=False); "
            "print(len(results), time.monotonic() - t); checkpointer.close()")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=plan_file.parent)
    if done.returncode != 0:
        log.warning("checkpoint round failed: %s", done.stderr[-2000:])
        return None
    groups, seconds = done.stdout.strip().splitlines()[-1].split()
    log.info("checkpoint round: %s groups", groups)
    return float(seconds)


ACKNOWLEDGED = "acknowledged by the target"  # the end of startup_trace.py's mark of the first acknowledged record
TRACED_FIRST = "run: first record acknowledged (--trace)"
GOALS = {
    "plan": "", "prepare --dry-run": "", "prepare": "",
    "run: first record": "<= 3 s", TRACED_FIRST: "<= 3 s",
    "run: backlog copied": "", "checkpoint round (read-only)": "<= 5 s",
    "switch-group (one group)": "<= 2 s", "DAG parse": "<= 5 s",
}


def report(columns: list[tuple[Shape, Code]], results: list[Figures]) -> None:
    header = ["figure", *(f"{s.total_partitions:,} p / {s.groups:,} g" + (f" {c.label}" if len({c.label for _, c in
              columns}) > 1 else "") for s, c in columns), "goal at 10,000 p"]

    def cell(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"
    rows = [[name, *(cell(r.seconds.get(name)) for r in results), goal] for name, goal in GOALS.items()]
    rows += [
        ["copy rate, records/s", *(cell(r.rate, 0) for r in results), ""],
        ["raw produce, one producer, records/s", *(cell(r.raw_rate, 0) for r in results), ""],
        ["copy rate vs raw produce", *(cell(r.rate / r.raw_rate if r.rate and r.raw_rate else None, 2)
                                       for r in results), ">= 0.80"],
        ["raw produce, topics spread as the engine's, records/s", *(cell(r.raw_spread_rate, 0) for r in results),
         ""],
        ["copy rate vs that", *(cell(r.rate / r.raw_spread_rate if r.rate and r.raw_spread_rate else None, 2)
                                for r in results), ""],
        ["load average at launch (--quiet-launch)", *(cell(r.launch_load, 2) for r in results), ""],
        ["both clusters' brokers' CPU at launch, cores", *(cell(r.launch_brokers_cores, 2) for r in results), ""],
        ["engine CPU to the backlog copied, s", *(cell(r.copy_cpu_s) for r in results), ""],
        ["peak RSS, MiB", *(cell(r.peak_rss_mib, 0) for r in results), "<= 250"],
        ["largest status record, KiB", *(cell(r.largest_status_kib) for r in results), "<= 64"],
        ["status written per interval, KiB", *(cell(r.status_kib_per_interval) for r in results), "< 1,024"],
        ["engine log lines per minute", *(cell(r.log_lines_per_minute, 0) for r in results), "<= 200"],
        ["engine CPU a minute once caught up, s", *(cell(r.steady_cpu_per_minute, 2) for r in results), ""],
        ["  of which in librdkafka's threads, s", *(cell(r.steady_librdkafka_cpu_per_minute, 2) for r in results),
         ""],
    ]
    print_table("Costs by cluster size (seconds unless named)", header, rows,
                ["two workers joining and leaving: --workers; the cockpit: bench/cockpit_overview.py"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", type=Shape.parse,
                        help="TOPICSxPARTITIONSxGROUPS (repeatable; default 1000x10x1000)")
    parser.add_argument("--records", type=int, default=100, help="records per partition (100 B each)")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of steady state after the copy")
    parser.add_argument("--trace", action="store_true",
                        help="run the engine through startup_trace.py and print its start-up steps")
    parser.add_argument("--brokers", type=int, default=1,
                        help="brokers per cluster (the open-file limit is per broker process; the script says how "
                             "many the shapes need)")
    parser.add_argument("--broker-heap", default="512m", help="each broker's JVM heap (-Xmx): 512m suits a few "
                        "thousand partitions per broker")
    parser.add_argument("--no-mm2", dest="mm2", action="store_false", help="leave MirrorMaker 2 out")
    parser.add_argument("--no-engine", dest="engine", action="store_false", help="MirrorMaker 2 alone")
    parser.add_argument("--mm2-timeout", type=float, default=1200.0, help="seconds MM2 may take to copy a shape")
    parser.add_argument("--mm2-tasks", type=int, default=1, help="MM2 tasks.max (its default: 1)")
    parser.add_argument("--mm2-topics-first", action="store_true",
                        help="create MM2's target topics before launching it (past 10,000 partitions it cannot)")
    parser.add_argument("--code", action="append", type=Code.parse, metavar="LABEL[=DIR]",
                        help="a version of the engine: DIR holds its mirror_engine package (git archive COMMIT "
                             "mirror_engine | tar -x -C DIR); without DIR this checkout. Repeatable: each shape "
                             "is measured with each, in turn, on the same clusters (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure each version this many times, alternated, deleting each run's topics from the "
                             "target before the next")
    parser.add_argument("--settle", type=float, default=180.0,
                        help="with --rounds: at most this many seconds of waiting for a quiet machine between runs")
    parser.add_argument("--quiet-launch", action="store_true",
                        help="launch `run` once the machine settles after `prepare` (at most --settle seconds): here "
                             "the brokers create the shape's partitions on the engine's own cores, on a real cluster "
                             "on machines of their own")
    parser.add_argument("--warm-up", action="store_true",
                        help="run the engine once on each shape before measuring it, not counted: the first run on "
                             "freshly built brokers here started two to three seconds slower than the next ones")
    parser.add_argument("--workers", action="store_true",
                        help="also the workers step at each shape: two workers, one joining, one leaving "
                             "(bench/scale_workers.py)")
    parser.add_argument("--workers-only", action="store_true", help="only the workers step at each shape")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="work in DIR and keep it (the clusters' data, the plans, every command's log)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    shapes = sorted(args.shape or [Shape(1000, 10, 1000)], key=lambda s: s.total_partitions)
    codes = args.code or [Code("engine")]
    for code in codes:
        code.compile_bytecode()
    check_brokers(shapes, len(codes) + 1 + args.mm2, args.brokers, raise_file_limit(shapes[-1]))
    columns, results = [], []
    mm2: dict[Shape, Mm2Figures] = {}
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        workdir = Path(tmp) if args.keep is None else args.keep.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["KAFKA_LOCAL_BROKER_HEAP"] = args.broker_heap
        source, target = start_pair(workdir / "clusters", brokers=args.brokers)
        try:
            if args.workers or args.workers_only:
                workers_step(shapes, source, target, workdir, args.records)
            for shape in shapes if not args.workers_only else []:
                raw_rate, raw_spread_rate = build_shape(shape, source, target, args.records)
                if args.warm_up:
                    log.info("%s: a warm-up run, not counted", shape)
                    settle(args.settle, [source, target])
                    measure(shape, Code("warmup", codes[0].path), source, target, workdir, args.records, 1.0,
                            drop_after=True)
                for number in range(1, args.rounds + 1):
                    for code in codes if args.engine else []:
                        if args.warm_up or (args.rounds > 1 and (number > 1 or code is not codes[0])):
                            settle(args.settle, [source, target])
                        run_code = code if args.rounds == 1 else Code(f"{code.label}{number}", code.path)
                        figures = measure(shape, run_code, source, target, workdir, args.records, args.steady,
                                          args.trace, drop_after=args.rounds > 1,
                                          settle_before_run_s=args.settle if args.quiet_launch else 0.0)
                        figures.raw_rate, figures.raw_spread_rate = raw_rate, raw_spread_rate
                        columns.append((shape, run_code))
                        results.append(figures)
                if args.mm2:
                    try:
                        mm2[shape] = measure_mm2(shape, source, target, workdir, args.records, args.mm2_tasks,
                                                 args.mm2_timeout, args.mm2_topics_first)
                    except Exception:  # the engine's figures of the shape are printed all the same
                        log.exception("MirrorMaker 2 on %s failed", shape)
                        mm2[shape] = Mm2Figures()
                report_so_far(columns, results, mm2, last=shape is shapes[-1])
        finally:
            stop_clusters([source, target])


def report_so_far(columns: list[tuple[Shape, Code]], results: list[Figures], mm2: dict[Shape, Mm2Figures],
                  last: bool) -> None:
    """Each shape's figures as soon as it is measured: a run cut short keeps those of the smaller shapes."""
    if not last:
        print("\n(figures so far)")
    if results:
        report(columns, results)
    if mm2:
        report_mm2(columns, results, mm2)
    sys.stdout.flush()


def workers_step(shapes: list[Shape], source: KafkaCluster, target: KafkaCluster, workdir: Path,
                 per_partition: int) -> None:
    """Two workers sharing a flow at each shape, on topics of their own (bench/scale_workers.py), printed at once."""
    from scale_workers import measure_workers, report_workers

    results = [measure_workers(shape, source, target, workdir, per_partition, Code("engine").env(), create_topics,
                               produce_records) for shape in shapes]
    report_workers(results)


if __name__ == "__main__":
    main()
