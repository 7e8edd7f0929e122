"""Building migration plans for tests against the local clusters."""

from __future__ import annotations

from typing import Any

from kafka_local.cluster import KafkaCluster
from mirror_engine.plan import MigrationPlan, plan_from_dict


def cluster_section(alias: str, cluster: KafkaCluster, user: str | None = None) -> dict[str, Any]:
    config = cluster.client_config(user)
    client = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    return {"alias": alias, "bootstrap_servers": cluster.bootstrap, "client": client}


def plan_dict(source: KafkaCluster, target: KafkaCluster, prefix: str, **sections: Any) -> dict[str, Any]:
    """A plan replicating the topics named `<prefix>...` from source to target."""
    data: dict[str, Any] = {
        "name": "test",
        "source": cluster_section("src", source),
        "target": cluster_section("tgt", target),
        "topics": {"include": [f"{prefix}.*"]},
    }
    for key, value in sections.items():
        data[key] = value
    return data


def make_plan(source: KafkaCluster, target: KafkaCluster, prefix: str, **sections: Any) -> MigrationPlan:
    return plan_from_dict(plan_dict(source, target, prefix, **sections))


def create_topics(cluster: KafkaCluster, topics: list, timeout_s: float = 15.0) -> None:
    """Create topics and wait until the broker's metadata serves them (creation returns before that)."""
    import time

    from confluent_kafka.admin import AdminClient

    admin = AdminClient(cluster.client_config())
    for future in admin.create_topics(topics).values():
        future.result()
    names = {topic.topic for topic in topics}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        metadata = admin.list_topics(timeout=5).topics
        if all(name in metadata and metadata[name].error is None for name in names):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topics not visible after {timeout_s} s: {sorted(names)}")
