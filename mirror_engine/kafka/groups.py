"""Consumer groups on one cluster: who is in them, what they committed, committing for them."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from confluent_kafka import (
    OFFSET_END,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from mirror_engine.kafka.concurrent_reads import refusal
from mirror_engine.kafka.partitions import TopicPartitionKey

if TYPE_CHECKING:
    from mirror_engine.plan import MigrationPlan

T = TypeVar("T")
ENGINE_GROUP_PREFIX = "mirror-engine."  # the engines' own groups: `mirror-engine.<plan>`, `...checkpoints.<plan>`


class GroupError(RuntimeError):
    """A group operation failed; the message names the group and the cluster."""


@dataclass(frozen=True)
class GroupState:
    group: str
    state: str  # EMPTY, STABLE, DEAD (never existed or expired), ...
    members: int

    @property
    def active(self) -> bool:
        return self.members > 0


def is_engine_group(group: str) -> bool:
    """A replication engine's own group (of any plan): never checkpointed, synced or switched."""
    return group.startswith(ENGINE_GROUP_PREFIX)


def list_groups(admin: AdminClient, timeout_s: float = 15.0) -> list[str]:
    """The cluster's groups; a principal without DESCRIBE on the cluster is shown only those it may describe."""
    result = admin.list_consumer_groups(request_timeout=timeout_s).result()
    return sorted(listing.group_id for listing in result.valid)


def plan_groups(admin: AdminClient, plan: MigrationPlan) -> list[str]:
    """The source's groups the plan selects (MM2's groups filter) plus the ones named for cutover."""
    selected = {g for g in list_groups(admin) if plan.accepts_group(g)}
    # The engines' own groups track their copy, not an application's reading: never carried over.
    return sorted(g for g in selected | set(plan.cutover.groups) if not is_engine_group(g))


_COORDINATOR_MOVING = frozenset({
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
})

# librdkafka 2.16 aborts the whole process when an admin request to a group coordinator (describing a group, reading
# or committing its offsets) reaches its `request_timeout` before the coordinator was found and connected, and the
# coordinator then answers (confluentinc/librdkafka#4605): a target broker silent for longer than the timeout, then
# back, took the engine and its copy down. Such requests are given this long in the client; callers wait their own,
# shorter, time for the answer (`_coordinator_result`), and an answer that comes later is dropped.
COORDINATOR_PATIENCE_S = 900.0


def _coordinator_result(future: Future, timeout_s: float) -> Any:
    """The answer of an admin request to a group coordinator, sent with `COORDINATOR_PATIENCE_S`; no answer within
    `timeout_s` raises KafkaException(_TIMED_OUT) as the client's own timeout would."""
    if not wait_for([future], timeout=timeout_s).done:
        raise KafkaException(_no_answer(timeout_s))
    return future.result()


def _no_answer(timeout_s: float) -> KafkaError:
    return KafkaError(KafkaError._TIMED_OUT, f"no answer from the group's coordinator within {timeout_s:g} s")


def _retrying(call: Callable[[], T], timeout_s: float) -> T:
    """Retry the brief errors of a group coordinator that is loading or moving (a fresh cluster's first minute)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except KafkaException as error:
            if error.args[0].code() not in _COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.3)


# Where a cluster keeps its groups; its first FindCoordinator creates it.
GROUPS_TOPIC = "__consumer_offsets"


def holds_no_groups(admin: AdminClient, timeout_s: float) -> bool:
    """True when the cluster has never held a group: it has no offsets topic. Asked without creating it (a metadata
    request that does not create topics): describing a group on such a cluster creates it and waits for its
    coordinator to load it, 10 s on a fresh local broker, and a first migration's target is often that fresh. Any
    other answer (a principal without DESCRIBE on the topic, say) is False: the caller asks the group itself."""
    try:
        admin.describe_topics(TopicCollection([GROUPS_TOPIC]), request_timeout=timeout_s)[GROUPS_TOPIC].result()
    except KafkaException as error:
        return error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    return False


def group_description(admin: AdminClient, group: str, timeout_s: float) -> Any:
    """The group's ConsumerGroupDescription (its members and their assignments), asked once."""
    return _coordinator_result(admin.describe_consumer_groups(
        [group], request_timeout=COORDINATOR_PATIENCE_S)[group], timeout_s)


def describe_group(admin: AdminClient, group: str, timeout_s: float = 15.0) -> GroupState:
    description = _retrying(lambda: group_description(admin, group, timeout_s), timeout_s)
    state = getattr(description.state, "name", str(description.state))
    return GroupState(group, state, len(description.members))


def undescribable_groups(admin: AdminClient, groups: list[str], timeout_s: float = 15.0) -> list[str]:
    """The groups among `groups` this principal lacks DESCRIBE on, which reading their offsets needs (the broker
    answers such a group GROUP_AUTHORIZATION_FAILED, whether it exists or not)."""
    denied: list[str] = []
    for group, answer in _described(admin, groups, timeout_s).items():
        if isinstance(answer, KafkaError):
            if answer.code() != KafkaError.GROUP_AUTHORIZATION_FAILED:
                raise KafkaException(answer)
            denied.append(group)
    return sorted(denied)


def committed_offsets(admin: AdminClient, group: str, timeout_s: float = 15.0) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets, every partition it committed for (none for an unknown group)."""
    # Ask only once the group's coordinator answers: librdkafka 2.16 crashes the whole process when an
    # admin offset fetch is answered NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS (confluentinc/
    # librdkafka#5040), while a group description meets the same answers as plain, retried errors.
    request = [ConsumerGroupTopicPartitions(group)]
    try:
        describe_group(admin, group, timeout_s)
        result = _retrying(lambda: _coordinator_result(admin.list_consumer_group_offsets(
            request, request_timeout=COORDINATOR_PATIENCE_S)[group], timeout_s), timeout_s)
    except KafkaException as error:
        raise GroupError(f"reading the offsets of group {group!r} failed: {error.args[0].str()}") from None
    return _offsets_of(group, result)


def commit_offsets(admin: AdminClient, group: str, offsets: dict[TopicPartitionKey, int],
                   timeout_s: float = 30.0) -> None:
    """Commit offsets for a group that has no members (the broker refuses it for an active group)."""
    if not offsets:
        return
    partitions = [TopicPartition(topic, partition, offset) for (topic, partition), offset in sorted(offsets.items())]

    def commit() -> None:
        asked = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)],
                                                   request_timeout=COORDINATOR_PATIENCE_S)
        result = _coordinator_result(asked[group], timeout_s)
        # The request as a whole succeeds while each partition may carry its own error (a coordinator still
        # loading refuses them all this way): nothing was committed for those.
        refused = [tp.error for tp in result.topic_partitions or [] if tp.error is not None]
        if refused:
            raise KafkaException(refused[0])

    try:
        _retrying(commit, timeout_s)
    except KafkaException as error:
        raise GroupError(f"committing offsets for group {group!r} failed: {error.args[0].str()} (a group with "
                         "active members cannot be given offsets)") from None


# ---------------------------------------------------------------------------- many groups at once
IN_FLIGHT = 200  # group requests sent at once (the offset calls take one group each: they go out together)


def describe_groups(admin: AdminClient, groups: list[str], timeout_s: float = 15.0
                    ) -> dict[str, GroupState | GroupError]:
    """Each group's state, described in one request per coordinator; a group that cannot be described gets its
    GroupError (naming it) instead of stopping the others."""
    states: dict[str, GroupState | GroupError] = {}
    for group, answer in _described(admin, groups, timeout_s).items():
        if isinstance(answer, KafkaError):
            states[group] = GroupError(f"describing group {group!r} failed: {answer.str()}")
        else:
            state = getattr(answer.state, "name", str(answer.state))
            states[group] = GroupState(group, state, len(answer.members))
    return states


def _described(admin: AdminClient, groups: list[str], timeout_s: float) -> dict[str, Any]:
    """Each group's description, or the error it was answered with; a coordinator that is moving or loading is
    asked again until `timeout_s`."""
    answers: dict[str, Any] = {}
    pending = list(groups)
    deadline = time.monotonic() + timeout_s
    while pending:
        retry = []
        asked = admin.describe_consumer_groups(pending, request_timeout=COORDINATOR_PATIENCE_S)
        unanswered = wait_for(list(asked.values()), timeout=timeout_s).not_done
        for group, future in asked.items():
            error = KafkaException(_no_answer(timeout_s)) if future in unanswered else refusal(future)
            if error is None:
                answers[group] = future.result()
            elif error.args[0].code() in _COORDINATOR_MOVING and time.monotonic() < deadline:
                retry.append(group)
            else:
                answers[group] = error.args[0]
        pending = retry
        if pending:
            time.sleep(0.3)
    return answers


def _offsets_of(group: str, result: ConsumerGroupTopicPartitions) -> dict[TopicPartitionKey, int]:
    offsets = {}
    for tp in result.topic_partitions or []:
        if tp.error is not None:
            raise GroupError(f"reading the offset of group {group!r} on {tp.topic}[{tp.partition}] failed: "
                             f"{tp.error.str()}")
        if tp.offset >= 0:
            offsets[(tp.topic, tp.partition)] = tp.offset
    return offsets


def _many(groups: list[str], send: Callable[[str], Future], settle: Callable[[str, Future], T],
          what: str, timeout_s: float) -> dict[str, T | GroupError]:
    """`send` a request per group (with `COORDINATOR_PATIENCE_S`), IN_FLIGHT at a time, then `settle` each answer
    that came within `timeout_s`; the brief errors of a moving coordinator are asked again, any other error, or no
    answer, becomes the group's GroupError."""
    results: dict[str, T | GroupError] = {}
    pending = list(groups)
    deadline = time.monotonic() + timeout_s
    while pending:
        retry = []
        for start in range(0, len(pending), IN_FLIGHT):
            sent = [(group, send(group)) for group in pending[start:start + IN_FLIGHT]]
            unanswered = wait_for([future for _, future in sent], timeout=timeout_s).not_done
            for group, future in sent:
                try:
                    if future in unanswered:
                        raise KafkaException(_no_answer(timeout_s))
                    results[group] = settle(group, future)
                except KafkaException as error:
                    if error.args[0].code() in _COORDINATOR_MOVING and time.monotonic() < deadline:
                        retry.append(group)
                    else:
                        results[group] = GroupError(f"{what} of group {group!r} failed: {error.args[0].str()}")
                except GroupError as error:
                    results[group] = error
        pending = retry
        if pending:
            time.sleep(0.3)
    return results


def committed_offsets_of(admin: AdminClient, groups: list[str], timeout_s: float = 15.0
                         ) -> dict[str, dict[TopicPartitionKey, int] | GroupError]:
    """`committed_offsets` of many groups, their requests sent together. Ask only for groups just described
    (`describe_groups`): their coordinators answer (see `committed_offsets` for why that matters)."""
    return _many(
        groups,
        lambda g: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)],
                                                    request_timeout=COORDINATOR_PATIENCE_S)[g],
        lambda g, future: _offsets_of(g, future.result()),
        "reading the offsets", timeout_s)


def commit_offsets_of(admin: AdminClient, offsets: dict[str, dict[TopicPartitionKey, int]],
                      timeout_s: float = 30.0) -> dict[str, GroupError | None]:
    """`commit_offsets` for many groups without members, their requests sent together."""

    def send(group: str) -> Future:
        partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets[group].items())]
        return admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)],
                                                  request_timeout=COORDINATOR_PATIENCE_S)[group]

    def settle(group: str, future: Future) -> None:
        result = future.result()
        refused = [tp.error for tp in result.topic_partitions or [] if tp.error is not None]
        if refused:
            raise KafkaException(refused[0])

    return _many([g for g in offsets if offsets[g]], send, settle, "committing offsets", timeout_s)


def hold_assignment(consumer: Consumer, partitions: list[TopicPartition]) -> None:
    """Inside a group's assignment callback, for a group whose assignment is the point (a lease, work units): the
    partitions assigned at their end and paused, their records never fetched."""
    at_end = [TopicPartition(tp.topic, tp.partition, OFFSET_END) for tp in partitions]
    consumer.incremental_assign(at_end)
    consumer.pause(at_end)


def leave_group(consumer: Consumer) -> None:
    """Leave the group at once and close the member. Unsubscribing first sends the LeaveGroup (librdkafka 2.16's
    close() alone does not for a cooperative member without partitions: it would linger in the group for a session
    timeout); the poll serves it and the revocation's callback."""
    consumer.unsubscribe()
    consumer.poll(0.5)
    consumer.close()
