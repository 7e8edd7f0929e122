"""Switching a consumer group from the source cluster to the target, and back (rollback).

A group switch waits until the group can switch (`GroupReadyToSwitch`, the check its sensor defers on: stopped on
the source, fenced there when asked, none of it on the target, copied past its offsets), commits on the target
the exact translation of the group's final source offsets, reads them back and proves them (`proof`). A
rollback moves the group back the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.cutover.outlook import SKIP
from mirror_engine.cutover.proof import PartitionSwitch, prove_partition, records_around_all
from mirror_engine.cutover.readiness_base import Readiness
from mirror_engine.cutover.ready_to_switch import GroupReadyToSwitch, GroupStopped
from mirror_engine.cutover.switched import group_already_switched
from mirror_engine.cutover.waiting import NothingToSwitch, SwitchError, wait_until_ready
from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import (
    FENCE_OPTION,
    admin_client,
    commit_offsets,
    committed_offsets,
    describe_group,
    group_fence,
    is_engine_group,
    list_offsets,
    place_fence,
    remove_fence,
)
from mirror_engine.observe import FlowWatch, ReportStore
from mirror_engine.plan import MigrationPlan
from mirror_engine.schemas import RecordRewrites


@dataclass
class GroupSwitchReport:
    group: str
    direction: str  # "source->target" or "target->source" (rollback)
    fenced: bool
    wait_empty_s: float
    wait_copied_s: float
    committed_s: float  # from the group being empty on the old side to its offsets committed on the new side
    switch_s: float  # ... and verified
    partitions: list[PartitionSwitch] = field(default_factory=list)
    repeated: bool = False  # the switch was finished before: this run changed nothing and gives its proof

    @classmethod
    def from_dict(cls, stored: dict, repeated: bool = False) -> GroupSwitchReport:
        """The report as stored (`to_json`), e.g. read back from the flow's reports topic."""
        fields = {k: v for k, v in stored.items() if k in cls.__dataclass_fields__ and k != "partitions"}
        partitions = [PartitionSwitch(**row) for row in stored.get("partitions", [])]
        return cls(**{**fields, "repeated": repeated}, partitions=partitions)

    @property
    def ok(self) -> bool:
        return all(p.proof == "ok" for p in self.partitions)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "ok": self.ok}, indent=2)

    def render(self) -> str:
        head = (f"group {self.group} {'was already ' if self.repeated else ''}switched {self.direction}"
                f"{' (source fenced)' if self.fenced else ''}{' (nothing changed now)' if self.repeated else ''}: "
                f"{'verified' if self.ok else 'NOT VERIFIED'}; waited {self.wait_empty_s:.1f} s for the group to "
                f"stop, {self.wait_copied_s:.1f} s for the copy; offsets committed after {self.committed_s:.2f} s, "
                f"verified after {self.switch_s:.2f} s")
        rows = [("topic", "partition", "from offset", "to topic", "to offset", "lag", "before", "at", "proof")]
        rows += [(p.topic, str(p.partition), str(p.source_offset), p.target_topic, str(p.target_offset),
                  str(p.lag_at_switch), p.before, p.at, p.proof) for p in self.partitions]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
        return "\n".join([head, *lines])


class GroupSwitcher:
    """Switches the plan's consumer groups between the clusters.

    Given a `watch` and a `reports` store (a batch of groups switched together, `group_batch`), every switch reads
    the flow's mapping and its stored reports through them, which their owner closes; otherwise each switch opens
    and closes its own."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 fence_option: str = FENCE_OPTION, *, watch: FlowWatch | None = None,
                 reports: ReportStore | None = None) -> None:
        self.plan = plan
        self.source_config, self.target_config = source_config, target_config
        self.source_admin, self.target_admin = admin_client(source_config), admin_client(target_config)
        self.policy = plan.policy()
        self.fence_option = fence_option  # how the user asked for a fence, named when the source cannot hold one
        self.watch, self.reports = watch, reports

    def fence(self, group: str) -> None:
        """Deny every principal READ on the group on the source: its consumers cannot join or commit there.
        A source without an authorizer cannot hold the fence: SwitchError, and nothing changed."""
        problem = place_fence(self.source_admin, group_fence(group), self.plan.source.alias, f"group '{group}'",
                              self.fence_option)
        if problem:
            raise SwitchError(problem)

    def unfence(self, group: str) -> bool:
        """Remove the group's fence where one is in force (True if one was)."""
        return remove_fence(self.source_admin, group_fence(group))

    def switch(self, group: str, *, fence: bool = False, timeout_s: float | None = None) -> GroupSwitchReport:
        """Move `group` to the target at exactly the records it would have read next on the source."""
        timeout = timeout_s or self.plan.cutover.wait_timeout_s

        def wait(ready: GroupReadyToSwitch) -> None:
            wait_until_ready(ready, timeout, outcome="nothing was committed on the target",
                             hint="stop its consumers on the source, or fence it")

        answer = self._switch_when_ready(group, fence, wait)
        assert isinstance(answer, GroupSwitchReport)  # `wait` returns only once the group is ready
        return answer

    def switch_if_ready(self, group: str, *, fence: bool = False) -> GroupSwitchReport | Readiness:
        """One look at `group`: switched now (its report), switched before (its stored report), or what it still
        waits for (a Readiness not done). Refusals, and a group that can never switch, raise SwitchError as
        `switch` does; nothing was committed then."""

        def look(ready: GroupReadyToSwitch) -> Readiness | None:
            readiness = ready.check()
            if readiness.failed and readiness.detail.get("verdict") == SKIP:
                raise NothingToSwitch(readiness.failed)
            if readiness.failed:
                raise SwitchError(f"{readiness.failed}: nothing was committed on the target")
            return None if readiness.done else readiness

        return self._switch_when_ready(group, fence, look)

    def _switch_when_ready(self, group: str, fence: bool,
                           wait: Callable[[GroupReadyToSwitch], Readiness | None]) -> GroupSwitchReport | Readiness:
        """The stored report of a switch done before; else the group's readiness checked by `wait`, which returns
        what it still waits for (nothing committed) or None once it is ready: then committed and proven."""
        with self._one_report_store():
            done = self._before_switch(group, fence)
            if done is not None:
                return done
            waited = time.monotonic()
            ready = self._ready_check(group, fence)
            try:
                pending = wait(ready)
                return pending if pending is not None else self._commit_and_prove(group, ready, fence, waited)
            finally:
                ready.close()

    @contextmanager
    def _one_report_store(self) -> Iterator[None]:
        """The stored reports read through one store for the whole of a switch (a batch gives its own): a switch
        reads them before it starts, while it waits and before it stores its report, and a store of its own for each
        read would read the whole topic again, with a new consumer, each time."""
        if self.reports is not None:
            yield
            return
        self.reports = ReportStore(self.plan, self.target_config)
        try:
            yield
        finally:
            self.reports.close()
            self.reports = None

    def _before_switch(self, group: str, fence: bool) -> GroupSwitchReport | None:
        """The stored report of a switch finished before (a retried or cleared switch: committing again would move
        the group back), else None once the group may be switched (fenced first, with `fence`)."""
        if is_engine_group(group):
            raise SwitchError(f"{group!r} is a replication engine's own group: it is never switched")
        done = self.already_switched(group)
        if done is not None:
            return done
        if describe_group(self.target_admin, group).active:
            raise SwitchError(f"group {group!r} already has active members on the target: nothing was changed")
        if fence:
            self.fence(group)
        return None

    def _ready_check(self, group: str, fence: bool) -> GroupReadyToSwitch:
        return GroupReadyToSwitch(self.plan, self.source_config, self.target_config, group, fence=fence,
                                  watch=self.watch, reports=self.reports)

    def _commit_and_prove(self, group: str, ready: GroupReadyToSwitch, fence: bool,
                          waited: float) -> GroupSwitchReport:
        """Commit the translation `ready` saw done, read it back, prove every partition and store the report."""
        if ready.switched_before or ready.translation is None:  # switched by another run meanwhile
            repeated = self.already_switched(group)
            if repeated is None:
                raise SwitchError(f"group {group!r} already has active members on the target: nothing was committed")
            return repeated
        done_at = time.monotonic()
        switch_started = ready.stopped_at or done_at  # the group seen stopped on the source
        wait_empty, wait_copied = switch_started - waited, done_at - switch_started
        final, target_offsets = ready.final, dict(ready.translation.translated)
        self._before_commit(group)
        commit_offsets(self.target_admin, group, target_offsets)
        readback = committed_offsets(self.target_admin, group)
        wrong = {k: (v, readback.get(k)) for k, v in target_offsets.items() if readback.get(k) != v}
        if wrong:
            raise SwitchError(f"group {group!r}: the target reports other offsets than those committed: {wrong}")
        committed_s = time.monotonic() - switch_started
        partitions = self._prove_all([
            (t, p, final[(t, p)], target_topic, target_offsets[(target_topic, p)])
            for (t, p) in sorted(final)
            for target_topic in [self.policy.format_remote_topic(self.plan.source.alias, t)]
        ])
        report = GroupSwitchReport(group, f"{self.plan.source.alias}->{self.plan.target.alias}", fence, wait_empty,
                                   wait_copied, committed_s, time.monotonic() - switch_started, partitions)
        self._store(report)
        return report

    def _before_commit(self, group: str) -> None:
        """What a switch does on the target right before it commits the group's offsets there (the way back lifts the
        group's fence: `mirror_engine.failback`)."""

    def already_switched(self, group: str) -> GroupSwitchReport | None:
        """The stored report of `group`'s finished switch to the target while the group has not come back to the
        source since (no members there, the offsets it was switched at), else None (see `switched`)."""
        if not committed_offsets(self.target_admin, group) or describe_group(self.source_admin, group).active:
            return None
        stored = group_already_switched(self.plan, self.target_config, group,
                                        committed_offsets(self.source_admin, group), self.reports)
        return None if stored is None else GroupSwitchReport.from_dict(stored, repeated=True)

    def rollback(self, group: str, *, timeout_s: float | None = None) -> GroupSwitchReport:
        """Move `group` back to the source at the records it would have read next on the target, removing its fence
        where one is in force (a rollback needs no right the switch did not)."""
        timeout = timeout_s or self.plan.cutover.wait_timeout_s
        waited = time.monotonic()
        stopped = GroupStopped(self.plan, self.source_config, self.target_config, group, on="target")
        try:
            wait_until_ready(stopped, timeout, outcome="nothing was changed", hint="stop its consumers on the target")
        finally:
            stopped.close()
        started = time.monotonic()
        wait_empty = started - waited
        on_target = committed_offsets(self.target_admin, group)
        back: dict[tuple[str, int], int] = {}
        with FlowMapping(self.plan, self.target_config) as mapping:
            mapping.refresh()
            # The flow's own source topics, by their names on the target.
            source_of = {self.policy.format_remote_topic(self.plan.source.alias, t): t for t, _ in mapping.progress}
            for (target_topic, partition), offset in sorted(on_target.items()):
                source_topic = source_of.get(target_topic)
                source_offset = None if source_topic is None else mapping.reverse(source_topic, partition, offset)
                if source_topic is None or source_offset is None:
                    raise SwitchError(f"group {group!r}: target offset {offset} of {target_topic}[{partition}] has no "
                                      "source counterpart (a topic this flow does not copy, or records written to "
                                      "the target after the switch): nothing was changed")
                back[(source_topic, partition)] = source_offset
        self.unfence(group)
        commit_offsets(self.source_admin, group, back)
        committed_s = time.monotonic() - started
        partitions = self._prove_all([
            (t, p, back[(t, p)], target_topic, on_target[(target_topic, p)])
            for (t, p) in sorted(back)
            for target_topic in [self.policy.format_remote_topic(self.plan.source.alias, t)]
        ])
        report = GroupSwitchReport(group, f"{self.plan.target.alias}->{self.plan.source.alias}", False, wait_empty,
                                   0.0, committed_s, time.monotonic() - started, partitions)
        self._store(report)
        return report

    def _store(self, report: GroupSwitchReport) -> None:
        """Keep the report where any component reads it (the cockpit, a later rollback's reader)."""
        store = self.reports or ReportStore(self.plan, self.target_config)
        try:
            store.put("group-switch", report.group, json.loads(report.to_json()))
        finally:
            if self.reports is None:
                store.close()

    def _prove_all(self, rows: list[tuple[str, int, int, str, int]]) -> list[PartitionSwitch]:
        """Prove every (source topic, partition, source offset, target topic, target offset): the records before and
        at each position, read on both clusters at once (one consumer each), beside the source's ends (the lag)."""
        with ThreadPoolExecutor(max_workers=3) as pool:
            ends = pool.submit(list_offsets, self.source_admin, [TopicPartition(t, p) for t, p, *_ in rows],
                               OffsetSpec.latest())
            on_source = pool.submit(records_around_all, self.source_config, {(t, p): o for t, p, o, _, _ in rows})
            on_target = pool.submit(records_around_all, self.target_config, {(tt, p): o for _, p, _, tt, o in rows})
            source_ends, source_records, target_records = ends.result(), on_source.result(), on_target.result()
        rewrites = RecordRewrites.for_plan(self.plan)
        return [prove_partition(t, p, so, tt, to, source_ends[(t, p)] - so, source_records[(t, p)],
                                target_records[(tt, p)], rewrites.of(t) if rewrites else None)
                for t, p, so, tt, to in rows]
