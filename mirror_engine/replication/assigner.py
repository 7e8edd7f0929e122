"""The partition assigner: which partitions the engine copies and where each starts.

A partition with stored progress starts there (after reconciling the target's tail, see `reconcile`),
unless the source lost records before it (a gap: the partition stops, loudly, unless the plan allows
gaps). One without progress starts at the plan's start, or at its beginning when it appeared after the
engine started (those positions: `start_positions`). New partitions of the plan's backfill topics are held
while Spark copies their history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.flow import ControlChannel, PartitionProgress, ProgressFollower, load_progress
from mirror_engine.kafka import (
    TopicListing,
    TopicPartitionKey,
    admin_client,
    at_once,
    list_offsets,
    partition_bounds,
    topic_listing,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.copier import RecordCopier
from mirror_engine.replication.delivery import DeliveryMode
from mirror_engine.replication.faults import Faults
from mirror_engine.replication.limits_gate import LimitsGate
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.replication.reconcile import Reconciled
from mirror_engine.replication.side_records import SideRecordWriter
from mirror_engine.replication.start_positions import StartPositions, gap
from mirror_engine.replication.target_topics import TargetTopics

log = logging.getLogger("mirror_engine.replication.engine")


@dataclass
class SourceAhead:
    """What `PartitionAssigner.read_ahead` read of the source as the engine starts."""

    ids: dict[str, str] = field(default_factory=dict)  # topic -> its id
    bounds: dict[TopicPartitionKey, tuple[int, int]] = field(default_factory=dict)  # (earliest, latest)
    partitions: set[TopicPartitionKey] = field(default_factory=set)  # every partition of the plan's topics


class PartitionAssigner:
    def __init__(self, plan: MigrationPlan, clients: EngineClients, states: dict[TopicPartitionKey, PartitionState],
                 control: ControlChannel, side: SideRecordWriter, copier: RecordCopier, delivery: DeliveryMode,
                 faults: Faults, lower_batch_cap: Callable[[int, str], None]) -> None:
        self.plan = plan
        self.clients = clients
        self.states = states
        self.control = control
        self.side = side
        self.copier = copier
        self.delivery = delivery
        self.faults = faults
        self.targets = TargetTopics(plan, clients, lower_batch_cap)
        self.limits = LimitsGate(self.targets, states, lambda: clients.target_admin)
        self.positions = StartPositions(plan, clients, self.targets, side, delivery, copier.rewrite_of)
        self.stored: dict[TopicPartitionKey, PartitionProgress] = {}
        self.source_topics: list[str] = []
        self.initial_partitions: set[TopicPartitionKey] = set()  # those there when this engine started
        # Partitions the group gave this worker before their target partition existed: assigned paused at their
        # beginning, copied once a refresh prepared the target (`assign_awaiting`).
        self.awaiting_target: set[TopicPartitionKey] = set()
        self.ahead = SourceAhead()  # see `read_ahead`
        # The progress topic, followed from the engine's start: a rebalance reads only what was stored since.
        self.progress = ProgressFollower(clients.target_config, side.topics.progress)

    def load_progress(self, follow: bool) -> None:
        """The flow's stored progress, read as the engine starts (after its delivery fenced a predecessor).
        `follow`: keep reading what is stored (a worker, whose rebalances need the others' progress); else the
        reader closes until a later `reload_progress` (it would hold what it fetched meanwhile)."""
        if not follow:
            # The single engine has no rebalance to serve: one read of the whole topic to its stable end, with a
            # reader closed after it (a backfill's `reload_progress` opens the follower).
            self.stored = load_progress(self.clients.target_config, self.side.topics.progress)
            return
        self.progress.catch_up()
        self.stored = self.progress.progress_of()

    def read_ahead(self, listed: Future[TopicListing] | None = None) -> None:
        """What the assignment made as the engine starts will need, read while the target is prepared (by the single
        engine, which then assigns itself every partition of the plan): the plan's partitions on the source, their
        bounds and their topics' ids; the consumer's metadata of those topics (the producers need none asked then:
        `TargetTopics.starting_from`); and, beside the rest of the start, their target topics' record limits
        (`LimitsGate.read_ahead`). `forget_ahead` once that assignment is made.

        The partitions are listed by the consumer: the one listing of the whole source also teaches it the leaders,
        and is the preparation's listing of the source too, given to `listed` as soon as it is read (a listing by
        another client beside it cost the brokers and this process a second listing of every partition: 0.1-0.2 s
        of CPU at 10,000 partitions)."""
        try:
            cluster = self.clients.consumer.list_topics(timeout=15)
        except BaseException as error:
            if listed is not None:
                listed.set_exception(error)
            raise
        if listed is not None:
            listed.set_result(topic_listing(cluster))
        metadata = cluster.topics
        topics = sorted(name for name in metadata if self.plan.replicates_topic(name))
        self.limits.read_ahead(admin_client(self.clients.target_config), [self.targets.name(topic) for topic in topics])
        keys = [TopicPartition(topic, p) for topic in topics for p in metadata[topic].partitions]
        ids, bounds = at_once(lambda: _topic_ids(admin_client(self.clients.source_config), topics),
                              lambda: partition_bounds(self.clients.source_config, keys, timeout_s=60))
        self.ahead = SourceAhead(ids, bounds, {(tp.topic, tp.partition) for tp in keys})

    def forget_ahead(self) -> None:
        self.ahead = SourceAhead()
        self.targets.starting_from(None)

    def follow(self, source_topics: list[str], *, initial: bool = False) -> None:
        """Copy these source topics (those the target is ready for); `initial`: as the engine starts, when the
        partitions there are those a plan's start applies to (partitions found later start at their beginning)."""
        self.source_topics = source_topics
        self.targets.flow_topics = len(source_topics)
        if initial:
            self.initial_partitions = self.plan_partitions()

    def managed_topics(self) -> frozenset[str]:
        """The target topics this flow writes: those it copies now and those it stored progress for."""
        return frozenset(state.target_topic for state in self.states.values()) | frozenset(
            self.targets.name(topic) for topic, _ in self.stored)

    def plan_partitions(self) -> set[TopicPartitionKey]:
        """Every source partition of the plan's topics, as the source shows them now (or as `read_ahead` just read)."""
        if self.ahead.partitions:
            copied = set(self.source_topics)
            return {key for key in self.ahead.partitions if key[0] in copied}
        metadata = self.clients.source_admin.list_topics(timeout=15).topics
        return {(topic, p) for topic in self.source_topics if topic in metadata for p in metadata[topic].partitions}

    def reload_progress(self, keys: list[TopicPartitionKey] | None = None, topics: set[str] | None = None) -> None:
        """Read the stored progress of these partitions (or of these topics) again: another worker, or the
        backfill, may have moved it. Only what was stored since the last read is read (`ProgressFollower`)."""
        self.progress.catch_up()
        latest = self.progress.progress_of(keys)
        for key in keys if keys is not None else [key for key in latest if key[0] in (topics or ())]:
            if key in latest:
                self.stored[key] = latest[key]
            else:
                self.stored.pop(key, None)

    def assign_new(self, offered: list[TopicPartitionKey] | None = None) -> None:
        """Start copying partitions: alone, every partition of the plan not copied yet; as a worker, the
        partitions of the units the group gave it (`offered`): those that cannot be copied yet are held, paused."""
        if offered is None:
            wanted = {key for key in self.plan_partitions() if key[0] not in self.control.switched_topics}
            new = self.targets.existing(sorted(wanted - set(self.states)))
            held = self.hold_for_backfill(new)
            new = [key for key in new if key not in held]
        else:  # the worker leaves out switched topics and those waiting for their backfill
            offered_new = sorted(set(offered) - set(self.states))
            new = self.targets.existing(offered_new)
            self._await_target(sorted(set(offered_new) - set(new)))
        self._start_copying(new, offered)

    def assign_awaiting(self) -> None:
        """Copy the partitions held for their target partition, those the target has now (a worker, after a
        refresh prepared the target)."""
        ready = self.targets.existing(sorted(self.awaiting_target)) if self.awaiting_target else []
        if ready:
            self.awaiting_target.difference_update(ready)
            log.info("%d partition(s) held for their target partition: on the target now, copying them", len(ready))
            self._start_copying(ready, ready, assigned=True)

    def forget_awaiting(self, keys: list[TopicPartitionKey]) -> None:
        """The group took these partitions back."""
        self.awaiting_target.difference_update(keys)

    def _await_target(self, keys: list[TopicPartitionKey]) -> None:
        """The group gave these partitions, whose target partition does not exist yet: assigned (the group's
        callback must assign all it offers) but paused, until a refresh prepared the target."""
        if not keys:
            return
        # Where they will start (a partition the target lacks is new: from its beginning, or from what another
        # worker stored), so that the seek made once the target has them moves nothing.
        waiting = [TopicPartition(topic, partition, progress.position if (progress := self.stored.get(
            (topic, partition))) else OFFSET_BEGINNING) for topic, partition in keys]
        self.clients.consumer.incremental_assign(waiting)
        self.clients.consumer.pause(waiting)
        self.awaiting_target.update(keys)

    def _start_copying(self, new: list[TopicPartitionKey], offered: list[TopicPartitionKey] | None,
                       assigned: bool = False) -> None:
        """`assigned`: the consumer holds these partitions already, paused (`_await_target`): moved to their
        start and resumed instead of assigned."""
        if not new:
            return
        topics = sorted({topic for topic, _ in new})
        targets, name = self.targets, self.targets.name
        # What the engine's start read of the target already (`TargetTopics.starting_from`) is not asked again.
        target_ends = {(name(t), p): targets.at_start.ends[(name(t), p)] for t, p in new
                       if (name(t), p) in targets.at_start.ends}
        ends_asked = [TopicPartition(name(t), p) for t, p in new if (name(t), p) not in target_ends]
        ahead = self.ahead  # and what `read_ahead` read of the source
        ids = {topic: ahead.ids[topic] for topic in topics if topic in ahead.ids}
        bounds = {key: ahead.bounds[key] for key in new if key in ahead.bounds}
        # The rest at once, each through clients of its own. Longer than the default wait: either cluster may still
        # be electing the leaders of topics just created (thousands of partitions on a busy broker take more than the
        # default 15 s).
        ids_read, bounds_read, ends_read = at_once(
            lambda: _topic_ids(admin_client(self.clients.source_config), [t for t in topics if t not in ids]),
            lambda: partition_bounds(self.clients.source_config,
                                     [TopicPartition(*key) for key in new if key not in bounds], timeout_s=60),
            lambda: list_offsets(admin_client(self.clients.target_config), ends_asked, OffsetSpec.latest(),
                                 timeout_s=60))
        ids.update(ids_read)
        bounds.update(bounds_read)
        target_ends.update(ends_read)
        earliest = {key: bound[0] for key, bound in bounds.items()}
        latest = {key: bound[1] for key, bound in bounds.items()}
        self.targets.producers_know(new)
        starts = self.positions.fresh([key for key in new if key not in self.stored], self.initial_partitions,
                                      earliest, latest, target_ends)
        gaps = {key: gap(self.stored.get(key), ids.get(key[0], ""), earliest[key], latest[key]) for key in new}
        reconciled = self.positions.reconcile([key for key in new if not gaps[key]], self.stored, target_ends)
        assignment, stopped = [], []
        for topic, partition in new:
            key = (topic, partition)
            progress = self.stored.get(key)
            target_end = target_ends[(self.targets.name(topic), partition)]
            position = progress.position if progress else starts[key]
            state = PartitionState(topic, partition, self.targets.name(topic), position, ids.get(topic, ""),
                                   offset_syncs=self.side.offset_syncs, on_failure=self.copier.fail_partition,
                                   rewrite=self.copier.rewrite_of(topic))
            state.target_position = progress.target_position if progress and progress.target_position >= 0 \
                else target_end
            state.end_known = latest[key]  # the status's lag until the consumer's first fetch of it
            self.states[key] = state
            outcome = reconciled.get(key)
            if isinstance(outcome, Reconciled):
                position = self.positions.go_on_after(state, outcome)
            elif outcome is not None:
                state.reconcile_fallback = outcome
            if gaps[key]:
                if not self.plan.engine.allow_gaps:
                    state.failed = self.faults.last_error = f"{topic}[{partition}]: {gaps[key]}"
                    log.error("%s", state.failed)
                    if offered is not None:  # the group gave its unit to this worker: hold it, paused
                        stopped.append(TopicPartition(topic, partition, position))
                    continue
                log.warning("%s[%d]: %s; skipping it because engine.allow_gaps is set", topic, partition, gaps[key])
                state.start_position = state.produced_next = state.acked_next = earliest[key]
                position = earliest[key]
            assignment.append(TopicPartition(topic, partition, position))
        consumer = self.clients.consumer
        if assignment or stopped:
            # Learn the topics' leaders first: else the first fetch waits for librdkafka's scan of unknown
            # topics, once a second (measured: 0.75 s before the first record, 0.05 s after asking). (A worker's
            # group callbacks are its group member's, another consumer: the copy's may be called from them.)
            if assigned:
                for partition in assignment + stopped:
                    consumer.seek(partition)
                if assignment:
                    consumer.resume(assignment)
            else:
                if not set(topics) <= set(ahead.ids):  # `read_ahead` asked it then
                    _learn_leaders(consumer, topics)
                consumer.incremental_assign(assignment + stopped)
                if stopped:
                    consumer.pause(stopped)
            log.info("copying %d partition(s) of %d topic(s)", len(assignment), len(topics))
        # Only where nothing is stored yet: a partition with stored progress is the flow's already, and waiting for
        # the target to acknowledge its start again would delay every restart's first record.
        fresh = [key for key in new if key not in self.stored]
        if fresh:
            self.delivery.store_start(fresh)
        # Their records are copied once their target topics' record limits are known, each topic's as it comes
        # (read beside the rest of the start or asked now): the copy holds them until then.
        self.limits.wait_for([self.states[key] for key in new])

    def hold_for_backfill(self, new: list[TopicPartitionKey]) -> set[TopicPartitionKey]:
        """New partitions of the plan's backfill topics wait while Spark copies their history.

        The first time the flow meets such a topic it records, in the control topic, each partition's
        source end B and target end; the backfill copies [earliest, B), stores the partitions' progress
        at B and marks the topic done, after which they are copied from B like any other partition.
        """
        fresh: dict[str, list[int]] = {}
        for topic, partition in new:
            snapshot = self.control.backfills.get(topic)
            if (topic, partition) not in self.stored and self.plan.backfills_topic(topic) and \
                    (snapshot is None or snapshot.state != "done"):
                fresh.setdefault(topic, []).append(partition)
        held: set[TopicPartitionKey] = set()
        for topic, partitions in fresh.items():
            snapshot = self.control.backfills.get(topic)
            missing = [p for p in partitions if snapshot is None or p not in snapshot.partitions]
            if missing:
                self.targets.describe([topic])
                target = self.targets.name(topic)
                ends = list_offsets(self.clients.source_admin, [TopicPartition(topic, p) for p in missing],
                                    OffsetSpec.latest())
                target_ends = list_offsets(self.clients.target_admin, [TopicPartition(target, p) for p in missing],
                                           OffsetSpec.latest())
                recorded = dict(snapshot.partitions) if snapshot else {}
                recorded.update({p: (ends[(topic, p)], target_ends[(target, p)]) for p in missing})
                self.control.hold_for_backfill(topic, recorded)
                log.info("holding %d partition(s) of %s for the Spark backfill of its history up to %s", len(missing),
                         topic, {p: recorded[p][0] for p in sorted(missing)})
            held.update((topic, p) for p in partitions)
        return held


def _topic_ids(admin: AdminClient, topics: list[str]) -> dict[str, str]:
    if not topics:
        return {}
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=15)
    return {name: str(future.result().topic_id) for name, future in futures.items()}


def _learn_leaders(consumer: Consumer, topics: list[str]) -> None:
    """The consumer's metadata of `topics` (their leaders), asked in one request: one topic alone, several with
    every topic of the cluster (librdkafka asks for one topic or all of them), never one request per topic."""
    if len(topics) == 1:
        consumer.list_topics(topics[0], timeout=15)
    elif topics:
        consumer.list_topics(timeout=15)
