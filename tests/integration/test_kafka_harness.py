"""The local cluster harness gives real, working brokers."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("which", ["source", "target"])
def test_produce_and_consume_round_trip(kafka_pair, unique_name, which):
    cluster = kafka_pair[0] if which == "source" else kafka_pair[1]
    admin = AdminClient(cluster.client_config())
    admin.create_topics([NewTopic(unique_name, num_partitions=2, replication_factor=1)])[unique_name].result()

    producer = Producer({**cluster.client_config(), "enable.idempotence": True})
    for i in range(100):
        producer.produce(unique_name, key=f"k{i}", value=f"v{i}", partition=i % 2,
                         headers=[("h", b"x")], timestamp=1_700_000_000_000 + i)
    assert producer.flush(10) == 0

    consumer = Consumer({**cluster.client_config(), "group.id": unique_name, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(unique_name, p, 0) for p in (0, 1)])
    got = []
    while len(got) < 100:
        batch = consumer.consume(100, timeout=10)
        assert batch, "no records within 10 s"
        got.extend(m for m in batch if m.error() is None)
    consumer.close()
    by_key = {m.key().decode(): m for m in got}
    assert len(by_key) == 100
    record = by_key["k7"]
    assert (record.value(), record.partition(), record.headers(), record.timestamp()[1]) == (
        b"v7", 1, [("h", b"x")], 1_700_000_000_007,
    )


def test_topic_create_and_describe(kafka_pair, unique_name):
    source, _ = kafka_pair
    admin = AdminClient(source.client_config())
    topic = NewTopic(unique_name, num_partitions=3, replication_factor=1,
                     config={"cleanup.policy": "compact", "retention.ms": "3600000"})
    admin.create_topics([topic])[unique_name].result()

    metadata = admin.list_topics(unique_name, timeout=10)
    assert len(metadata.topics[unique_name].partitions) == 3
    resource = ConfigResource(ConfigResource.Type.TOPIC, unique_name)
    configs = admin.describe_configs([resource])[resource].result()
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].value == "3600000"


def test_pair_clusters_are_distinct(kafka_pair):
    source, target = kafka_pair
    source_id = AdminClient(source.client_config()).list_topics(timeout=10).cluster_id
    target_id = AdminClient(target.client_config()).list_topics(timeout=10).cluster_id
    assert source.port != target.port
    assert source_id != target_id


def test_stopped_cluster_is_not_running(tmp_path):
    from kafka_local.cluster import start_cluster

    cluster = start_cluster("lonely", tmp_path / "lonely")
    assert cluster.is_running()
    cluster.stop()
    assert not cluster.is_running()
