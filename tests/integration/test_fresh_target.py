"""A target that has never held a consumer group, as a first migration's often is: the single engine's check for
workers of its flow learns it from the metadata, without creating the cluster's offsets topic (describing a group
there creates it and waits for its coordinator to load it, 10 s on a local broker)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

from kafka_local.cluster import start_cluster
from mirror_engine.kafka import admin_client, holds_no_groups

pytestmark = pytest.mark.integration


def test_a_cluster_without_groups_is_told_at_once_and_asking_creates_no_offsets_topic(tmp_path):
    cluster = start_cluster("fresh", tmp_path / "fresh")
    try:
        admin = admin_client(cluster.client_config())
        assert holds_no_groups(admin, 10)
        assert holds_no_groups(admin, 10)  # asked again: still none, so the first look created nothing
        assert "__consumer_offsets" not in admin.list_topics(timeout=10).topics

        # The first group's commit creates the offsets topic: from then on the group itself must be asked.
        consumer = Consumer({**cluster.client_config(), "group.id": "first-group"})
        try:
            admin.create_topics([NewTopic("t", 1, 1)])
            deadline = time.monotonic() + 60
            while True:
                try:
                    consumer.commit(offsets=[TopicPartition("t", 0, 0)], asynchronous=False)
                    break
                except Exception:  # the coordinator loading the new offsets topic; the topic t being created
                    assert time.monotonic() < deadline, "no commit within 60 s"
                    time.sleep(0.5)
        finally:
            consumer.close()
        assert not holds_no_groups(admin, 10)
    finally:
        cluster.stop()
