"""How far a flow has copied, and how its workers are doing.

- `replication_lag`: per-partition lag from the stored progress and the source's ends (exact, whether
  or not any engine runs);
- worker status: each engine publishes a JSON snapshot (flow state, per-partition position, lag in
  records and ms, throughput, time to catch up, last error) every `engine.status_interval_s` to the
  flow's status topic, keyed by worker id, and serves it on loopback HTTP as JSON and as Prometheus
  metrics named after MirrorMaker 2's (`record-count`, `byte-rate`, `replication-latency-ms`, ...).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable

from confluent_kafka import Message, TopicPartition
from confluent_kafka.admin import OffsetSpec
from pydantic import BaseModel

from mirror_engine.flow import ControlChannel, InternalTopics, load_progress
from mirror_engine.kafka import InternalTopicReader, MalformedRecord, admin_client, decoded, list_offsets, read_to_end
from mirror_engine.plan import MigrationPlan


def replication_lag(plan: MigrationPlan, source_config: dict[str, str],
                    target_config: dict[str, str]) -> dict[tuple[str, int], int]:
    """Records not yet copied per source partition the plan replicates (switched topics left out)."""
    source_admin = admin_client(source_config)
    metadata = source_admin.list_topics(timeout=15).topics
    control = ControlChannel(plan, target_config)
    control.load()
    tps = [TopicPartition(topic, p) for topic in sorted(metadata)
           if plan.replicates_topic(topic) and topic not in control.switched_topics
           for p in metadata[topic].partitions]
    if not tps:
        return {}
    progress = load_progress(target_config, InternalTopics.for_plan(plan).progress)
    ends = list_offsets(source_admin, tps, OffsetSpec.latest())
    earliest = list_offsets(source_admin, tps, OffsetSpec.earliest())
    return {key: max(0, end - (progress[key].position if key in progress else earliest[key]))
            for key, end in ends.items()}


# ---------------------------------------------------------------------------- worker status
STALE_AFTER_INTERVALS = 3  # a worker silent this many status intervals is reported as not running
# A status record is bounded whatever the partition count: it lists in full only the partitions that matter most
# (stopped first, then the most behind), with counts of all; its assignment rides along compactly while it fits.
# The whole per-partition detail is the worker's HTTP status (on demand), and `mirror-engine status --json`.
STATUS_PARTITIONS = 50
ASSIGNED_BUDGET = 24 * 1024  # bytes of the compact assignment a record may hold (10,000 partitions: about 25 KiB)


class _PartitionStatus(BaseModel):
    topic: str
    partition: int
    lag: int
    lag_ms: float | None = None
    records_per_s: float
    records_copied: int
    failed: str | None = None


class WorkerStatus(BaseModel):
    """The fields of a worker's status record that its readers rely on (the record holds more; see
    `replication.status_reporter`). Validated where read; the reader keeps the record's own dict."""

    worker: str
    state: str
    mode: str
    updated_ms: int
    interval_s: float
    lag: int
    records_per_s: float
    last_error: str | None = None
    partitions: list[_PartitionStatus]  # all of them, or the STATUS_PARTITIONS that matter most (see below)
    partition_count: int | None = None  # partitions assigned (records before it listed every one)
    partitions_complete: bool = True  # `partitions` lists every assigned partition
    assigned: dict[str, str] | None = None  # topic -> its assigned partitions as ranges ("0-7,9"), if it fit


def worst_first(failed: bool, lag: int, lag_ms: int | None, topic: str, partition: int) -> tuple:
    """The order in which a status names partitions: the stopped first, then the most behind (in records, then
    in time), then by name."""
    return (not failed, -lag, -(lag_ms or 0), topic, partition)


def _worst_first(part: dict) -> tuple:
    return worst_first(bool(part.get("failed")), part["lag"], part.get("lag_ms"), part["topic"], part["partition"])


def _ranges(numbers: list[int]) -> str:
    """[0, 1, 2, 3, 7] -> "0-3,7"."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _parse_ranges(text: str) -> list[int]:
    numbers: list[int] = []
    for span in filter(None, text.split(",")):
        first, _, last = span.partition("-")
        numbers += range(int(first), int(last or first) + 1)
    return numbers


def status_record(summary: dict, rows: list[dict], assigned: Iterable[tuple[str, int]], count: int,
                  shown: int = STATUS_PARTITIONS) -> dict:
    """A worker's status record, bounded whatever its partition count: `summary` (its state and totals) with
    `rows`, which are every partition's when there are at most `shown` of the `count` (listed in the order given),
    else at least the `shown` that matter most (`worst_first`; only those need be built), and the assignment
    (`assigned`: every (topic, partition)) as ranges per topic while it fits ASSIGNED_BUDGET. So a record stays
    within tens of KiB at any partition count."""
    if count <= shown:
        return {**summary, "partitions": rows, "partition_count": count, "partitions_complete": True, "assigned": None}
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned:
        by_topic.setdefault(topic, []).append(partition)
    ranges = {topic: _ranges(numbers) for topic, numbers in sorted(by_topic.items())}
    fits = len(json.dumps(ranges)) <= ASSIGNED_BUDGET
    return {**summary, "partitions": sorted(rows, key=_worst_first)[:shown], "partition_count": count,
            "partitions_complete": False, "assigned": ranges if fits else None}


def partition_count(status: dict) -> int:
    """How many partitions the worker copies (listed in full or not)."""
    count = status.get("partition_count")
    return len(status["partitions"]) if count is None else int(count)


def assigned_partitions(status: dict) -> set[tuple[str, int]] | None:
    """Every partition the worker copies; None when its record is too large a worker's to say (only the count)."""
    if status.get("partitions_complete", True):
        return {(part["topic"], part["partition"]) for part in status["partitions"]}
    if status.get("assigned") is None:
        return None
    return {(topic, p) for topic, text in status["assigned"].items() for p in _parse_ranges(text)}


def _decode(message: Message) -> dict | None:
    raw = message.value()
    if raw is None:
        return None
    WorkerStatus.model_validate_json(raw)
    status = json.loads(raw)
    if not isinstance(status, dict):
        raise MalformedRecord("a status record that is not a JSON object")
    return status


def read_worker_statuses(plan: MigrationPlan, target_config: dict[str, str],
                         window_s: float = 300.0) -> list[dict]:
    """The latest status of every worker of the flow that published in the last `window_s`, by worker id."""
    topic = InternalTopics.for_plan(plan).status
    latest: dict[str, dict] = {}
    records = read_to_end(target_config, topic, since_ms=int((time.time() - window_s) * 1000))
    for _message, status in decoded(records, _decode):
        if status is not None:
            latest[status["worker"]] = status
    return [latest[worker] for worker in sorted(latest)]


def status_history(plan: MigrationPlan, target_config: dict[str, str], since_ms: int
                   ) -> list[tuple[int, str, int, float]]:
    """(updated_ms, worker, lag, records/s) of every status the flow's workers published since `since_ms`, oldest
    first: what the status topic still holds of the flow's past (it keeps a day), for charts that start before
    their reader did. Read once, not on every interval."""
    topic = InternalTopics.for_plan(plan).status
    records = read_to_end(target_config, topic, since_ms=since_ms)
    points = [(status["updated_ms"], status["worker"], status["lag"], status["records_per_s"])
              for _message, status in decoded(records, _decode) if status is not None]
    return sorted(points)


class WorkerStatusFeed:
    """The latest status of each worker of a flow, read incrementally from the status topic with one reader
    kept open: the first `poll()` reads the last `window_s`, each later one only what was written since."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str], window_s: float = 300.0) -> None:
        self.topic = InternalTopics.for_plan(plan).status
        self.window_s = window_s
        self.latest: dict[str, dict] = {}
        # (updated_ms, worker, lag, records/s) of every status read, oldest first, for charts over the window.
        self.history: deque[tuple[int, str, int, float]] = deque()
        self._reader = InternalTopicReader(target_config, self.topic, "mirror-engine-status-reader",
                                           since_ms=int((time.time() - window_s) * 1000))

    def poll(self, timeout_s: float = 10.0) -> list[dict]:
        """Read what was written since the last call; the latest status per worker, by worker id."""
        try:
            records = self._reader.read_new(timeout_s)
        except TimeoutError:  # what was read so far is shown; the rest comes with the next poll
            records = []
        for _message, status in decoded(records, _decode):
            if status is not None:
                self.latest[status["worker"]] = status
                self.history.append((status["updated_ms"], status["worker"], status["lag"],
                                     status["records_per_s"]))
        horizon = int((time.time() - self.window_s) * 1000)
        while self.history and self.history[0][0] < horizon:
            self.history.popleft()
        return [self.latest[w] for w in sorted(self.latest) if self.latest[w]["updated_ms"] >= horizon]

    def close(self) -> None:
        self._reader.close()


def is_live(status: dict, now_ms: int | None = None) -> bool:
    """The worker runs: it has not exited and published within a few of its intervals."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    silent_ms = now_ms - status["updated_ms"]
    return status["state"] != "exited" and silent_ms <= STALE_AFTER_INTERVALS * status["interval_s"] * 1000


def flow_problems(statuses: list[dict]) -> list[str]:
    """What the live workers report as broken: stopped partitions, topics not copied, and their last errors."""
    problems = []
    for status in statuses:
        if not is_live(status):
            continue
        for part in status["partitions"]:
            if part.get("failed"):
                problems.append(f"worker {status['worker']}: {part['topic']}[{part['partition']}]: {part['failed']}")
        for topic, reason in (status.get("blocked_topics") or {}).items():
            problems.append(f"worker {status['worker']}: topic {topic} is not copied: {reason}")
        if status.get("blocked_topic_count", 0) > len(status.get("blocked_topics") or {}):
            problems.append(f"worker {status['worker']}: {status['blocked_topic_count']} topics in all are not copied "
                            "(see its log)")
        if status.get("last_error") and not any(status["last_error"] in p for p in problems):
            problems.append(f"worker {status['worker']}: {status['last_error']}")
    return problems


def render_flow_status(statuses: list[dict], now_ms: int | None = None) -> str:
    """Workers, then lag per topic, as readable tables."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if not statuses:
        return "no worker of this flow published a status recently (is any running?)"
    lines = [f"{'worker':<28} {'state':<8} {'mode':<11} {'parts':>5} {'rec/s':>10} {'lag':>10} {'seen':>6}  status url"]
    topics: dict[str, dict[str, float]] = {}
    for status in statuses:
        live = is_live(status, now_ms)
        state = status["state"] if live or status["state"] == "exited" else "silent"
        mode = ("eos " if status.get("exactly_once") else "alo ") + status["mode"]
        seen_s = (now_ms - status["updated_ms"]) / 1000
        lines.append(f"{status['worker'][:28]:<28} {state:<8} {mode:<11} {partition_count(status):>5} "
                     f"{status['records_per_s']:>10,.0f} {status['lag']:>10,} {seen_s:>5.0f}s"
                     f"  {status.get('http') or '-'}")
        if not live:
            continue
        for part in status["partitions"]:
            row = topics.setdefault(part["topic"], {"partitions": 0, "lag": 0, "lag_ms": 0.0, "rate": 0.0,
                                                    "failed": 0, "copied": 0})
            row["partitions"] += 1
            row["lag"] += part["lag"]
            row["lag_ms"] = max(row["lag_ms"], part["lag_ms"] or 0)
            row["rate"] += part["records_per_s"]
            row["failed"] += 1 if part.get("failed") else 0
            row["copied"] += part["records_copied"]
    lines += ["", f"{'topic':<40} {'parts':>5} {'lag':>10} {'lag ms':>9} {'rec/s':>10} {'catch up':>9} {'stopped':>7}"]
    for topic, row in sorted(topics.items()):
        catch_up = "-" if not row["lag"] else (f"{row['lag'] / row['rate']:.0f}s" if row["rate"] > 0 else "never")
        lines.append(f"{topic[:40]:<40} {row['partitions']:>5} {int(row['lag']):>10,} {int(row['lag_ms']):>9,} "
                     f"{row['rate']:>10,.0f} {catch_up:>9} {int(row['failed']):>7}")
    partial = [s for s in statuses if not s.get("partitions_complete", True) and is_live(s, now_ms)]
    if partial:
        lines += ["", f"(each of {len(partial)} worker(s) reports only its stopped and most-behind partitions, "
                  f"{STATUS_PARTITIONS} of its {', '.join(f'{partition_count(s):,}' for s in partial)}: every "
                  "partition's lag is in `mirror-engine status --json` (stored_lag) and the worker's HTTP status)"]
    problems = flow_problems(statuses)
    if problems:
        lines += ["", "problems:"] + [f"  {problem}" for problem in problems]
    return "\n".join(lines)


_METRICS = (
    # (name, type, help, field of a partition's status) -- names follow MM2's MirrorSourceConnector metrics.
    ("mirror_source_record_count", "counter", "Records copied to the target by this worker.", "records_copied"),
    ("mirror_source_record_rate", "gauge", "Records copied per second over the last status interval.",
     "records_per_s"),
    ("mirror_source_byte_count", "counter", "Record bytes (keys, values, headers) copied by this worker.",
     "bytes_fetched"),
    ("mirror_source_byte_rate", "gauge", "Record bytes fetched per second over the last status interval.",
     "bytes_per_s"),
    ("mirror_source_replication_latency_ms", "gauge",
     "At the last sampled record: target acknowledgement time minus the record's timestamp.",
     "replication_latency_ms"),
    ("mirror_source_record_age_ms", "gauge",
     "At the last sampled record: the time it was read from the source minus its timestamp.", "record_age_ms"),
    ("mirror_engine_lag_records", "gauge", "Source records not yet copied.", "lag"),
    ("mirror_engine_lag_ms", "gauge",
     "How far behind the copy is in time (at most): now minus the timestamp of the last copied record, 0 when "
     "caught up.", "lag_ms"),
    ("mirror_engine_catch_up_seconds", "gauge", "Lag divided by the recent copy rate.", "catch_up_s"),
)


def _label_value(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{name}="{_label_value(value)}"' for name, value in labels.items()) + "}"


def prometheus_text(status: dict) -> str:
    """A worker's status snapshot in the Prometheus text exposition format (version 0.0.4).

    Written here (40 lines) rather than through prometheus_client, whose process-wide registry and collectors
    would be a runtime dependency to render one snapshot dict; the tests parse it with prometheus_client's own
    parser (`test_workers.py`)."""
    if not status:
        return ""
    flow = {"source": status["source"], "target": status["target"]}
    lines = []
    for name, kind, help_text, field in _METRICS:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for part in status["partitions"]:
            value = part.get(field)
            if value is not None:
                labels = _labels(**flow, topic=part["topic"], partition=part["partition"])
                lines.append(f"{name}{labels} {value}")
    lines += ["# HELP mirror_engine_partition_stopped 1 for a partition the worker stopped copying (see last error).",
              "# TYPE mirror_engine_partition_stopped gauge"]
    for part in status["partitions"]:
        labels = _labels(**flow, topic=part["topic"], partition=part["partition"])
        lines.append(f"mirror_engine_partition_stopped{labels} {1 if part.get('failed') else 0}")
    lines += ["# HELP mirror_engine_flow_state The flow state this worker applies (1 for the current one).",
              "# TYPE mirror_engine_flow_state gauge"]
    for state in ("running", "paused", "stopped", "exited"):
        lines.append(f"mirror_engine_flow_state{_labels(**flow, state=state)} {1 if status['state'] == state else 0}")
    lines += ["# HELP mirror_engine_assigned_partitions Partitions this worker copies.",
              "# TYPE mirror_engine_assigned_partitions gauge",
              f"mirror_engine_assigned_partitions{_labels(**flow)} {partition_count(status)}"]
    return "\n".join(lines) + "\n"
