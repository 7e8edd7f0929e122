"""Membership: how an engine comes to copy partitions, alone or as one worker of a group.

- `SingleProcess` (`mirror-engine run`) assigns itself every partition of the plan.
- `WorkerGroup` (`mirror-engine worker`) joins the flow's consumer group `mirror-engine.<plan>` on the
  source with cooperative-sticky assignment and copies what Kafka's group protocol gives it; it stores
  the progress of partitions it gives up and reads the progress of partitions it takes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from mirror_engine.flow import engine_group_id
from mirror_engine.plan import EngineSpec, MigrationPlan
from mirror_engine.replication.assigner import PartitionAssigner
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.delivery import DeliveryMode
from mirror_engine.replication.faults import EngineError, Faults
from mirror_engine.replication.partition_state import PartitionState

log = logging.getLogger("mirror_engine.replication.engine")

TopicPartitionKey = tuple[str, int]


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
    def consumer_settings(engine: EngineSpec) -> dict[str, Any]:
        return {}

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

    def unassign(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching these partitions. Resumed first: librdkafka keeps a partition's pause across its
        unassignment, so one given up paused (the flow paused, a partition stopped or waiting for its target) came
        back paused the next time the group gave it to this consumer, and was never fetched again (a worker held
        such partitions behind for good). Resuming one that is not paused changes nothing."""
        if partitions:
            self.clients.consumer.resume(partitions)
            self.clients.consumer.incremental_unassign(partitions)

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

    def stop_topics(self, topics: set[str]) -> None:
        """Copy these topics no more (their final progress stored)."""
        raise NotImplementedError

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
        try:
            described = self.clients.source_admin.describe_consumer_groups([group], request_timeout=10)
            description = described[group].result()
        except KafkaException as error:  # no DESCRIBE on the group: nothing to learn here
            log.debug("could not describe group %s: %s", group, error)
            return
        if description.members:
            raise EngineError(f"{len(description.members)} worker(s) of this flow run (group {group} on the source): "
                              "a single engine beside them would copy their partitions twice; start another "
                              "`mirror-engine worker` instead, or stop them first")

    def acquire(self) -> None:
        self.assigner.assign_new()

    def release_all(self) -> None:
        keys = list(self.states)
        self.release(keys)
        self.unassign([TopicPartition(*key) for key in keys])

    def stop_topics(self, topics: set[str]) -> None:
        keys = [key for key in self.states if key[0] in topics]
        self.release(keys)
        self.unassign([TopicPartition(*key) for key in keys])

    def close(self) -> None:
        self.clients.consumer.close()


class WorkerGroup(Membership):
    mode = "worker"
    prepares_beside_others = True
    follows_progress = True

    @staticmethod
    def transaction_member(worker_id: str) -> str:
        return worker_id

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._subscription: list[str] = []

    @staticmethod
    def consumer_settings(engine: EngineSpec) -> dict[str, Any]:
        return {
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": int(engine.session_timeout_s * 1000),
            # A rebalance reaches every member with its next heartbeat, and a cooperative one takes two rounds
            # (the revocation, then the assignment): at most a second apart, whatever the session.
            "heartbeat.interval.ms": int(min(1000.0, engine.session_timeout_s * 1000 / 4)),
            # Partitions added on the source reach the group's assignment this soon.
            "topic.metadata.refresh.interval.ms": int(engine.refresh_interval_s * 1000),
        }

    def check_no_other_kind_runs(self) -> None:
        """Beside a single engine of the same flow, workers would copy its partitions twice."""
        from mirror_engine.observe import is_live, read_worker_statuses

        singles = [s["worker"] for s in read_worker_statuses(self.plan, self.clients.target_config, window_s=60)
                   if s["mode"] == "single" and is_live(s) and s["worker"] != self.worker_id]
        if singles:
            raise EngineError(f"a single engine of this flow runs ({', '.join(singles)}: `mirror-engine run`); "
                              "workers beside it would copy its partitions twice: stop it first")

    def acquire(self) -> None:
        """Subscribe to the topics to copy now (again when they change: the group then rebalances)."""
        assigner = self.assigner
        pending_backfill = {topic for topic, _ in assigner.hold_for_backfill(
            sorted(key for key in assigner.plan_partitions() if key not in assigner.stored))}
        topics = sorted(set(assigner.source_topics) - assigner.control.switched_topics - pending_backfill)
        assigner.assign_awaiting()
        if topics == self._subscription:
            return
        self._subscription = topics
        if topics:
            self.clients.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                            on_lost=self._on_lost)
        else:
            self.clients.consumer.unsubscribe()
        log.info("worker %s subscribed to %d topic(s) of the flow", self.worker_id, len(topics))

    def release_all(self) -> None:
        self._subscription = []
        self.clients.consumer.unsubscribe()  # the revocation stores the progress

    def stop_topics(self, topics: set[str]) -> None:
        self.acquire()  # the group revokes the topics' partitions; the revocation stores their progress

    def leave(self) -> None:
        self.clients.consumer.close()  # leaves the group: the revocation stores the progress of its partitions

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        offered = [(tp.topic, tp.partition) for tp in partitions]
        if not offered:
            return
        started = time.monotonic()
        # The previous owner stored its progress before giving the partitions up: read it now.
        self.assigner.reload_progress(offered)
        self.assigner.assign_new(offered)
        log.info("worker %s took %d partition(s) from the group in %.2f s: %s", self.worker_id, len(offered),
                 time.monotonic() - started, describe_keys(offered))

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self.assigner.forget_awaiting(keys)
        self.release([key for key in keys if key in self.states])
        self.unassign(partitions)
        if keys:  # their progress stored in that time
            log.info("worker %s gave up %d partition(s) to the group in %.2f s: %s", self.worker_id, len(keys),
                     time.monotonic() - started, describe_keys(keys))

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """The group gave these partitions to others while this worker was silent: write nothing more for them."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self.assigner.forget_awaiting(keys)
        if not self.delivery.may_drop_lost(keys, self.worker_id):
            return
        for key in keys:
            lost = self.states.pop(key, None)
            self.records_released += lost.records_copied if lost else 0
        self.unassign(partitions)
        log.warning("worker %s lost %d partition(s) to the group: %s", self.worker_id, len(keys), describe_keys(keys))


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
