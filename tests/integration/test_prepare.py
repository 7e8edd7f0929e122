"""Target preparation on real clusters: topics, partitions and configs, planned then applied."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic

from mirror_engine.prepare import apply_actions, plan_preparation
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

# (suffix, partitions, configs): varied on purpose; min.insync.replicas and message.timestamp.type
# are in MirrorMaker 2's default exclude list and must not reach the target.
SOURCE_TOPICS = [
    ("plain", 1, {}),
    ("compacted", 3, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}),
    ("compact-delete", 2, {"cleanup.policy": "compact,delete", "retention.ms": "86400000"}),
    ("retention-ms", 4, {"retention.ms": "3600000"}),
    ("retention-bytes", 2, {"retention.bytes": "104857600"}),
    ("big-records", 1, {"max.message.bytes": "5242880"}),
    ("min-isr", 2, {"min.insync.replicas": "1"}),
    ("zstd", 3, {"compression.type": "zstd"}),
    ("lz4", 1, {"compression.type": "lz4"}),
    ("log-append", 2, {"message.timestamp.type": "LogAppendTime"}),
    ("segment", 2, {"segment.bytes": "10485760", "segment.ms": "3600000"}),
    ("many-partitions", 12, {}),
    ("delete-retention", 1, {"cleanup.policy": "compact", "delete.retention.ms": "1000"}),
    ("index", 1, {"index.interval.bytes": "8192"}),
    ("flush", 1, {"flush.messages": "10000"}),
    ("dirty-ratio", 2, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1"}),
    ("preallocate", 1, {"preallocate": "true"}),
    ("max-compaction", 1, {"cleanup.policy": "compact", "max.compaction.lag.ms": "600000"}),
    ("local-retention", 5, {"retention.ms": "7200000", "retention.bytes": "1073741824"}),
    ("mixed", 6, {"cleanup.policy": "compact,delete", "compression.type": "gzip", "retention.ms": "600000"}),
    ("dots.in.name", 2, {}),
]
NOT_SYNCED = {"min.insync.replicas", "message.timestamp.type"}


def _configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result()
    return {name: entry.value for name, entry in entries.items()}


def _prepare(plan, source, target):
    prepared = plan_preparation(plan, source.client_config(), target.client_config())
    assert prepared.problems == []
    result = apply_actions(target.client_config(), prepared.actions)
    assert result.ok, result.to_dict()
    return prepared


@pytest.fixture
def varied_source(kafka_pair, unique_name):
    source, _ = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + suffix, p, 1, config=c) for suffix, p, c in SOURCE_TOPICS])
    # Topics the plan must leave alone: excluded by MM2's default excludes or internal names.
    create_topics(source, [NewTopic(prefix + suffix, 1, 1) for suffix in ("x.internal", "x-internal", "x.replica")])
    return prefix


def test_prepare_creates_every_included_topic_with_partitions_and_synced_configs(kafka_pair, varied_source):
    source, target = kafka_pair
    plan = make_plan(source, target, varied_source)
    _prepare(plan, source, target)

    target_admin = AdminClient(target.client_config())
    metadata = target_admin.list_topics(timeout=10)
    for suffix, partitions, configs in SOURCE_TOPICS:
        name = varied_source + suffix
        assert name in metadata.topics, f"{name} missing on the target"
        assert len(metadata.topics[name].partitions) == partitions
        actual = _configs(target_admin, name)
        for key, value in configs.items():
            if key in NOT_SYNCED:
                assert actual[key] != value or (key == "min.insync.replicas" and value == "1"), key
            else:
                assert actual[key] == value, f"{name}: {key}"
    for excluded in ("x.internal", "x-internal", "x.replica"):
        assert varied_source + excluded not in metadata.topics


def test_second_prepare_finds_nothing_to_do(kafka_pair, varied_source):
    source, target = kafka_pair
    plan = make_plan(source, target, varied_source)
    _prepare(plan, source, target)
    again = plan_preparation(plan, source.client_config(), target.client_config())
    assert again.actions == []
    assert again.problems == []


def test_dry_run_validates_without_changing_the_target(kafka_pair, varied_source):
    source, target = kafka_pair
    plan = make_plan(source, target, varied_source)
    prepared = plan_preparation(plan, source.client_config(), target.client_config())
    result = apply_actions(target.client_config(), prepared.actions, validate_only=True)
    assert result.ok and len(result.applied) == len(SOURCE_TOPICS)
    topics = AdminClient(target.client_config()).list_topics(timeout=10).topics
    assert not [name for name in topics if name.startswith(varied_source)]


def test_added_partitions_and_changed_configs_are_synced_by_a_later_prepare(kafka_pair, varied_source):
    source, target = kafka_pair
    plan = make_plan(source, target, varied_source)
    _prepare(plan, source, target)

    source_admin = AdminClient(source.client_config())
    grown, changed = varied_source + "plain", varied_source + "retention-ms"
    source_admin.create_partitions([NewPartitions(grown, 4)])[grown].result()
    resource = ConfigResource(ConfigResource.Type.TOPIC, changed, incremental_configs=[
        ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)])
    source_admin.incremental_alter_configs([resource])[resource].result()
    time.sleep(1)

    prepared = _prepare(plan, source, target)
    assert {(a.kind, a.resource) for a in prepared.actions} == {("add_partitions", grown), ("alter_configs", changed)}
    target_admin = AdminClient(target.client_config())
    assert len(target_admin.list_topics(grown, timeout=10).topics[grown].partitions) == 4
    assert _configs(target_admin, changed)["retention.ms"] == "120000"


def test_default_policy_prefixes_target_topics_with_the_source_alias(kafka_pair, unique_name):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "a", 2, 1)])
    plan = make_plan(source, target, prefix, replication_policy={"type": "default"})
    _prepare(plan, source, target)
    topics = AdminClient(target.client_config()).list_topics(timeout=10).topics
    assert f"src.{prefix}a" in topics
    assert f"{prefix}a" not in topics


def test_target_topic_holding_foreign_data_is_a_problem_and_nothing_is_applied(kafka_pair, unique_name):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "taken", 1, 1), NewTopic(prefix + "free", 1, 1)])
    create_topics(target, [NewTopic(prefix + "taken", 1, 1)])
    producer = Producer(target.client_config())
    producer.produce(prefix + "taken", b"someone else's record")
    assert producer.flush(10) == 0

    plan = make_plan(source, target, prefix)
    prepared = plan_preparation(plan, source.client_config(), target.client_config())
    assert len(prepared.problems) == 1
    assert f"topic '{prefix}taken'" in prepared.problems[0]
    assert "reuse_existing_topics" in prepared.problems[0]

    reuse = make_plan(source, target, prefix, sync={"reuse_existing_topics": True})
    assert plan_preparation(reuse, source.client_config(), target.client_config()).problems == []


def test_replication_factor_above_target_broker_count_is_a_problem(kafka_pair, unique_name):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "a", 1, 1)])
    plan = make_plan(source, target, prefix, sync={"replication_factor": 3})
    prepared = plan_preparation(plan, source.client_config(), target.client_config())
    assert any(p.startswith("sync.replication_factor: 3") for p in prepared.problems)


def test_preparing_a_cluster_onto_itself_is_refused_by_cluster_id_before_reading_topics(kafka_pair, unique_name):
    """The Airflow stages call plan_preparation directly: it must refuse what the CLI refuses."""
    from mirror_engine.kafka import SameClusterError
    from mirror_engine.plan import plan_from_dict
    from tests.integration.plans import plan_dict

    source, _ = kafka_pair
    data = plan_dict(source, source, unique_name)
    data["target"]["bootstrap_servers"] = source.bootstrap.replace("127.0.0.1", "localhost")
    same_config = {**source.client_config(), "bootstrap.servers": data["target"]["bootstrap_servers"]}
    with pytest.raises(SameClusterError, match="same cluster"):
        plan_preparation(plan_from_dict(data), source.client_config(), same_config)
