"""A local cluster of several brokers: each node its own process, partitions on all of them, all stopped."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import KafkaCluster, restart_cluster, start_cluster
from kafka_local.nodes import reap
from mirror_engine.kafka import wait_until_served

pytestmark = pytest.mark.integration


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/cmdline").read_bytes() != b""  # a zombie has no command line


def test_two_brokers_share_a_topic_and_stop_together(tmp_path: Path) -> None:
    cluster = start_cluster("multi", tmp_path / "multi", brokers=2)
    pids = [cluster.pid, *(node.pid for node in cluster.brokers)]
    try:
        assert len(set(pids)) == 2 and all(_alive(pid) for pid in pids)
        assert cluster.is_running()
        assert cluster.bootstrap.count(",") == 1
        recorded = KafkaCluster.load(Path(cluster.home))
        assert recorded is not None and recorded == cluster

        admin = AdminClient(cluster.client_config())
        metadata = admin.list_topics(timeout=10)
        assert sorted(metadata.brokers) == [1, 2]
        admin.create_topics([NewTopic("spread", 4, 1)])["spread"].result()
        wait_until_served(admin, ["spread"])
        leaders = {p.leader for p in admin.list_topics("spread", timeout=10).topics["spread"].partitions.values()}
        assert leaders == {1, 2}, "the topic's partitions should land on both brokers"

        producer = Producer(cluster.client_config())
        for i in range(40):
            producer.produce("spread", value=b"v%d" % i, partition=i % 4)
        assert producer.flush(30) == 0
        consumer = Consumer({**cluster.client_config(), "group.id": "multi-reader", "auto.offset.reset": "earliest"})
        consumer.assign([TopicPartition("spread", p, 0) for p in range(4)])
        got = []
        while len(got) < 40:
            batch = consumer.consume(40, timeout=10)
            assert batch, f"{len(got)} of 40 records read within 10 s"
            got += [m for m in batch if m.error() is None]
        consumer.close()
        assert sorted(m.value() for m in got) == sorted(b"v%d" % i for i in range(40))

        # One broker down is a cluster not running; restarting starts that node alone, on its own port.
        node = cluster.brokers[0]
        os.kill(node.pid, signal.SIGKILL)
        while node.is_running():
            reap(node.pid)
            time.sleep(0.1)
        assert not cluster.is_running()
        restart_cluster(cluster)
        assert cluster.is_running() and cluster.pid == pids[0] and node.pid != pids[1]
        pids.append(node.pid)
        assert sorted(AdminClient(cluster.client_config()).list_topics(timeout=10).brokers) == [1, 2]
    finally:
        cluster.stop()
    assert not cluster.is_running()
    assert not any(_alive(pid) for pid in pids), "a broker process outlived stop()"
