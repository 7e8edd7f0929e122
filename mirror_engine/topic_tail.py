"""Reading a small one-partition internal topic incrementally: each call returns what was written since the last."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.clusters import admin_client
from mirror_engine.topics import list_offsets


class TopicTail:
    """Partition 0 of `topic`, read from the beginning on the first call and from where it stopped after that,
    with one consumer kept open (committed records only)."""

    def __init__(self, config: dict[str, str], topic: str, group_id: str) -> None:
        self.config, self.topic, self.group_id = config, topic, group_id
        self._admin = admin_client(config)
        self._consumer: Consumer | None = None
        self._read_up_to = 0

    def read_new(self, timeout_s: float = 30.0) -> list[Message]:
        if self.topic not in self._admin.list_topics(timeout=15).topics:  # all topics: never auto-creates
            return []
        end = list_offsets(self._admin, [TopicPartition(self.topic, 0)], OffsetSpec.latest())[(self.topic, 0)]
        if self._read_up_to >= end:
            return []
        if self._consumer is None:
            self._consumer = Consumer({**self.config, "group.id": self.group_id, "enable.auto.commit": False,
                                       "isolation.level": "read_committed", "enable.partition.eof": True})
            self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        records = []
        deadline = time.monotonic() + timeout_s
        while self._read_up_to < end:
            for message in self._consumer.consume(1000, timeout=0.2):
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"reading {self.topic}: {error.str()}")
                    self._read_up_to = max(self._read_up_to, message.offset())
                    continue
                self._read_up_to = message.offset() + 1
                records.append(message)
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {self.topic} stopped short of its end after {timeout_s:.0f} s")
        return records

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
