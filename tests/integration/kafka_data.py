"""Writing and reading test data on the real clusters."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from kafka_local.cluster import KafkaCluster


@dataclass(frozen=True)
class Record:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp: int

    def content(self) -> tuple:
        """Everything but the offset: what a copy must keep."""
        return (self.key, self.value, self.headers, self.timestamp)


def read_partition(cluster: KafkaCluster, topic: str, partition: int, committed: bool = True) -> list[Record]:
    """Every record of a partition from its start to its current end (read_committed by default)."""
    consumer = Consumer({
        **cluster.client_config(), "group.id": "test-reader", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": "read_committed" if committed else "read_uncommitted",
        "fetch.wait.max.ms": 10,  # the end is known from an empty fetch: the broker's 500 ms wait was most of a read
    })
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    records: list[Record] = []
    if high <= low:
        consumer.close()
        return records
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            # A batch returns when full or at its timeout, not at the partition's end: a short timeout, or every
            # read of a partition took a second more (about 120 reads in some tests).
            for message in consumer.consume(10_000, timeout=0.1):
                error = message.error()
                if error is None:
                    records.append(Record(message.offset(), message.key(), message.value(),
                                          tuple(message.headers() or ()), message.timestamp()[1]))
                elif error.code() == KafkaError._PARTITION_EOF:
                    return records
                else:
                    raise RuntimeError(error.str())
        raise TimeoutError(f"{topic}[{partition}] not read to its end in 60 s")
    finally:
        consumer.close()


def end_offsets(cluster: KafkaCluster, topic: str, partitions: int, committed: bool = False) -> list[int]:
    """Each partition's end offset (duplicates included), or with `committed` its last stable offset (what
    read_committed readers see up to); zeros while the topic does not exist yet."""
    from confluent_kafka import KafkaException

    consumer = Consumer({**cluster.client_config(), "group.id": "test-end-offsets",
                         "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1] for p in range(partitions)]
    except KafkaException:
        return [0] * partitions
    finally:
        consumer.close()


def produce(cluster: KafkaCluster, topic: str, records: list[tuple], **config) -> None:
    """records: (partition, key, value, headers, timestamp)."""
    producer = Producer({**cluster.client_config(), "linger.ms": 5, **config})
    for partition, key, value, headers, timestamp in records:
        while True:
            try:
                producer.produce(topic, value, key, partition, timestamp=timestamp, headers=headers)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def produce_transactions(cluster: KafkaCluster, topic: str, partitions: int, transactions: int,
                         per_transaction: int, abort_every: int, transactional_id: str, first: int = 0) -> int:
    """Transactions of records spread over the partitions; every `abort_every`-th one aborted (counted from 0; `first`:
    the number of the first, to go on after earlier ones). Returns how many records were committed."""
    producer = Producer({**cluster.client_config(), "transactional.id": transactional_id})
    producer.init_transactions(30)
    committed = 0
    for t in range(first, first + transactions):
        producer.begin_transaction()
        aborted = (t + 1) % abort_every == 0
        for i in range(per_transaction):
            state = "aborted" if aborted else "committed"
            producer.produce(topic, f"{state}-{t}-{i}".encode(), f"k{i}".encode(), i % partitions,
                             headers=[("txn", str(t).encode())])
        if aborted:
            # Flushed first so the aborted records really land in the log, and because librdkafka
            # can send EndTxn before the coordinator registered the transaction's partitions, which
            # the broker rejects with a fatal INVALID_TXN_STATE (librdkafka issue 4849).
            assert producer.flush(30) == 0
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            committed += per_transaction
    return committed


def wait_for_compaction_gaps(cluster: KafkaCluster, topic: str, partition: int, timeout_s: float = 60) -> list[Record]:
    """Wait until the log cleaner removed superseded records (offsets then have gaps)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        records = read_partition(cluster, topic, partition)
        offsets = [r.offset for r in records]
        if len(offsets) > 2 and offsets[-1] - offsets[0] + 1 > len(offsets):  # a gap inside the log
            return records
        time.sleep(1)
    raise TimeoutError(f"no compaction gaps appeared in {topic}[{partition}] within {timeout_s:.0f} s")


def read_as_group(config: dict, group: str, topic: str, wanted: dict[int, int], timeout_s: float = 60) -> dict:
    """Read as `group` until it has `wanted[p]` records of each partition p (None: to the partition's end); commit
    the offset after the last record read of each partition and leave. The records, by partition."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.subscribe([topic])
    read: dict[int, list[tuple]] = defaultdict(list)
    last: dict[int, int] = {}
    ended: set[int] = set()
    deadline = time.monotonic() + timeout_s

    def done() -> bool:
        return all(p in ended if count is None else len(read[p]) >= count for p, count in wanted.items())

    try:
        while not done():
            assert time.monotonic() < deadline, f"group {group} read only {dict(read)}"
            for message in consumer.consume(100, timeout=0.5):
                if message.error() is not None:
                    assert message.error().code() == KafkaError._PARTITION_EOF, message.error().str()
                    ended.add(message.partition())
                    continue
                partition = message.partition()
                count = wanted.get(partition)
                if count is not None and len(read[partition]) >= count:
                    continue  # read past what was wanted: not committed, read again by the next reader
                ended.discard(partition)
                read[partition].append((message.key(), message.value(), tuple(message.headers() or ()),
                                        message.timestamp()[1]))
                last[partition] = message.offset()
        consumer.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)
    finally:
        consumer.close()
    return read
