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
    TopicPartitionKey,
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
        # partitions of each target topic the producers need not be asked about then.
        self.at_start = ClusterState(0, {})
        self.known_at_start: dict[str, int] = {}

    def name(self, topic: str) -> str:
        """The target topic of a source topic."""
        if topic not in self.names:
            self.names[topic] = self.policy.format_remote_topic(self.plan.source.alias, topic)
        return self.names[topic]

    def starting_from(self, target: ClusterState | None) -> None:
        """The target as the engine's start just read it (its topics, its partitions' ends, the topics the
        preparation left unchanged): the assignment made at start takes what it needs from there instead of asking
        again (None: ask).

        Nor are the producers asked about those topics' partitions then. A producer whose cache holds a topic
        with fewer partitions than a record's fails that produce() at once, so a producer is asked until it sees
        them (`producers_know`). But at the start no producer holds any topic yet: a record for a topic it does not
        know waits in librdkafka for the topic's metadata, which the producer asks for on its own. Asking ahead
        cost each producer the whole target's metadata as Python objects (0.3 s of CPU at 40,000 partitions, eight
        producers at 1,000 topics), most of a second of the start at 10,000 partitions. The topics the preparation
        created or grew are left out of `target`: those are asked."""
        self.at_start = target or ClusterState(0, {})
        self.known_at_start = {name: state.partitions for name, state in self.at_start.topics.items()}

    def existing(self, keys: list[TopicPartitionKey]) -> list[TopicPartitionKey]:
        """Those of `keys` whose target partition exists. The source may have grown since the target was prepared
        (partitions added a moment ago): those wait for the next refresh, which prepares them, instead of asking
        the target for offsets of partitions it does not have until the request times out."""
        if not keys:
            return keys
        known, name = self.known_at_start, self.name
        # The partitions the start just read are not asked again (the whole target's metadata, 0.3 s of CPU at 40,000
        # partitions): only the others are.
        asked = {name(topic) for topic, partition in keys if partition >= known.get(name(topic), 0)}
        shown = metadata_of(self.clients.target_admin, asked) if asked else {}
        ready = [(topic, partition) for topic, partition in keys
                 if partition < known.get(name(topic), 0)
                 or ((meta := shown.get(name(topic))) is not None and meta.error is None
                     and partition in meta.partitions)]
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

    def producers_know(self, partitions: list[TopicPartitionKey], timeout_s: float = 30.0) -> None:
        """Give these partitions' target topics their producers (`RecordProducers.spread`, by the flow's size), then
        refresh those producers' metadata until each sees its target partitions (produce() to a partition its cache
        does not hold fails at once, and the cache of a topic that just grew may be minutes old); the producers are
        asked at the same time."""
        deadline = time.monotonic() + timeout_s
        needed: dict[str, int] = {}
        for topic, partition in partitions:
            needed[self.name(topic)] = max(needed.get(self.name(topic), 0), partition + 1)
        records = self.clients.records
        records.spread(self.flow_topics, sorted(needed))
        needed = {target: count for target, count in needed.items() if self.known_at_start.get(target, 0) < count}
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


def read_limits(admin: AdminClient, targets: list[str], missing: list[str] | None = None
                ) -> dict[str, tuple[int, bool]]:
    """{target topic: (max.message.bytes, LogAppendTime)} as the target says now (`missing`: see
    `describe_topic_configs`)."""
    if not targets:
        return {}
    return {target: (record_limit(entries), stamps_log_append_time(entries))
            for target, entries in describe_topic_configs(admin, targets, missing=missing).items()}


def _shown_by(producer: Producer, targets: dict[str, int], timeout_s: float) -> Callable[[], dict[str, Any]]:
    return lambda: metadata_of(producer, targets, timeout_s)


