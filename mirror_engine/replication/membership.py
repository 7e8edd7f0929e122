"""Membership: how an engine comes to copy partitions, alone or as one worker of a group.

- `SingleProcess` (`mirror-engine run`) assigns itself every partition of the plan.
- `WorkerGroup` (`mirror-engine worker`) joins the flow's group `mirror-engine.<plan>` on the target, over the flow's
  work units (`mirror_engine.flow.work_units`), with cooperative-sticky assignment, and copies the source partitions
  of the units Kafka's group protocol gives it; it stores the progress of partitions it gives up and reads the
  progress of partitions it takes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirror_engine.flow import engine_group_id, ensure_work_units, work_unit, work_units_topic
from mirror_engine.kafka import TopicPartitionKey, group_description, hold_assignment, holds_no_groups, leave_group
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.assigner import PartitionAssigner
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.delivery import DeliveryMode
from mirror_engine.replication.faults import EngineError, Faults
from mirror_engine.replication.partition_state import PartitionState

log = logging.getLogger("mirror_engine.replication.engine")


class Membership:
    """What both memberships share: giving partitions up after storing their progress."""

    mode = ""
    # Another member of the flow may be preparing the target at the same moment: look again on a conflict.
    prepares_beside_others = False
    # Others store the progress of partitions this member may be given: follow the progress topic as it grows.
    follows_progress = False
    # Assigns itself every partition as it starts, as the only writer of the flow's target partitions: the target as
    # the start-up just read it is still the target then (a worker's partitions come later, others write meanwhile).
    takes_all_at_start = False
    # Its group's callbacks are served between the copy's batches (`serve`).
    serves_group = False

    def __init__(self, plan: MigrationPlan, worker_id: str, clients: EngineClients, assigner: PartitionAssigner,
                 delivery: DeliveryMode, states: dict[TopicPartitionKey, PartitionState], faults: Faults) -> None:
        self.plan = plan
        self.worker_id = worker_id
        self.clients = clients
        self.assigner = assigner
        self.delivery = delivery
        self.states = states
        self.faults = faults
        self.records_released = 0  # records copied in partitions since given up

    @staticmethod
    def transaction_member(worker_id: str) -> str:
        """The part of the transactional id that names this member across restarts (exactly-once mode)."""
        raise NotImplementedError

    def release(self, keys: list[TopicPartitionKey]) -> None:
        """Store the final progress of these partitions and stop copying them (the caller unassigns them)."""
        if not keys:
            return
        self.delivery.release(keys)
        for key in keys:
            self.records_released += self.states.pop(key).records_copied

    def paused(self, keys: list[TopicPartitionKey]) -> list[TopicPartition]:
        """Those of these partitions the engine paused in the consumer: stopped ones (`Copier.fail_partition`, a gap)
        and those waiting for their target partition. Asked before they are released (their states dropped)."""
        awaiting = self.assigner.awaiting_target
        return [TopicPartition(*key) for key in keys
                if key in awaiting or ((state := self.states.get(key)) is not None and state.failed)]

    def unassign(self, keys: list[TopicPartitionKey], paused: list[TopicPartition]) -> None:
        """Stop fetching these partitions. The `paused` ones are resumed first: librdkafka keeps a partition's pause
        across its unassignment, so one given up paused came back paused the next time the group gave it to this
        consumer, and was never fetched again (a worker held such partitions behind for good). Only those: librdkafka's
        resume() looks each partition's topic up in a list of the client's topics and waits for its main thread, GIL
        held; resuming all 10,000 partitions over 1,000 topics held the whole engine about 4 s."""
        if paused:
            self.clients.consumer.resume(paused)
        if keys:
            self.clients.consumer.incremental_unassign([TopicPartition(*key) for key in keys])

    def resume_backfilled(self, topics: set[str], stopped: bool) -> None:
        """The backfill of these topics stored their progress: copy them on from there."""
        if not topics:
            return
        self.assigner.reload_progress(topics=topics)
        log.info("backfill done for %s: copying on from the backfill's end", ", ".join(sorted(topics)))
        if not stopped:
            self.acquire()

    def check_no_other_kind_runs(self) -> None:
        raise NotImplementedError

    def acquire(self) -> None:
        """Start copying what this member is due."""
        raise NotImplementedError

    def release_all(self) -> None:
        raise NotImplementedError

    def serve(self) -> None:
        """Between the copy's batches, when `serves_group`."""

    def stop_topics(self, topics: set[str]) -> None:
        """Copy these topics no more (their final progress stored)."""
        keys = [key for key in self.states if key[0] in topics]
        paused = self.paused(keys)
        self.release(keys)
        self.unassign(keys, paused)

    def leave(self) -> None:
        """At shutdown, before the final progress is stored."""

    def close(self) -> None:
        """At shutdown, after the final progress is stored."""


class SingleProcess(Membership):
    mode = "single"
    takes_all_at_start = True

    @staticmethod
    def transaction_member(worker_id: str) -> str:
        # One single engine per flow (it refuses to start beside workers): a restarted one, whatever its host
        # or pid, fences the transaction its killed predecessor left open.
        return "single"

    def check_no_other_kind_runs(self) -> None:
        """Beside workers of the same flow, a single engine would copy their partitions twice."""
        group = engine_group_id(self.plan)
        if holds_no_groups(self.clients.target_admin, 10):  # so no workers either
            return
        try:
            description = group_description(self.clients.target_admin, group, 10)
        except KafkaException as error:  # no DESCRIBE on the group: nothing to learn here
            log.debug("could not describe group %s: %s", group, error)
            return
        if description.members:
            raise EngineError(f"{len(description.members)} worker(s) of this flow run (group {group} on the target): "
                              "a single engine beside them would copy their partitions twice; start another "
                              "`mirror-engine worker` instead, or stop them first")

    def acquire(self) -> None:
        self.assigner.assign_new()

    def release_all(self) -> None:
        keys = list(self.states)
        paused = self.paused(keys)
        self.release(keys)
        self.unassign(keys, paused)

    def close(self) -> None:
        self.clients.consumer.close()


class WorkerGroup(Membership):
    """The flow's workers share its partitions unit by unit (`mirror_engine.flow.work_units`): a consumer of this
    worker's own is a member of the flow's group on the target, subscribed to the units topic (its partitions are
    assigned paused: they hold no records); the copy's consumer is assigned the source partitions of the units held.
    The group's callbacks run on the copy's thread, in `serve`. A giving up is done inside the callback (the
    partitions' progress must be stored before another worker takes their units); a taking after it, once the
    group's round is over: the client sends no heartbeat while a callback runs, and taking 5,000 partitions (their
    stored progress, offsets and target ends read) took 3.4-7 s at 10,000 partitions, near the default session."""

    mode = "worker"
    prepares_beside_others = True
    follows_progress = True
    serves_group = True

    @staticmethod
    def transaction_member(worker_id: str) -> str:
        return worker_id

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._group: Consumer | None = None  # the member, while this worker is in the group
        self.units = 0  # the flow's units (the units topic's partitions)
        self.held: set[int] = set()  # the units the group gave this worker
        self._to_take: set[int] = set()  # of those, the units whose partitions are not taken yet (`serve`)
        self._waiting_backfill: set[str] = set()  # topics whose new partitions wait for their backfill

    def check_no_other_kind_runs(self) -> None:
        """Beside a single engine of the same flow, workers would copy its partitions twice."""
        from mirror_engine.observe import is_live, read_worker_statuses

        singles = [s["worker"] for s in read_worker_statuses(self.plan, self.clients.target_config, window_s=60)
                   if s["mode"] == "single" and is_live(s) and s["worker"] != self.worker_id]
        if singles:
            raise EngineError(f"a single engine of this flow runs ({', '.join(singles)}: `mirror-engine run`); "
                              "workers beside it would copy its partitions twice: stop it first")

    def acquire(self) -> None:
        """Join the group (once), then copy what the units held call for now: partitions added since, topics whose
        backfill is done, the flow started again."""
        assigner = self.assigner
        partitions = assigner.plan_partitions()
        self._waiting_backfill = {topic for topic, _ in assigner.hold_for_backfill(
            sorted(key for key in partitions if key not in assigner.stored))}
        assigner.assign_awaiting()
        if self._group is None:
            self._join(len(partitions))
        elif self.held:
            self._copy_units(self.held, partitions)

    def serve(self) -> None:
        """The group's callbacks (units given or taken) and its heartbeats' outcome, between the copy's batches."""
        if self._group is not None:
            self._group.poll(0)  # the units' partitions are paused: nothing is fetched
        if self._to_take:
            self._take()

    def release_all(self) -> None:
        self._leave_group()

    def leave(self) -> None:
        self._leave_group()

    def close(self) -> None:
        self.clients.consumer.close()

    def _join(self, partitions: int) -> None:
        engine = self.plan.engine
        self.units = ensure_work_units(self.clients.target_admin, self.plan, partitions)
        session_ms = int(engine.session_timeout_s * 1000)
        self._group = Consumer({
            **self.clients.target_config, "group.id": engine_group_id(self.plan), "client.id": self.worker_id,
            "enable.auto.commit": False, "auto.offset.reset": "latest",
            "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": session_ms,
            # A rebalance reaches every member with its next heartbeat, and a cooperative one takes two rounds
            # (the revocation, then the assignment): at most a second apart, whatever the session.
            "heartbeat.interval.ms": int(min(1000, session_ms // 4)),
        })
        self._group.subscribe([work_units_topic(self.plan)], on_assign=self._on_assign, on_revoke=self._on_revoke,
                              on_lost=self._on_lost)
        log.info("worker %s subscribed to the flow's %d work unit(s) (%d topic(s) to copy)", self.worker_id,
                 self.units, len(self.assigner.source_topics))

    def _leave_group(self) -> None:
        """Give every partition up (their progress stored first), then leave: the others take the units at once."""
        self._give_up(set(self.held))
        if self._group is not None:
            leave_group(self._group)
            self._group = None

    def _copy_units(self, units: set[int], partitions: set[TopicPartitionKey] | None = None
                    ) -> list[TopicPartitionKey]:
        """Copy the plan's source partitions (`partitions`, or as the source shows them now) of these units that
        this worker should copy and does not yet."""
        assigner = self.assigner
        copied = set(assigner.source_topics) - assigner.control.switched_topics - self._waiting_backfill
        offered = sorted(key for key in (assigner.plan_partitions() if partitions is None else partitions)
                         if key[0] in copied and key not in self.states and key not in assigner.awaiting_target
                         and work_unit(*key, self.units) in units)
        if offered:
            # Their previous owner stored its progress before giving them up: read it now.
            self.assigner.reload_progress(offered)
            self.assigner.assign_new(offered)
        return offered

    def _drop_units(self, units: set[int]) -> tuple[list[TopicPartitionKey], list[TopicPartition]]:
        """These units are this worker's no more: their partitions (copied, or waiting for their target), and those
        of them the engine paused."""
        self.held -= units
        self._to_take -= units
        keys = [key for key in [*self.states, *self.assigner.awaiting_target] if work_unit(*key, self.units) in units]
        paused = self.paused(keys)
        self.assigner.forget_awaiting(keys)
        return keys, paused

    def _give_up(self, units: set[int]) -> list[TopicPartitionKey]:
        """Store the progress of the partitions of these units and stop copying them."""
        keys, paused = self._drop_units(units)
        self.release([key for key in keys if key in self.states])
        self.unassign(keys, paused)
        return keys

    def _on_assign(self, group: Consumer, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        hold_assignment(group, partitions)  # the units are the assignment, the topic has no records
        units = {tp.partition for tp in partitions}
        self.held |= units
        self._to_take |= units

    def _take(self) -> None:
        """Copy the partitions of the units the group just gave this worker."""
        started, units = time.monotonic(), set(self._to_take)
        offered = self._copy_units(units)
        self._to_take -= units  # taken only now (a reader of `held - _to_take` sees them once copied)
        log.info("worker %s took %d partition(s) from the group in %.2f s (%d unit(s)): %s", self.worker_id,
                 len(offered), time.monotonic() - started, len(units), describe_keys(offered))

    def _on_revoke(self, group: Consumer, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        units = {tp.partition for tp in partitions} & self.held
        keys = self._give_up(units)
        if units:  # their progress stored in that time
            log.info("worker %s gave up %d partition(s) to the group in %.2f s (%d unit(s)): %s", self.worker_id,
                     len(keys), time.monotonic() - started, len(units), describe_keys(keys))

    def _on_lost(self, group: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave these units to others while this worker was silent: write nothing more for them."""
        units = {tp.partition for tp in partitions} & self.held
        keys, paused = self._drop_units(units)
        if not self.delivery.may_drop_lost(keys, self.worker_id):
            return
        for key in keys:
            lost = self.states.pop(key, None)
            self.records_released += lost.records_copied if lost else 0
        self.unassign(keys, paused)
        log.warning("worker %s lost %d partition(s) to the group (%d unit(s)): %s", self.worker_id, len(keys),
                    len(units), describe_keys(keys))


SHOWN_TOPICS = 5  # topics named in a rebalance's log line; the rest counted


def describe_keys(keys: list[TopicPartitionKey], shown: int = SHOWN_TOPICS) -> str:
    """The partitions of the first `shown` topics, then how many more topics: a line that does not grow with the
    assignment (every partition stays available through `status`)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(keys):
        by_topic.setdefault(topic, []).append(partition)
    named = ", ".join(f"{topic}{partitions}" for topic, partitions in list(by_topic.items())[:shown])
    more = len(by_topic) - shown
    return named + (f" and {more} more topic(s)" if more > 0 else "")
