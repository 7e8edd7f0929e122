"""What a cluster's topics look like, read once: partitions, replication factor, configs, data."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource, ConfigSource, OffsetSpec
from confluent_kafka.cimpl import _AdminClientImpl

from mirror_engine.kafka.clusters import admin_client, first_connection
from mirror_engine.kafka.concurrent_reads import at_once, refusal
from mirror_engine.plan import compile_any

# Config sources that are explicit settings on the source cluster, so they are carried over.
# STATIC_BROKER_CONFIG belongs to one broker's files and DEFAULT_CONFIG is no setting at all.
# (describe_configs gives sources as plain ints, so compare by value.)
_SYNCED_SOURCES = frozenset({
    ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    ConfigSource.DYNAMIC_BROKER_CONFIG.value,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
})
_TOPIC_SOURCE = ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def _source_value(entry: object) -> int:
    source = getattr(entry, "source", None)
    return source.value if isinstance(source, ConfigSource) else int(source or 0)


@dataclass(frozen=True)
class TopicState:
    name: str
    partitions: int
    replication_factor: int
    # Source side: the settings to carry over (already filtered). Target side: its topic-level overrides.
    configs: dict[str, str] = field(default_factory=dict)
    topic_id: str = ""
    # False when `configs` says nothing: the source's principal may not read them, or they were not asked.
    configs_read: bool = True


@dataclass(frozen=True)
class ClusterState:
    broker_count: int
    topics: dict[str, TopicState]
    acls: frozenset | None = None  # frozenset[Acl]; None when the cluster has no authorizer
    topics_with_data: frozenset[str] = frozenset()
    # Target side: every topic on the cluster, the plan's or not (a new name must not collide with any).
    all_topic_names: frozenset[str] = frozenset()
    # Target side: the end offset of each partition of the topics whose data was looked at, when it was read.
    ends: dict[tuple[str, int], int] = field(default_factory=dict)


class ConfigFilter:
    """Which topic config names are never synced (MM2's default exclude list plus the plan's)."""

    def __init__(self, exclude_patterns: list[str]) -> None:
        self._exclude = compile_any(exclude_patterns)

    def excluded(self, name: str) -> bool:
        return bool(self._exclude and self._exclude.fullmatch(name))


TopicListing = tuple[int, dict[str, tuple[int, int, str]]]
"""(broker count, {topic: (partitions, replication factor, topic id)}) of a cluster's non-internal topics."""


def list_topic_metadata(admin: AdminClient, timeout_s: float = 15.0) -> TopicListing:
    """The cluster's topics as listed now (`TopicListing`)."""
    return topic_listing(admin.list_topics(timeout=timeout_s))


def topic_listing(metadata: ClusterMetadata) -> TopicListing:
    """A listing of the whole cluster (by any client) as a `TopicListing`."""
    topics = {}
    for name, topic in metadata.topics.items():
        if topic.error is not None or name.startswith("__"):
            continue
        replication = max((len(p.replicas) for p in topic.partitions.values()), default=0)
        topics[name] = (len(topic.partitions), replication, str(getattr(topic, "topic_id", "") or ""))
    return len(metadata.brokers), topics


# describe_configs answers with every config of every topic, each a ConfigEntry object with its synonyms: about 33
# KiB a topic (1,000 topics held 33 MiB at once). So topics are asked CONFIG_BATCH at a time, and of the entries
# only those any reader here looks at are kept: the ones set somewhere (not Kafka's own default) and the few read by
# name whatever their source.
CONFIG_BATCH = 100
# Requests out at once: each waits a broker's answer (1,000 topics asked one request after the other took 0.5-0.6 s
# against 0.2-0.3 s four at a time, on this project's test clusters), and each answer is held until read.
CONFIGS_IN_FLIGHT = 4
CONFIGS_READ_BY_NAME = frozenset({"max.message.bytes", "message.timestamp.type", "cleanup.policy"})
_DEFAULT_SOURCE = ConfigSource.DEFAULT_CONFIG.value


Asked = TypeVar("Asked", bound=Hashable)


def _ask_until_answered(ask: Callable[[list[Asked]], dict[Asked, KafkaException]], items: Collection[Asked],
                        timeout_s: float, before_retry: Callable[[dict[Asked, KafkaException]], Any] | None = None,
                        ) -> None:
    """`ask(items)`, then `ask` again with only those it returned as briefly refused (with the refusal), until none
    is; past `timeout_s`, the first refusal is raised. The looks come soon, then less often: a leader just elected or
    a topic just created is known within a few hundred milliseconds on most clusters (a topic created on a local
    broker answered ListOffsets 60 to 180 ms later; looks 50 ms apart, then 100, found it ready 180 ms after, looks
    from 10 ms on 120 ms after)."""
    deadline = time.monotonic() + timeout_s
    backoff = 0.01
    asking = list(items)
    while refused := ask(asking):
        if time.monotonic() > deadline:
            raise next(iter(refused.values()))
        time.sleep(backoff)
        backoff = min(0.3, backoff * 2)
        if before_retry is not None:
            before_retry(refused)
        asking = list(refused)


def describe_topic_configs(
    admin: AdminClient, names: list[str], timeout_s: float = 15.0, denied: list[str] | None = None,
    missing: list[str] | None = None,
) -> dict[str, list]:
    """The config entries of each topic (ConfigEntry objects; of those left at Kafka's default, only the ones in
    CONFIGS_READ_BY_NAME), asked CONFIG_BATCH topics a request.

    The broker answers each topic on its own: one the principal lacks DESCRIBE_CONFIGS on fails with
    TOPIC_AUTHORIZATION_FAILED. With `denied` given, such topics are added there and left out of the result.
    Callers ask for topics they just saw in the metadata: one that the answering broker does not know yet (created
    a moment ago, on a busy cluster whose brokers apply the change seconds apart) is asked again until `timeout_s`.
    With `missing` given, such topics are added there at once instead, for callers that ask ahead of their creation.
    """
    entries: dict[str, list] = {}
    if missing is not None:
        missing.extend(_ask_configs(admin, names, timeout_s, denied, entries))
        return entries
    _ask_until_answered(lambda asking: _ask_configs(admin, asking, timeout_s, denied, entries), names, timeout_s)
    return entries


def _ask_configs(admin: AdminClient, names: list[str], timeout_s: float, denied: list[str] | None,
                 entries: dict[str, list]) -> dict[str, KafkaException]:
    """Ask `names`' configs once into `entries`; the topics the broker did not know, with its answer."""
    unknown: dict[str, KafkaException] = {}
    batches = [names[start:start + CONFIG_BATCH] for start in range(0, len(names), CONFIG_BATCH)]
    for first in range(0, len(batches), CONFIGS_IN_FLIGHT):
        asked = [admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name) for name in batch],
                                        request_timeout=timeout_s)
                 for batch in batches[first:first + CONFIGS_IN_FLIGHT]]
        for resource, future in (item for futures in asked for item in futures.items()):
            error = refusal(future)
            if error is None:
                entries[resource.name] = [entry for entry in future.result().values()
                                          if _source_value(entry) != _DEFAULT_SOURCE
                                          or entry.name in CONFIGS_READ_BY_NAME]
                continue
            code = error.args[0].code()
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                unknown[resource.name] = error
            elif denied is not None and code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                denied.append(resource.name)
            else:
                raise error
    return unknown


def syncable_configs(entries: list, config_filter: ConfigFilter) -> dict[str, str]:
    """The source entries a target topic should carry: explicit, writable, public and not excluded."""
    return {
        entry.name: entry.value
        for entry in entries
        if _source_value(entry) in _SYNCED_SOURCES
        and not entry.is_read_only
        and not entry.is_sensitive
        and entry.value is not None
        and not config_filter.excluded(entry.name)
    }


# A topic's max.message.bytes when neither it nor its broker says (Kafka's default).
DEFAULT_MAX_MESSAGE_BYTES = 1048588


def record_limit(entries: list) -> int:
    """The largest record batch a topic takes, from its config entries: its max.message.bytes, set or inherited."""
    value = next((entry.value for entry in entries if entry.name == "max.message.bytes"), None)
    return int(value or DEFAULT_MAX_MESSAGE_BYTES)


def stamps_log_append_time(entries: list) -> bool:
    """Whether the broker replaces the time of the records written to the topic (message.timestamp.type)."""
    return any(entry.name == "message.timestamp.type" and entry.value == "LogAppendTime" for entry in entries)


def topic_overrides(entries: list) -> dict[str, str]:
    """A topic's own settings (set on the topic itself)."""
    return {
        entry.name: entry.value
        for entry in entries
        if _source_value(entry) == _TOPIC_SOURCE and entry.value is not None
    }


def partition_bounds(
    config: dict[str, str], tps: list[TopicPartition], timeout_s: float = 15.0
) -> dict[tuple[str, int], tuple[int, int]]:
    """(earliest, latest) offsets of the partitions `tps`, the two asked at once."""
    if not tps:
        return {}
    start, end = at_once(lambda: list_offsets(admin_client(config), tps, OffsetSpec.earliest(), timeout_s),
                         lambda: list_offsets(admin_client(config), tps, OffsetSpec.latest(), timeout_s))
    return {key: (start[key], end[key]) for key in end}


def topics_holding_data(config: dict[str, str], ends: dict[tuple[str, int], int],
                        timeout_s: float = 15.0) -> frozenset[str]:
    """The topics where some partition holds at least one record, given the partitions' ends (latest offsets).

    Only a partition whose end is past 0 ever held a record: the start of those alone is asked (a new topic's
    partitions ask nothing; asking the start of every partition beside its end cost a ListOffsets of every partition,
    most of it the client's CPU, at 10,000 partitions about a quarter of a second)."""
    written = [TopicPartition(*key) for key, end in ends.items() if end > 0]
    starts = list_offsets(admin_client(config), written, OffsetSpec.earliest(), timeout_s) if written else {}
    return frozenset(topic for (topic, partition), start in starts.items() if ends[(topic, partition)] > start)


_RETRIABLE = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._TRANSPORT,
    KafkaError._UNKNOWN_PARTITION,  # the client's cached metadata predates partitions just added
    # A leader just elected (a new topic, a restarted broker) answers these until its epoch settles.
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,
    # The client's ListOffsets found no leader for any partition asked (topics just created, leaders not elected
    # yet: 10,000 partitions created on a busy cluster).
    KafkaError._NOENT,
})


# What DescribeTopics answers for a topic that is not there, or not there for this principal (the whole cluster's
# metadata leaves both out alike).
_ABSENT = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED})


def existing_topics(admin: AdminClient, names: Collection[str], timeout_s: float = 15.0) -> set[str]:
    """Which of `names` exist, asked for those names only (DescribeTopics never creates a topic, whatever the
    broker's `auto.create.topics.enable`): the whole cluster's metadata costs time and memory per partition, about
    0.1 s of the caller's CPU at 20,000 partitions, for every reader that checks one internal topic."""
    if not names:
        return set()
    found = set()
    for name, future in admin.describe_topics(TopicCollection(sorted(set(names))),
                                              request_timeout=timeout_s).items():
        error = refusal(future)
        if error is None:
            found.add(name)
        elif error.args[0].code() not in _ABSENT:
            raise error
    return found


def metadata_of(client: Any, names: Collection[str], timeout_s: float = 15.0) -> dict[str, Any]:
    """The metadata of topics `names` (an admin client, producer or consumer): one topic is asked alone, several
    in one request for every topic (librdkafka asks for one topic or all), never one request per topic."""
    if len(names) == 1:
        return client.list_topics(next(iter(names)), timeout=timeout_s).topics
    return client.list_topics(timeout=timeout_s).topics


# The client matches a ListOffsets answer to the partitions asked in time growing with the square of their number:
# 10,000 partitions asked in one call took 1.2 to 1.4 s, in 20 calls of 500 sent together 0.3 s (measured on a
# local broker), and 1,000 at once cost no more than 500. At most LIST_OFFSETS_IN_FLIGHT calls are out at a time:
# their answers are held until read.
LIST_OFFSETS_BATCH = 500
LIST_OFFSETS_IN_FLIGHT = 4


def list_offsets(
    admin: AdminClient, tps: list[TopicPartition], spec: OffsetSpec, timeout_s: float = 15.0,
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} for `spec`, retrying the brief errors of a just-created or moving leader.

    Only the partitions whose answer was such an error are asked again: on a busy cluster a few leaders among
    thousands may answer "not leader" for seconds, and asking every partition again at each retry cost a request
    and a future per partition every few hundred milliseconds (10,000 partitions asked 60 times over 20 s, the
    process growing by about 4 MiB a retry)."""
    offsets: dict[tuple[str, int], int] = {}
    if not tps:
        return offsets
    deadline = time.monotonic() + timeout_s
    first_connection(admin, timeout_s)
    timeout_s = max(0.1, deadline - time.monotonic())

    def ask(asking: list[TopicPartition]) -> dict[TopicPartition, KafkaException]:
        return _ask_offsets(admin, asking, spec, timeout_s, isolation_level, offsets)

    def refresh_leaders(refused: dict[TopicPartition, KafkaException]) -> None:
        metadata_of(admin, {tp.topic for tp in refused}, timeout_s)

    _ask_until_answered(ask, tps, timeout_s, before_retry=refresh_leaders)
    return offsets


def _ask_offsets(admin: AdminClient, tps: list[TopicPartition], spec: OffsetSpec, timeout_s: float,
                 isolation_level: IsolationLevel, offsets: dict[tuple[str, int], int],
                 ) -> dict[TopicPartition, KafkaException]:
    """Ask `tps` once, in calls of LIST_OFFSETS_BATCH partitions, LIST_OFFSETS_IN_FLIGHT at a time (see above);
    the answers go into `offsets`. Returns the partitions that answered a retriable error, with it; any other error
    is raised."""
    failed: dict[TopicPartition, KafkaException] = {}
    batches = [tps[start:start + LIST_OFFSETS_BATCH] for start in range(0, len(tps), LIST_OFFSETS_BATCH)]
    for first in range(0, len(batches), LIST_OFFSETS_IN_FLIGHT):
        asked = [(batch, offsets_request(admin, batch, spec, timeout_s, isolation_level))
                 for batch in batches[first:first + LIST_OFFSETS_IN_FLIGHT]]
        for batch, answer in asked:
            whole = refusal(answer)  # the call failed as a whole: so did each of its partitions
            answers: dict[TopicPartition, Any] = answer.result() if whole is None else dict.fromkeys(batch, whole)
            for tp, result in answers.items():
                if not isinstance(result, KafkaError | KafkaException):
                    offsets[(tp.topic, tp.partition)] = result.offset
                    continue
                error = result if isinstance(result, KafkaException) else KafkaException(result)  # never raised here
                if error.args[0].code() not in _RETRIABLE:
                    raise error
                failed[TopicPartition(tp.topic, tp.partition)] = error
    return failed


def offsets_request(admin: AdminClient, tps: list[TopicPartition], spec: OffsetSpec, timeout_s: float,
                    isolation_level: IsolationLevel) -> Future:
    """One ListOffsets call of `tps`, answered by one future: {TopicPartition: ListOffsetsResultInfo, or the
    partition's KafkaError}, or the call's own error.

    The client's `AdminClient.list_offsets` is this call (its C part) plus a Python future for every partition, with
    its lock and condition, each set from the client's thread and read here: at 10,000 partitions those took 60% of
    the call's CPU (0.23 s against 0.09 s in all), held on the GIL while the engine's start reads everything else
    beside it. The answer, and the values the C part takes (`OffsetSpec`'s value, the isolation level's), are those
    the client's own method passes it (confluent-kafka 2.3 and later)."""
    answer: Future = Future()
    answer.set_running_or_notify_cancel()  # as the client's own futures: never cancelled
    _AdminClientImpl.list_offsets(admin, [TopicPartition(tp.topic, tp.partition, spec._value) for tp in tps], answer,
                                  request_timeout=timeout_s, isolation_level_value=isolation_level.value)
    return answer


def wait_until_served(admin: AdminClient, names: list[str], timeout_s: float = 15.0) -> None:
    """Topic creation returns once the controller committed it; wait until the metadata serves it too, and until
    its partitions' leaders answer: a broker creating the logs of thousands of new partitions answers "not leader"
    for them for seconds after the metadata names it their leader (10,000 partitions on three brokers: 1,391 of them
    at first, none 2.6 s later), and whoever reads or writes them first would wait out that time instead. Returns
    at the timeout all the same (the next reader retries on its own)."""
    deadline = time.monotonic() + timeout_s
    missing = set(names)
    metadata = None
    while missing and time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=5)
        missing = {n for n in missing if not _served(metadata.topics.get(n))}
        if missing:
            time.sleep(0.05)
    if missing or metadata is None:
        return
    partitions = [TopicPartition(name, p) for name in set(names) for p in metadata.topics[name].partitions]
    try:
        list_offsets(admin, partitions, OffsetSpec.latest(), timeout_s=max(0.1, deadline - time.monotonic()))
    except KafkaException:
        return


def _served(topic: Any) -> bool:
    """The topic is in the metadata and every partition has a leader."""
    return (topic is not None and topic.error is None and bool(topic.partitions)
            and all(p.leader >= 0 and p.error is None for p in topic.partitions.values()))
