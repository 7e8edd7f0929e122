"""Spark's Kafka connector against the real local clusters.

What these tests pin down: the connector's sink keeps key, value, headers and partition but has no
timestamp column (records get the broker's time), while its source reads timestamps exactly. So
the backfill job reads with the connector and must write with a producer that sets timestamps.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# Recent timestamps: records older than the brokers' 7-day retention would be deleted under the test.
BASE_TS = int(time.time() * 1000) - 86_400_000


def _create_topic(cluster, name: str, partitions: int) -> None:
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result()


def _rows(count: int) -> list[tuple]:
    return [
        (f"k{i}".encode(), f"value-{i}".encode(), [("trace", f"t{i}".encode()), ("n", None)], i % 2, BASE_TS + i)
        for i in range(count)
    ]


def _write_with_spark_sink(spark, cluster, topic: str, rows: list[tuple]) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        rows, "key binary, value binary, headers array<struct<key:string,value:binary>>, partition int, ts long"
    ).withColumn("timestamp", F.timestamp_millis("ts")).drop("ts")
    (frame.write.format("kafka").option("kafka.bootstrap.servers", cluster.bootstrap)
     .option("topic", topic).option("includeHeaders", "true").save())


def _read_all(cluster, topic: str, partitions: int, count: int) -> dict:
    consumer = Consumer({**cluster.client_config(), "group.id": topic})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = {}
    while len(got) < count:
        batch = consumer.consume(500, timeout=10)
        assert batch, f"only {len(got)} of {count} records arrived"
        for message in batch:
            assert message.error() is None
            got[message.key()] = message
    consumer.close()
    return got


def test_spark_sink_records_read_back_by_confluent_kafka(spark, kafka_pair, unique_name):
    source, _ = kafka_pair
    _create_topic(source, unique_name, 2)
    rows = _rows(1000)
    _write_with_spark_sink(spark, source, unique_name, rows)

    got = _read_all(source, unique_name, 2, 1000)
    for key, value, headers, partition, _ts in rows:
        message = got[key]
        assert message.value() == value
        assert message.partition() == partition
        assert message.headers() == list(headers)


def test_spark_sink_does_not_keep_record_timestamps(spark, kafka_pair, unique_name):
    source, _ = kafka_pair
    _create_topic(source, unique_name, 2)
    _write_with_spark_sink(spark, source, unique_name, _rows(10))

    got = _read_all(source, unique_name, 2, 10)
    # The sink ignores the timestamp column: every record carries the producer's "now".
    assert all(message.timestamp()[1] > BASE_TS + 10_000_000 for message in got.values())


def test_spark_source_reads_keys_values_headers_and_timestamps(spark, kafka_pair, unique_name):
    source, _ = kafka_pair
    _create_topic(source, unique_name, 2)
    rows = _rows(1000)
    producer = Producer(source.client_config())
    for key, value, headers, partition, ts in rows:
        producer.produce(unique_name, key=key, value=value, headers=headers, partition=partition, timestamp=ts)
    assert producer.flush(10) == 0

    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", source.bootstrap)
             .option("subscribe", unique_name).option("includeHeaders", "true")
             .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    read = {
        row.key: row
        for row in frame.selectExpr("key", "value", "headers", "partition", "unix_millis(timestamp) AS ts").collect()
    }
    assert len(read) == 1000
    for key, value, headers, partition, ts in rows:
        row = read[key]
        assert (bytes(row.value), row.partition, row.ts) == (value, partition, ts)
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in row.headers] == headers


def test_a_local_session_has_a_heap_of_two_gib(spark):
    """Local mode runs the tasks in the session's JVM: Spark's default 1 GiB heap cost a 3,000,000-record backfill
    a quarter of its tasks' time in garbage collection (bench/README.md)."""
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert heap > 1.5 * 2**30, f"{heap / 2**30:.2f} GiB"
