"""The target topics the copy writes, as the copy needs them: their names, that their partitions exist, the largest
batch each takes (the producers' batches lowered to fit), and producers that know their partitions."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from mirror_engine.kafka import (
    ClusterState,
    at_once,
    describe_topic_configs,
    metadata_of,
    record_limit,
    stamps_log_append_time,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.faults import EngineError

log = logging.getLogger("mirror_engine.replication.engine")

TopicPartitionKey = tuple[str, int]


class TargetTopics:
    def __init__(self, plan: MigrationPlan, clients: EngineClients,
                 lower_batch_cap: Callable[[int, str], None]) -> None:
        self.plan = plan
        self.clients = clients
        self.lower_batch_cap = lower_batch_cap
        self.policy = plan.policy()
        self.names: dict[str, str] = {}  # source topic -> its target topic
        self.flow_topics = 0  # how many topics the flow copies: how many producers its records are spread over
        # The target as the engine's start just read it (`starting_from`), for the assignment made then; and the
        # partitions each target topic's producer saw then (`producers_ahead`).
        self.at_start = ClusterState(0, {})
        self.seen_at_start: dict[str, int] = {}

    def name(self, topic: str) -> str:
        """The target topic of a source topic."""
        if topic not in self.names:
            self.names[topic] = self.policy.format_remote_topic(self.plan.source.alias, topic)
        return self.names[topic]

    def starting_from(self, target: ClusterState | None) -> None:
        """The target as the engine's start just read it (its topics' limits, its partitions' ends): the assignment
        made at start takes what it needs from there instead of asking again (None: ask, and forget what the
        producers saw ahead)."""
        self.at_start = target or ClusterState(0, {})
        if target is None:
            self.seen_at_start = {}

    def producers_ahead(self, topics: list[str]) -> None:
        """Give the target topics of these source topics (every topic of the flow, as the engine starts) their
        producers and have each producer learn their partitions, ahead of the assignment (`producers_know` then
        asks nothing they saw)."""
        records = self.clients.records
        records.spread(len(topics), [self.name(topic) for topic in topics])
        producers = records.all()
        targets = {self.name(topic) for topic in topics}
        # Each producer's answer names every partition of the target, as Python objects (about 15 MiB for 30,000
        # partitions): only its own topics' counts are kept, and the producers are asked one after the other, so
        # that one answer is held at a time, not eight (this runs beside the target's preparation).
        for producer in producers:
            self.seen_at_start.update(_partition_counts(producer, {t for t in targets if records.of(t) is producer})())

    def existing(self, keys: list[TopicPartitionKey]) -> list[TopicPartitionKey]:
        """Those of `keys` whose target partition exists. The source may have grown since the target was prepared
        (partitions added a moment ago): those wait for the next refresh, which prepares them, instead of asking
        the target for offsets of partitions it does not have until the request times out."""
        if not keys:
            return keys
        shown = metadata_of(self.clients.target_admin, {self.name(topic) for topic, _ in keys})
        ready = [(topic, partition) for topic, partition in keys
                 if (meta := shown.get(self.name(topic))) is not None and meta.error is None
                 and partition in meta.partitions]
        if len(ready) < len(keys):
            log.info("%d new partition(s) not on the target yet: copied once the next refresh prepared them",
                     len(keys) - len(ready))
        return ready

    def describe(self, topics: list[str]) -> None:
        """Learn the target topics' record limits (lowering the producers' batches to fit) and timestamp types."""
        self.learn(read_limits(self.clients.target_admin, [self.name(topic) for topic in topics]))

    def learn(self, limits: dict[str, tuple[int, bool]]) -> None:
        """{target topic: (max.message.bytes, LogAppendTime)}: record limits kept (the producers' batches lowered to
        fit), LogAppendTime said."""
        for target, (limit, log_append_time) in sorted(limits.items()):
            self.clients.record_limits[target] = limit
            if limit < self.clients.batch_cap:
                self.lower_batch_cap(limit, target)
            if log_append_time:
                log.warning("target topic %s uses LogAppendTime: the source records' timestamps are replaced "
                            "by the target broker's time", target)

    def limits_at_start(self, targets: set[str]) -> dict[str, tuple[int, bool]]:
        """What the start read of these target topics' limits (`learn`'s form)."""
        return {target: (state.max_message_bytes, state.log_append_time)
                for target, state in self.at_start.topics.items() if target in targets}

    def producers_know(self, partitions: list[TopicPartitionKey], timeout_s: float = 30.0) -> None:
        """Give these partitions' target topics their producers (`RecordProducers.spread`, by the flow's size), then
        refresh those producers' metadata until each sees its target partitions (produce() to a partition its cache
        does not hold fails at once, and the cache of a topic that just grew may be minutes old); the producers are
        asked at the same time."""
        deadline = time.monotonic() + timeout_s
        needed: dict[str, int] = {}
        for topic, partition in partitions:
            needed[self.name(topic)] = max(needed.get(self.name(topic), 0), partition + 1)
        needed = {target: count for target, count in needed.items() if self.seen_at_start.get(target, 0) < count}
        records = self.clients.records
        records.spread(self.flow_topics, sorted(needed))
        while needed:
            asked: dict[int, tuple[Producer, dict[str, int]]] = {}
            for target, count in needed.items():
                producer = records.of(target)
                asked.setdefault(id(producer), (producer, {}))[1][target] = count
            shown = at_once(*(_shown_by(producer, wanted, timeout_s) for producer, wanted in asked.values()))
            short = {target: count for (_, wanted), seen in zip(asked.values(), shown, strict=True)
                     for target, count in wanted.items()
                     if target not in seen or len(seen[target].partitions) < count}
            if not short:
                return
            if time.monotonic() > deadline:
                target, count = sorted(short.items())[0]
                raise EngineError(f"the target does not show {count} partitions of {target} after {timeout_s:.0f} s"
                                  + (f" (nor all partitions of {len(short) - 1} more topic(s))" if len(short) > 1
                                     else ""))
            needed = short
            time.sleep(0.2)


def read_limits(admin: AdminClient, targets: list[str]) -> dict[str, tuple[int, bool]]:
    """{target topic: (max.message.bytes, LogAppendTime)} as the target says now."""
    return {target: (record_limit(entries), stamps_log_append_time(entries))
            for target, entries in describe_topic_configs(admin, targets).items()}


def _shown_by(producer: Producer, targets: dict[str, int], timeout_s: float) -> Callable[[], dict[str, Any]]:
    return lambda: metadata_of(producer, targets, timeout_s)


def _partition_counts(producer: Producer, targets: set[str]) -> Callable[[], dict[str, int]]:
    """The partitions of each of `targets` the producer sees, after asking the target for every topic's."""
    def counts() -> dict[str, int]:
        shown = producer.list_topics(timeout=15).topics
        return {target: len(shown[target].partitions) for target in targets
                if target in shown and shown[target].error is None}

    return counts
