"""What a person watching a migration sees, as small JSON-able dicts: the cockpit's data, from the target only.

Everything comes from what the engines, jobs and switches already write on the target (the flow's mapping,
control, status and report topics) plus the source's end offsets, read incrementally by one `FlowWatch`
and one `ReportStore` per plan, so a page refreshed every few seconds costs a few small reads.
"""

from __future__ import annotations

import time
from typing import Any

from mirror_engine.kafka import Acl, InternalTopicReader, decoded, group_fence, read_acls
from mirror_engine.mm2 import Checkpoint
from mirror_engine.observe.flow_watch import FlowWatch
from mirror_engine.observe.reports import ReportStore
from mirror_engine.observe.status import flow_problems, is_live, partition_count
from mirror_engine.plan import MigrationPlan

HISTORY_S = 3600  # the charts' window
BUCKET_S = 10  # one chart point per this many seconds
FRESH_FOR_S = 2.0  # a snapshot younger than this is served again instead of read anew


def _eta_s(lag: int, rate: float) -> float | None:
    if lag <= 0:
        return 0.0
    return lag / rate if rate > 0 else None


class FlowView:
    """One plan's live state, cutover and validations; `close()` releases its clients."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        self.plan = plan
        self.watch = FlowWatch(plan, source_config, target_config, status_window_s=HISTORY_S)
        self.reports = ReportStore(plan, target_config)
        self._checkpoints = InternalTopicReader(target_config, self.watch.mapping.topics.checkpoints,
                                                "mirror-engine-checkpoints-reader")
        self._checkpointed: dict[str, dict[tuple[str, int], int]] = {}  # group -> {(topic, p): record time ms}
        self._snapshot: tuple[float, dict[str, Any]] | None = None

    def close(self) -> None:
        self.watch.close()
        self.reports.close()
        self._checkpoints.close()

    def checkpoints(self) -> list[dict[str, Any]]:
        """Per group with MM2-format checkpoints on the target: partitions checkpointed and the newest one's time."""
        for message, checkpoint in decoded(self._checkpoints.read_new(),
                                           lambda m: Checkpoint.from_record(m.key(), m.value())):
            self._checkpointed.setdefault(checkpoint.group, {})[(checkpoint.topic, checkpoint.partition)] = \
                message.timestamp()[1]
        return [{"group": group, "partitions": len(times), "newest_ms": max(times.values()),
                 "oldest_ms": min(times.values())} for group, times in sorted(self._checkpointed.items())]

    def snapshot(self) -> dict[str, Any]:
        """Flow state, engines, per-partition copy and lag, totals with ETA, backfills, lag history."""
        if self._snapshot and time.monotonic() - self._snapshot[0] < FRESH_FOR_S:
            return self._snapshot[1]
        watch = self.watch
        watch.refresh()
        ends = watch.planned_partitions()
        lag = watch.lag(ends)
        statuses = watch.statuses.poll()
        live = [status for status in statuses if is_live(status)]
        reported = {(part["topic"], part["partition"]): part for status in live for part in status["partitions"]}
        partitions = []
        for (topic, partition), end in sorted(ends.items()):
            part = reported.get((topic, partition), {})
            behind = lag[(topic, partition)]
            rate = float(part.get("records_per_s") or 0.0)
            partitions.append({
                "topic": topic, "partition": partition, "source_end": end,
                "copied": watch.mapping.copied_position(topic, partition), "lag": behind,
                "lag_ms": part.get("lag_ms") if behind else 0, "latency_ms": part.get("replication_latency_ms"),
                "records_per_s": rate, "eta_s": _eta_s(behind, rate), "stopped": part.get("failed") or "",
            })
        partitions.sort(key=lambda row: (not row["stopped"], row["topic"], row["partition"]))
        total_lag = sum(lag.values())
        rate = sum(float(status["records_per_s"]) for status in live)
        switched = sorted(watch.control.switched_topics)
        flow_state = watch.control.flow_state
        if switched and not ends:
            flow_state = "switched"
        snapshot = {
            "plan": self.plan.name, "source": self.plan.source.alias, "target": self.plan.target.alias,
            "flow_state": flow_state, "switched_topics": switched,
            "engines": [{"worker": s["worker"], "state": s["state"], "partitions": partition_count(s),
                         "records_per_s": s["records_per_s"], "updated_ms": s["updated_ms"]} for s in live],
            "engines_seen": len(statuses),
            "lag": total_lag,
            "lag_ms": max([row["lag_ms"] or 0 for row in partitions] or [0]),
            "records_per_s": rate, "eta_s": _eta_s(total_lag, rate),
            "problems": flow_problems(live),
            "stopped_partitions": sum(1 for row in partitions if row["stopped"]),
            "partitions": partitions,
            "backfills": [{"topic": topic, "partition": p, "snapshot_offset": b, "state": snapshot.state,
                           "copied": watch.mapping.copied_position(topic, p)}
                          for topic, snapshot in sorted(watch.control.backfills.items())
                          for p, (b, _start) in sorted(snapshot.partitions.items())],
            "history": self._history(),
            "checkpoints": self.checkpoints(),
            "at_ms": int(time.time() * 1000),
        }
        self._snapshot = (time.monotonic(), snapshot)
        return snapshot

    def _history(self) -> list[dict[str, float]]:
        """[{t_ms, lag, records_per_s}] per BUCKET_S over the last hour: each engine's last status in a bucket."""
        buckets: dict[int, dict[str, tuple[int, float]]] = {}
        for updated_ms, worker, lag, rate in self.watch.statuses.history:
            buckets.setdefault(updated_ms // (BUCKET_S * 1000), {})[worker] = (lag, rate)
        return [{"t_ms": bucket * BUCKET_S * 1000, "lag": sum(v[0] for v in workers.values()),
                 "records_per_s": round(sum(v[1] for v in workers.values()), 1)}
                for bucket, workers in sorted(buckets.items())]

    def cutover(self) -> dict[str, Any]:
        """Per group: its state and newest switch report; per topic: whether its producers switched."""
        groups = {record["name"]: record for record in self.reports.newest("group-switch")}
        producer_reports = {record["name"]: record for record in self.reports.newest("producer-switch")}
        self.watch.refresh()
        fences = self._source_fences()
        rows = []
        for group in sorted(set(self.plan.cutover.groups) | set(groups)):
            record = groups.get(group)
            report = record["report"] if record else None
            if report is None:
                state = "fenced on the source, not switched yet" if group_fence(group) in fences else "not started"
            elif report["direction"].startswith(f"{self.plan.target.alias}->"):
                state = "rolled back"
            else:
                state = "switched" + (" (source fenced)" if report.get("fenced") else "")
            rows.append({"group": group, "state": state, "stored_ms": record["stored_ms"] if record else None,
                         "report": report})
        switched = self.watch.control.switched_topics
        topics = [{"topic": topic, "state": "switched" if topic in switched else "not switched",
                   "report": producer_reports[topic]["report"] if topic in producer_reports else None}
                  for topic in sorted(switched | set(producer_reports))]
        return {"plan": self.plan.name, "groups": rows, "topics": topics}

    def _source_fences(self) -> frozenset[Acl]:
        """The source's ACLs, to see fences; none where the source has no authorizer or hides its ACLs."""
        try:
            return read_acls(self.watch.source_admin) or frozenset()
        except Exception:  # the page shows the rest; a fence it cannot see shows as "not started"
            return frozenset()

    def validations(self) -> list[dict[str, Any]]:
        """The plan's stored validation reports, newest first."""
        return self.reports.newest("validation")
