"""A plan larger than what the KRaft controller takes in one request (10,000 metadata records: a topic, each of its
partitions and each of its configs one) is prepared in several requests, dry-run and apply alike."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from mirror_engine.prepare import Action, apply_actions

pytestmark = pytest.mark.integration

# 21 configs set explicitly: 23 records a topic, 500 topics 11,500 records, past the controller's 10,000.
CONFIGS = {
    "cleanup.policy": "delete", "compression.type": "producer", "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000", "flush.messages": "100000", "flush.ms": "1000", "index.interval.bytes": "4096",
    "max.compaction.lag.ms": "86400000", "max.message.bytes": "1048588", "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0", "min.insync.replicas": "1",
    "preallocate": "false", "retention.bytes": "-1", "retention.ms": "604800000", "segment.bytes": "104857600",
    "segment.index.bytes": "10485760", "segment.jitter.ms": "0", "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}
TOPICS = 500


def _creates(prefix: str) -> list[Action]:
    return [Action("create_topic", f"{prefix}-{i:03d}", {"partitions": 1, "replication_factor": -1,
                                                         "configs": CONFIGS, "source_topic": f"{prefix}-{i:03d}"})
            for i in range(TOPICS)]


def test_a_plan_past_the_controllers_request_limit_is_created_in_batches(kafka_pair, unique_name, monkeypatch):
    _, target = kafka_pair
    admin = AdminClient(target.client_config())

    # The limit is the broker's: sent as one request, the same topics are refused, every one of them.
    with monkeypatch.context() as patch:
        patch.setattr("mirror_engine.prepare.applying.RECORDS_PER_REQUEST", 10**9)
        refused = apply_actions(target.client_config(), _creates(f"{unique_name}-one"))
    assert not refused.applied and len(refused.failed) == TOPICS
    assert "excessively large" in refused.failed[0][1]

    checked = apply_actions(target.client_config(), _creates(unique_name), validate_only=True)
    assert not checked.failed and len(checked.applied) == TOPICS
    assert not [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{unique_name}-")]

    created = apply_actions(target.client_config(), _creates(unique_name), timeout_s=60)
    assert not created.failed, created.failed[:3]
    assert len(created.applied) == TOPICS
    topics = admin.list_topics(timeout=10).topics
    assert sum(1 for t in topics if t.startswith(f"{unique_name}-")) == TOPICS
