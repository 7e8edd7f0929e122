"""Reading small internal topics: each `TopicTail` call returns what was written since the last; `consume_available`
returns what has arrived without waiting out a consume timeout."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.clusters import admin_client
from mirror_engine.topics import list_offsets

# For readers of small topics that stop at the end: the broker answers a fetch at the end of the log after this
# long instead of its default 500 ms, so the end-of-partition event (or the next record) comes at once.
SHORT_FETCH_WAIT = {"fetch.wait.max.ms": 10}


def consume_available(consumer: Consumer, wait_s: float, max_messages: int = 10_000) -> list[Message]:
    """The messages (records and events) that have arrived, waiting at most `wait_s` for the first one.

    `Consumer.consume(n, timeout)` returns only once it holds n messages or the timeout passed, even when the
    last record or the end-of-partition event is already there: a reader that knows when to stop would wait out
    the whole timeout on every call.
    """
    batch = consumer.consume(max_messages, timeout=0)
    if batch:
        return batch
    first = consumer.poll(wait_s)
    if first is None:
        return []
    return [first, *consumer.consume(max_messages - 1, timeout=0)]


def assign_known(consumer: Consumer, partitions: list[TopicPartition], timeout_s: float = 15.0) -> None:
    """Assign partitions after asking the consumer for their topics' metadata.

    A consumer learns the leaders of a topic it has not asked about only at its next periodic scan of unknown
    topics, once a second: its first fetch (or its lookup of a logical offset such as the beginning) waited 0.5
    to 1 s for that, measured, against 5 to 50 ms after this. (Asking creates no topic: a consumer's requests
    never do, unless its settings say `allow.auto.create.topics`; assigning a missing topic asks the same.)
    """
    for topic in sorted({tp.topic for tp in partitions}):
        consumer.list_topics(topic, timeout=timeout_s)
    consumer.assign(partitions)


class TopicTail:
    """Partition 0 of `topic`, read from the beginning on the first call and from where it stopped after that,
    with one consumer kept open (committed records only)."""

    def __init__(self, config: dict[str, str], topic: str, group_id: str) -> None:
        self.config, self.topic, self.group_id = config, topic, group_id
        self._admin = admin_client(config)
        self._consumer: Consumer | None = None
        self._read_up_to = 0
        self.exists = False  # the topic existed at the last read

    def read_new(self, timeout_s: float = 30.0) -> list[Message]:
        self.exists = self.topic in self._admin.list_topics(timeout=15).topics  # all topics: never auto-creates
        if not self.exists:
            return []
        end = list_offsets(self._admin, [TopicPartition(self.topic, 0)], OffsetSpec.latest())[(self.topic, 0)]
        if self._read_up_to >= end:
            return []
        if self._consumer is None:
            self._consumer = Consumer({**self.config, "group.id": self.group_id, "enable.auto.commit": False,
                                       "isolation.level": "read_committed", "enable.partition.eof": True,
                                       **SHORT_FETCH_WAIT})
            assign_known(self._consumer, [TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        records = []
        deadline = time.monotonic() + timeout_s
        while self._read_up_to < end:
            for message in consume_available(self._consumer, 0.2):
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
