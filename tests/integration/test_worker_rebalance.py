"""Workers and the group's rebalances: partitions added on the source, and joins and leaves at a larger shape."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_local.cluster import KafkaCluster
from mirror_engine.replication import Replicator
from mirror_engine.replication.target_upkeep import TargetUpkeep
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration


def _copied(cluster: KafkaCluster, topic: str, partition: int) -> int:
    try:
        return len(read_partition(cluster, topic, partition))
    except KafkaException:  # the partition does not exist yet
        return 0


def test_a_worker_offered_a_partition_the_target_lacks_copies_it_once_the_target_has_it(
        kafka_pair, unique_name, monkeypatch, caplog):
    """The group offers a partition added on the source as soon as the worker's consumer sees it, which may be
    before the worker's refresh created it on the target: the worker holds it until then, instead of asking the
    target for the offsets of a partition it does not have until the request times out (60 s)."""
    source, target = kafka_pair
    topic = f"{unique_name}-grow"
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, [(0, b"k", f"v{i}".encode(), None, 0) for i in range(20)])
    plan = make_plan(source, target, topic, engine={"refresh_interval_s": 1, "session_timeout_s": 6})

    # The target's preparation on refresh waits until the test lets it: the group offers the new partition first.
    caplog.set_level(logging.INFO, logger="mirror_engine.replication.engine")
    target_ready = threading.Event()
    prepare = TargetUpkeep.prepare

    def late_prepare(self, managed, initial, clusters=None):
        if not initial and not target_ready.is_set():
            return None
        return prepare(self, managed, initial, clusters)
    monkeypatch.setattr(TargetUpkeep, "prepare", late_prepare)

    replicator = Replicator(plan, source.client_config(), target.client_config(), worker_id="w1")
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while _copied(target, topic, 0) < 20:
            assert time.monotonic() < deadline, "the first partition was not copied"
            time.sleep(0.5)
        admin = AdminClient(source.client_config())
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result()
        time.sleep(1)
        produce(source, topic, [(1, b"k", f"new-{i}".encode(), None, 0) for i in range(30)])
        # The worker's consumer sees the partition within a refresh interval (1 s) and the group offers it.
        time.sleep(5)
        target_ready.set()
        deadline = time.monotonic() + 30  # half the 60 s the old worker waited for the target's offsets
        while (copied := _copied(target, topic, 1)) < 30:
            assert time.monotonic() < deadline, f"{copied} of 30 records of the added partition copied"
            time.sleep(0.5)
        assert [r.value for r in read_partition(target, topic, 1)] == [f"new-{i}".encode() for i in range(30)]
        assert runner.is_alive() and not replicator.fatal
        assert "held for their target partition: on the target now" in caplog.text  # offered before prepared
    finally:
        replicator.stop()
        runner.join(60)
