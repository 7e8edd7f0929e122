"""The control topic of a flow on the target: instructions to the engines that run it, wherever they run.

A compacted topic of JSON records keyed by what they control. For now one kind: `topic:<source topic>`
with state "switched", written when a topic's producers moved to the target, after which no engine of
the flow copies that topic again (its target copy has new writers).
"""

from __future__ import annotations

import json
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, Producer, TopicPartition

from mirror_engine.clusters import admin_client
from mirror_engine.internal_topics import InternalTopics, ensure_internal_topics
from mirror_engine.plan import MigrationPlan
from mirror_engine.progress import read_topic_to_end


class ControlChannel:
    def __init__(self, plan: MigrationPlan, target_config: dict[str, str]) -> None:
        self.topics = InternalTopics.for_plan(plan)
        self.topic = self.topics.control
        self.target_config = target_config
        self._consumer: Consumer | None = None
        self._next_offset = OFFSET_BEGINNING
        self.switched_topics: set[str] = set()

    def switch_topic(self, topic: str) -> None:
        """Tell the flow's engines to stop copying `topic` for good."""
        ensure_internal_topics(admin_client(self.target_config), self.topics)
        producer = Producer({**self.target_config, "enable.idempotence": True, "acks": "all"})
        value = json.dumps({"state": "switched", "at_ms": int(time.time() * 1000)}).encode()
        producer.produce(self.topic, value, f"topic:{topic}".encode(), 0)
        if producer.flush(30):
            raise RuntimeError(f"the target did not acknowledge the control record for {topic} on {self.topic}")

    def load(self) -> set[str]:
        """Read the whole control topic (at start): the topics switched so far."""
        records = read_topic_to_end(self.target_config, self.topic)
        for message in records:
            self._apply(message)
        if records:
            self._next_offset = records[-1].offset() + 1
        return set(self.switched_topics)

    def poll(self) -> set[str]:
        """Read control records written since the last call, without waiting; return the topics newly switched."""
        if self._consumer is None:
            self._consumer = Consumer({**self.target_config, "group.id": "mirror-engine-control",
                                       "enable.auto.commit": False, "enable.partition.eof": False})
            self._consumer.assign([TopicPartition(self.topic, 0, self._next_offset)])
        new: set[str] = set()
        for message in self._consumer.consume(1000, timeout=0):
            error = message.error()
            if error is not None:
                raise RuntimeError(f"reading {self.topic}: {error.str()}")
            new |= self._apply(message)
        return new

    def _apply(self, message: Message) -> set[str]:
        key = (message.key() or b"").decode()
        value = message.value()
        if not key.startswith("topic:") or value is None or json.loads(value).get("state") != "switched":
            return set()
        topic = key.removeprefix("topic:")
        if topic in self.switched_topics:
            return set()
        self.switched_topics.add(topic)
        return {topic}

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
