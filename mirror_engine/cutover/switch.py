"""Cutover: switch a consumer group, or a topic's producers, from the source cluster to the target.

A group switch commits, on the target, the exact translation of the group's final source offsets and
then proves it: for each partition the record just before and the record at the committed position are
fetched from both clusters and their fingerprints (key, value, headers, timestamp) compared. A rollback
moves the group back the same way.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.cutover.switched import group_already_switched, stored_report
from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import (
    FENCE_OPTION,
    SHORT_FETCH_WAIT,
    admin_client,
    assign_known,
    commit_offsets,
    committed_offsets,
    consume_available,
    describe_group,
    group_fence,
    is_engine_group,
    list_offsets,
    place_fence,
    remove_fence,
    topic_write_fence,
)
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan


class SwitchError(RuntimeError):
    """The switch did not happen (or stopped before committing anything); the message says why."""


# ------------------------------------------------------------------ record fingerprints
def fingerprint(message: Message | None, with_timestamp: bool = True) -> str:
    """Short hash of a record's key, value, headers and timestamp ("-" for no record)."""
    if message is None:
        return "-"
    digest = hashlib.sha256()
    for part in (message.key(), message.value()):
        digest.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(4, "big") + part)
    for name, value in message.headers() or []:
        digest.update(name.encode() + b"\x00" + (b"\x00" if value is None else b"\x01" + value))
    if with_timestamp:
        digest.update(message.timestamp()[1].to_bytes(8, "big", signed=True))
    return digest.hexdigest()[:16]


def broker_timed(*messages: Message | None) -> bool:
    """A record of a LogAppendTime topic carries its broker's append time, never its producer's, and a v0 record
    (Kafka 0.9's format) none at all: a copy cannot keep the source's, so it is compared by key, value and headers."""
    return any(m is not None and m.timestamp()[0] in (TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE)
               for m in messages)


TopicPartitionKey = tuple[str, int]
PROOF_WINDOW = 64  # offsets read before each position, first


def records_around_all(config: dict[str, str], positions: dict[TopicPartitionKey, int],
                       timeout_s: float = 60.0) -> dict[TopicPartitionKey, tuple[Message | None, Message | None]]:
    """For each partition, the last committed record before its position and the first at or after it (None where
    there is none), read with one consumer for all partitions from `PROOF_WINDOW` offsets before each position.

    A partition whose window holds no record before the position (compaction or aborted transactions left none
    there) is looked up again alone, further back (`records_around`).
    """
    if not positions:
        return {}
    consumer = Consumer({**config, "group.id": "mirror-engine-proof", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         # A window starting before the log's start starts at its start.
                         "auto.offset.reset": "earliest", **SHORT_FETCH_WAIT})
    before: dict[TopicPartitionKey, Message] = {}
    at: dict[TopicPartitionKey, Message] = {}
    pending = set(positions)
    deadline = time.monotonic() + timeout_s
    try:
        assign_known(consumer, [TopicPartition(topic, partition, max(0, offset - PROOF_WINDOW))
                                for (topic, partition), offset in positions.items()])
        while pending:
            if time.monotonic() > deadline:
                raise SwitchError(f"reading the records around the switched positions took more than {timeout_s:.0f} "
                                  f"s ({', '.join(f'{t}[{p}]' for t, p in sorted(pending))} not read)")
            finished = []
            for message in consume_available(consumer, 0.2):
                key = (message.topic(), message.partition())
                if key not in pending:  # done: what a batch holds past the first record at the position is not read
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(key)
                        finished.append(key)
                    continue
                if message.offset() < positions[key]:
                    before[key] = message
                else:
                    at[key] = message
                    pending.discard(key)
                    finished.append(key)
            if finished:
                consumer.pause([TopicPartition(*key) for key in finished])
    finally:
        consumer.close()
    return {key: (before.get(key), at.get(key)) if key in before or offset <= PROOF_WINDOW
            else records_around(config, *key, offset) for key, offset in positions.items()}


def records_around(config: dict[str, str], topic: str, partition: int,
                   offset: int) -> tuple[Message | None, Message | None]:
    """The last committed record before `offset` and the first at or after it (None where there is none)."""
    consumer = Consumer({**config, "group.id": "mirror-engine-proof", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True, **SHORT_FETCH_WAIT})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
        window = PROOF_WINDOW
        while True:
            start = max(low, offset - window)
            before: Message | None = None
            at: Message | None = None
            consumer.assign([TopicPartition(topic, partition, start)])
            done = start >= high
            while not done:
                for message in consume_available(consumer, 0.2):
                    if message.error() is not None:
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            done = True
                        continue
                    if message.offset() < offset:
                        before = message
                    else:
                        at, done = message, True
                        break
            if before is not None or start <= low:
                return before, at
            window *= 16  # compaction or aborted transactions left no record in the window: look further back
    finally:
        consumer.close()


# ------------------------------------------------------------------ group switch
@dataclass
class PartitionSwitch:
    topic: str  # source topic
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int
    lag_at_switch: int  # records on the source after the group's position when it stopped
    before: str  # fingerprints, source / target
    at: str
    proof: str  # "ok", or what did not match


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


def _wait_group_empty(admin: AdminClient, group: str, cluster: str, timeout_s: float) -> float:
    started = time.monotonic()
    while (state := describe_group(admin, group)).active:
        if time.monotonic() - started > timeout_s:
            raise SwitchError(f"group {group!r} still has {state.members} member(s) on the {cluster} after "
                              f"{timeout_s:.0f} s: stop its consumers (or use --fence)")
        time.sleep(0.1)
    return time.monotonic() - started


class GroupSwitcher:
    """Switches the plan's consumer groups between the clusters."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 fence_option: str = FENCE_OPTION) -> None:
        self.plan = plan
        self.source_config, self.target_config = source_config, target_config
        self.source_admin, self.target_admin = admin_client(source_config), admin_client(target_config)
        self.policy = plan.policy()
        self.fence_option = fence_option  # how the user asked for a fence, named when the source cannot hold one

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
        if is_engine_group(group):
            raise SwitchError(f"{group!r} is a replication engine's own group: it is never switched")
        done = self.already_switched(group)
        if done is not None:  # a retried or cleared switch: committing again would move the group back
            return done
        if describe_group(self.target_admin, group).active:
            raise SwitchError(f"group {group!r} already has active members on the target: nothing was changed")
        if fence:
            self.fence(group)
        wait_empty = _wait_group_empty(self.source_admin, group, "source", timeout)
        switch_started = time.monotonic()
        final = committed_offsets(self.source_admin, group)
        if not final:
            raise SwitchError(f"group {group!r} has no committed offsets on the source: nothing to switch")
        unreplicated = sorted({t for t, _ in final if not self.plan.replicates_topic(t)})
        if unreplicated:
            raise SwitchError(f"group {group!r} reads topics this plan does not copy ({', '.join(unreplicated)}): "
                              "nothing was changed")
        with FlowMapping(self.plan, self.target_config) as mapping:
            translated, wait_copied = self._wait_until_copied(mapping, group, final, timeout)
        target_offsets = {(self.policy.format_remote_topic(self.plan.source.alias, t), p): offset
                          for (t, p), offset in translated.items()}
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

    def already_switched(self, group: str) -> GroupSwitchReport | None:
        """The stored report of `group`'s finished switch to the target while the group has not come back to the
        source since (no members there, the offsets it was switched at), else None (see `switched`)."""
        if not committed_offsets(self.target_admin, group) or describe_group(self.source_admin, group).active:
            return None
        stored = group_already_switched(self.plan, self.target_config, group,
                                        committed_offsets(self.source_admin, group))
        return None if stored is None else GroupSwitchReport.from_dict(stored, repeated=True)

    def rollback(self, group: str, *, timeout_s: float | None = None) -> GroupSwitchReport:
        """Move `group` back to the source at the records it would have read next on the target, removing its fence
        where one is in force (a rollback needs no right the switch did not)."""
        timeout = timeout_s or self.plan.cutover.wait_timeout_s
        wait_empty = _wait_group_empty(self.target_admin, group, "target", timeout)
        started = time.monotonic()
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
        store = ReportStore(self.plan, self.target_config)
        try:
            store.put("group-switch", report.group, json.loads(report.to_json()))
        finally:
            store.close()

    def _wait_until_copied(self, mapping: FlowMapping, group: str, final: dict[tuple[str, int], int],
                           timeout_s: float) -> tuple[dict[tuple[str, int], int], float]:
        """Refresh the mapping until every final offset translates (the engine copied past it)."""
        started = time.monotonic()
        while True:
            mapping.refresh()
            translated = {key: mapping.translate(*key, offset) for key, offset in final.items()}
            missing = {key: final[key] for key, value in translated.items() if value is None}
            if not missing:
                return {k: v for k, v in translated.items() if v is not None}, time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                behind = ", ".join(f"{t}[{p}] at {o} (copied to {mapping.copied_position(t, p)})"
                                   for (t, p), o in sorted(missing.items()))
                raise SwitchError(f"group {group!r}: the engine has not copied past the group's offsets after "
                                  f"{timeout_s:.0f} s: {behind}; nothing was committed on the target")
            # The engine stores its progress every engine.progress_interval_s: look again soon, cheaply (only
            # what it wrote since is read).
            time.sleep(0.05)

    def _prove_all(self, rows: list[tuple[str, int, int, str, int]]) -> list[PartitionSwitch]:
        """Prove every (source topic, partition, source offset, target topic, target offset): the records before and
        at each position, read on both clusters at once (one consumer each), beside the source's ends (the lag)."""
        with ThreadPoolExecutor(max_workers=3) as pool:
            ends = pool.submit(list_offsets, self.source_admin, [TopicPartition(t, p) for t, p, *_ in rows],
                               OffsetSpec.latest())
            on_source = pool.submit(records_around_all, self.source_config, {(t, p): o for t, p, o, _, _ in rows})
            on_target = pool.submit(records_around_all, self.target_config, {(tt, p): o for _, p, _, tt, o in rows})
            source_ends, source_records, target_records = ends.result(), on_source.result(), on_target.result()
        return [_proof(t, p, so, tt, to, source_ends[(t, p)] - so, source_records[(t, p)], target_records[(tt, p)])
                for t, p, so, tt, to in rows]


def _proof(topic: str, partition: int, source_offset: int, target_topic: str, target_offset: int, lag: int,
           source: tuple[Message | None, Message | None], target: tuple[Message | None, Message | None]
           ) -> PartitionSwitch:
    """Compare the records before and at the position on both clusters."""
    (source_before, source_at), (target_before, target_at) = source, target
    timed = not broker_timed(source_before, source_at, target_before, target_at)
    before = (fingerprint(source_before, timed), fingerprint(target_before, timed))
    at = (fingerprint(source_at, timed), fingerprint(target_at, timed))
    problems = []
    if before[0] != before[1]:
        problems.append("the records before differ")
    # A record at the source position that is not on the target yet (still being copied) proves nothing
    # wrong; a different record there does.
    if target_at is not None and at[0] != at[1]:
        problems.append("the records at the position differ")
    return PartitionSwitch(topic, partition, source_offset, target_topic, target_offset, lag,
                           f"{before[0]}/{before[1]}", f"{at[0]}/{at[1]}", "; ".join(problems) or "ok")


# ------------------------------------------------------------------ producer switch
@dataclass
class ProducerSwitchReport:
    topic: str
    target_topic: str
    fenced: bool
    wait_idle_s: float
    wait_drain_s: float
    end_offsets: dict[int, int]  # source end offset per partition at the switch
    copied: dict[int, int]  # the engine's copied position per partition, equal to the end offsets

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def render(self) -> str:
        rows = "\n".join(f"  {self.topic}[{p}]: source end {end}, copied {self.copied.get(p)}"
                         for p, end in sorted(self.end_offsets.items()))
        return (f"producers of {self.topic} can switch to {self.target_topic} on the target"
                f"{' (writes on the source are fenced)' if self.fenced else ''}: the source was idle after "
                f"{self.wait_idle_s:.1f} s and fully copied {self.wait_drain_s:.1f} s later; the engine no longer "
                f"copies it\n{rows}")


def switch_producers(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], topic: str,
                     *, fence: bool = False, idle_s: float | None = None, timeout_s: float | None = None,
                     fence_option: str = FENCE_OPTION) -> ProducerSwitchReport:
    """Wait until nothing more is written to `topic` on the source (or fence writes), let the engine copy
    everything, then tell it to stop copying the topic so that producers may write to the target."""
    from mirror_engine.flow import ControlChannel

    if not plan.replicates_topic(topic):
        raise SwitchError(f"topic {topic!r} is not copied by plan '{plan.name}': nothing was changed")
    timeout = timeout_s or plan.cutover.wait_timeout_s
    idle = plan.cutover.producer_idle_s if idle_s is None else idle_s
    source_admin = admin_client(source_config)
    metadata = source_admin.list_topics(topic, timeout=15).topics.get(topic)
    if metadata is None or metadata.error is not None:
        raise SwitchError(f"topic {topic!r} does not exist on the source")
    partitions = [TopicPartition(topic, p) for p in sorted(metadata.partitions)]
    control = ControlChannel(plan, target_config)
    try:
        control.load()
    finally:
        control.close()
    if topic in control.switched_topics:  # a retried or cleared switch: prove it, change nothing
        return _producers_already_switched(plan, source_admin, target_config, topic, partitions)
    if fence:
        problem = place_fence(source_admin, topic_write_fence(topic), plan.source.alias, f"topic '{topic}'",
                              fence_option)
        if problem:
            raise SwitchError(problem)
    started = time.monotonic()
    ends = list_offsets(source_admin, partitions, OffsetSpec.latest())
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < idle:
        time.sleep(min(0.5, idle))
        now = list_offsets(source_admin, partitions, OffsetSpec.latest())
        if now != ends:
            ends, quiet_since = now, time.monotonic()
        if time.monotonic() - started > timeout:
            raise SwitchError(f"producers kept writing to {topic} on the source for {timeout:.0f} s: stop them "
                              "(or use --fence)")
    wait_idle = time.monotonic() - started
    drained = time.monotonic()
    with FlowMapping(plan, target_config) as mapping:
        while True:
            mapping.refresh()
            copied = {p.partition: mapping.copied_position(topic, p.partition) for p in partitions}
            if all((copied[p] or -1) >= ends[(topic, p)] for p in copied):
                break
            if time.monotonic() - drained > timeout:
                raise SwitchError(f"the engine did not copy {topic} to its end within {timeout:.0f} s: "
                                  f"copied {copied}, source ends {ends}")
            time.sleep(0.2)
    ControlChannel(plan, target_config).switch_topic(topic)
    report = ProducerSwitchReport(topic, plan.policy().format_remote_topic(plan.source.alias, topic), fence, wait_idle,
                                  time.monotonic() - drained, {p: ends[(topic, p)] for p in copied},
                                  {p: int(c or 0) for p, c in copied.items()})
    ReportStore(plan, target_config).put("producer-switch", topic, json.loads(report.to_json()))
    return report


def _producers_already_switched(plan: MigrationPlan, source_admin: AdminClient, target_config: dict[str, str],
                                topic: str, partitions: list[TopicPartition]) -> ProducerSwitchReport:
    """The report of a producer switch recorded before, once the source is seen to hold nothing the engines did
    not copy before they stopped; SwitchError naming what it holds otherwise."""
    ends = {p: end for (_t, p), end in list_offsets(source_admin, partitions, OffsetSpec.latest()).items()}
    with FlowMapping(plan, target_config) as mapping:
        mapping.refresh()
        copied = {p: int(mapping.copied_position(topic, p) or 0) for p in ends}
    behind = {p: (copied[p], end) for p, end in sorted(ends.items()) if copied[p] < end}
    if behind:
        raise SwitchError(
            f"topic {topic} was switched to the target before (the engines no longer copy it), but the source "
            f"holds {sum(end - c for c, end in behind.values()):,} record(s) written after the copy stopped ("
            + ", ".join(f"{topic}[{p}] copied to {c:,} of {end:,}" for p, (c, end) in behind.items())
            + "): a producer still writes to the source; move it to the target, and copy those records by hand "
              "if they are needed. Nothing was changed")
    stored = stored_report(plan, target_config, "producer-switch", topic)
    if stored is not None and stored.get("end_offsets") == {str(p): e for p, e in ends.items()}:
        fields = {k: v for k, v in stored.items() if k in ProducerSwitchReport.__dataclass_fields__}
        return ProducerSwitchReport(**{**fields, "end_offsets": ends, "copied": copied})
    # Stopped after the switch was recorded and before its report was: store it now.
    report = ProducerSwitchReport(topic, plan.policy().format_remote_topic(plan.source.alias, topic), False, 0.0,
                                  0.0, ends, copied)
    ReportStore(plan, target_config).put("producer-switch", topic, json.loads(report.to_json()))
    return report


def unfence_producers(source_config: dict[str, str], topic: str) -> bool:
    """Remove the topic's write fence where one is in force (True if one was)."""
    return remove_fence(admin_client(source_config), topic_write_fence(topic))

