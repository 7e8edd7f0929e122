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
from mirror_engine.observe.readout import PAGE_SIZE, Drain, DrainSample, flow_state, partition_page
from mirror_engine.observe.reports import GROUP_OUTCOME, ReportStore
from mirror_engine.observe.status import flow_problems, is_live, partition_count, status_history
from mirror_engine.plan import MigrationPlan

HISTORY_S = 3600  # the charts' window
BUCKET_S = 10  # one chart point per this many seconds
FRESH_FOR_S = 2.0  # a snapshot younger than this is served again instead of read anew
# What a page or an answer of the API holds whatever the plan's size: one page of partitions, and of the groups'
# checkpoints and the backfills the stalest or first ones, with their counts (the rest through paging or a filter).
SHOWN = PAGE_SIZE
SUMMARY = ("plan", "flow_state", "engines", "lag", "lag_ms", "records_per_s", "eta_s", "eta", "problems",
           "stopped_partitions", "partition_count", "at_ms")


class FlowView:
    """One plan's live state, cutover and validations; `close()` releases its clients."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        self.plan = plan
        self.watch = FlowWatch(plan, source_config, target_config)
        self.reports = ReportStore(plan, target_config)
        self._checkpoints = InternalTopicReader(target_config, self.watch.mapping.topics.checkpoints,
                                                "mirror-engine-checkpoints-reader")
        self._checkpointed: dict[str, dict[tuple[str, int], int]] = {}  # group -> {(topic, p): record time ms}
        self._snapshot: tuple[float, dict[str, Any]] | None = None
        # The view's own samples: the cards, the chart and the ETA all come from them (one source of numbers).
        self.drain = Drain()
        self._chart: dict[int, dict[str, float]] = {}  # bucket -> {t_ms, lag, records_per_s, write_rate}
        self._target_config = target_config
        self._chart_seeded = False

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

    def overview_row(self) -> dict[str, Any]:
        """The plan's summary (flow state, engines, lag, rates, ETA, problems, counts): the overview's row."""
        snapshot = self.snapshot()
        return {key: snapshot[key] for key in SUMMARY}

    @staticmethod
    def page_of(snapshot: dict[str, Any], page: int = 1, contains: str = "") -> dict[str, Any]:
        """The snapshot as a page or the API shows it, bounded whatever the plan's size: one page of partitions
        (stopped, then most behind, first; those whose name holds `contains`), the groups with the stalest
        checkpoints and the first backfills, each with its count."""
        rows, shown, pages = partition_page(snapshot["partitions"], page, contains=contains)
        checkpoints = sorted(snapshot["checkpoints"], key=lambda c: (c["newest_ms"], c["group"]))
        return {**snapshot, "partitions": rows, "page": shown, "pages": pages, "filter": contains,
                "checkpoints": checkpoints[:SHOWN], "checkpoint_groups": len(checkpoints),
                "backfills": snapshot["backfills"][:SHOWN], "backfill_partitions": len(snapshot["backfills"])}

    def snapshot(self, fresh: bool = False) -> dict[str, Any]:
        """Flow state, engines, per-partition copy and lag, totals with ETA, backfills, lag history; one read
        less than FRESH_FOR_S old is served again unless `fresh`. Every partition is in it: what is shown or
        answered goes through `page_of`."""
        if not fresh and self._snapshot and time.monotonic() - self._snapshot[0] < FRESH_FOR_S:
            return self._snapshot[1]
        watch = self.watch
        watch.refresh()
        ends = watch.planned_partitions()
        lag = watch.lag(ends)
        statuses = watch.statuses.poll()
        live = [status for status in statuses if is_live(status)]
        reported = {(part["topic"], part["partition"]): part for status in live for part in status["partitions"]}
        partitions = []
        for (topic, partition), end in ends.items():
            part = reported.get((topic, partition), {})
            behind = lag[(topic, partition)]
            rate = float(part.get("records_per_s") or 0.0)
            partitions.append({
                "topic": topic, "partition": partition, "source_end": end,
                "copied": watch.mapping.copied_position(topic, partition), "lag": behind,
                "lag_ms": part.get("lag_ms") if behind else 0,
                # An idle partition's last sampled latency is stale: shown blank, not as a number.
                "latency_ms": part.get("replication_latency_ms") if rate > 0 else None,
                "records_per_s": rate, "stopped": part.get("failed") or "",
            })
        total_lag = sum(lag.values())
        now_ms = int(time.time() * 1000)
        if not self._chart_seeded:
            self._seed_chart(now_ms)
        self.drain.add(DrainSample(now_ms / 1000, total_lag, sum(ends.values())))
        copy_rate, write_rate = self.drain.rates()
        if copy_rate is None and live:  # before the view's second sample: what the engines say they copy
            copy_rate = float(sum(status["records_per_s"] for status in live))
        self._chart_point(now_ms, total_lag, copy_rate, write_rate)
        switched = sorted(watch.control.switched_topics)
        state = flow_state(watch.control.flow_state, len(live), bool(ends))
        if switched and not ends:
            state = "switched"
        moved = self.reports.newest("schemas") if self.plan.schemas is not None else []
        snapshot = {
            "plan": self.plan.name, "source": self.plan.source.alias, "target": self.plan.target.alias,
            # The schema registries' move, as last applied (None: no registries, or not moved yet).
            "schemas": {**moved[0]["report"], "stored_ms": moved[0]["stored_ms"]} if moved else None,
            "flow_state": state, "switched_topics": switched,
            "engines": [{"worker": s["worker"], "state": s["state"], "partitions": partition_count(s),
                         "records_per_s": s["records_per_s"], "updated_ms": s["updated_ms"]} for s in live],
            "engines_seen": len(statuses),
            "lag": total_lag,
            "lag_ms": max([row["lag_ms"] or 0 for row in partitions] or [0]),
            "records_per_s": copy_rate, "write_rate": write_rate,
            "eta_s": self.drain.eta_s(), "eta": self.drain.eta_text(),
            "problems": flow_problems(live),
            "stopped_partitions": sum(1 for row in partitions if row["stopped"]),
            "partition_count": len(partitions),
            "partitions": partitions,
            "backfills": [{"topic": topic, "partition": p, "snapshot_offset": b, "state": snapshot.state,
                           "copied": watch.mapping.copied_position(topic, p)}
                          for topic, snapshot in sorted(watch.control.backfills.items())
                          for p, (b, _start) in sorted(snapshot.partitions.items())],
            "history": [self._chart[bucket] for bucket in sorted(self._chart)],
            "checkpoints": self.checkpoints(),
            "at_ms": now_ms,
        }
        self._snapshot = (time.monotonic(), snapshot)
        return snapshot

    def _seed_chart(self, now_ms: int) -> None:
        """The chart's points from before this view began, from what the flow's status topic still holds: per
        BUCKET_S, the engines' own lag and copy rate (each worker's last status in it, summed over the workers), so
        a person who opens the cockpit after the copy still sees it. The source's write rate is not in the status:
        those points have none. Read once."""
        self._chart_seeded = True
        by_bucket: dict[int, dict[str, tuple[int, int, float]]] = {}
        for updated_ms, worker, lag, rate in status_history(self.plan, self._target_config,
                                                           now_ms - HISTORY_S * 1000):
            by_bucket.setdefault(updated_ms // (BUCKET_S * 1000), {})[worker] = (updated_ms, lag, rate)
        for bucket, workers in by_bucket.items():
            self._chart.setdefault(bucket, {
                "t_ms": max(at for at, _lag, _rate in workers.values()),
                "lag": sum(lag for _at, lag, _rate in workers.values()),
                "records_per_s": round(sum(rate for _at, _lag, rate in workers.values()), 1), "write_rate": None})

    def _chart_point(self, now_ms: int, lag: int, copy_rate: float | None, write_rate: float | None) -> None:
        """The chart's point for this BUCKET_S (the last sample in it); points older than HISTORY_S dropped."""
        bucket = now_ms // (BUCKET_S * 1000)
        self._chart[bucket] = {"t_ms": now_ms, "lag": lag, "records_per_s": round(copy_rate or 0.0, 1),
                               "write_rate": round(write_rate or 0.0, 1)}
        for old in [b for b in self._chart if b < bucket - HISTORY_S // BUCKET_S]:
            del self._chart[old]

    def cutover(self) -> dict[str, Any]:
        """Per group: its state and newest switch report; per topic: whether its producers switched."""
        groups = {record["name"]: record for record in self.reports.newest("group-switch")}
        # Why a group was not switched: shown until a newer switch report supersedes it.
        outcomes = {record["name"]: record for record in self.reports.newest(GROUP_OUTCOME)}
        producer_reports = {record["name"]: record for record in self.reports.newest("producer-switch")}
        self.watch.refresh()
        fences = self._source_fences()
        rows = []
        for group in sorted(set(self.plan.cutover.groups) | set(groups) | set(outcomes)):
            record, outcome = groups.get(group), outcomes.get(group)
            if outcome is not None and record is not None and record["stored_ms"] >= outcome["stored_ms"]:
                outcome = None
            report = record["report"] if record else None
            if outcome is not None:
                verdict = outcome["report"]["verdict"]
                state = {"skip": "skipped", "late": "not switched: still waiting at the run's timeout"}.get(
                    verdict, "not switched: refused")
                rows.append({"group": group, "state": state, "stored_ms": outcome["stored_ms"], "report": None,
                             "reason": outcome["report"]["reason"]})
                continue
            if report is None:
                state = "fenced on the source, not switched yet" if group_fence(group) in fences else "not started"
            elif report["direction"].startswith(f"{self.plan.target.alias}->"):
                state = "rolled back"
            else:
                state = "switched" + (" (source fenced)" if report.get("fenced") else "")
            rows.append({"group": group, "state": state, "stored_ms": record["stored_ms"] if record else None,
                         "report": report, "reason": ""})
        switched = self.watch.control.switched_topics
        topics = [{"topic": topic, "state": "switched" if topic in switched else "not switched",
                   "report": producer_reports[topic]["report"] if topic in producer_reports else None,
                   "stored_ms": producer_reports[topic]["stored_ms"] if topic in producer_reports else None}
                  for topic in sorted(switched | set(producer_reports))]
        return {"plan": self.plan.name, "groups": rows, "topics": topics,
                "approvals": self.reports.newest("switch-approval")}

    def _source_fences(self) -> frozenset[Acl]:
        """The source's ACLs, to see fences; none where the source has no authorizer or hides its ACLs."""
        try:
            return read_acls(self.watch.source_admin) or frozenset()
        except Exception:  # the page shows the rest; a fence it cannot see shows as "not started"
            return frozenset()

    def validations(self) -> list[dict[str, Any]]:
        """The plan's stored validation reports, newest first."""
        return self.reports.newest("validation")

    def stored_between(self, start_ms: int, end_ms: int) -> dict[str, Any]:
        """The switch and validation reports stored between `start_ms` and `end_ms` (what one run produced)."""
        def within(record: dict[str, Any]) -> bool:
            return record.get("stored_ms") is not None and start_ms <= record["stored_ms"] <= end_ms

        cutover = self.cutover()
        return {"groups": [row for row in cutover["groups"] if (row["report"] is not None or row["reason"])
                           and within(row)],
                "topics": [row for row in cutover["topics"] if within(row)],
                "validations": [record for record in self.validations() if within(record)],
                "approvals": [record for record in cutover["approvals"] if within(record)]}
