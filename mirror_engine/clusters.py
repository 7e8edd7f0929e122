"""Reaching a cluster: client configs and what a cluster says about itself."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from mirror_engine.plan import MigrationPlan, PlanError


class ClusterUnreachable(RuntimeError):
    """A cluster did not answer; the message says which and what to check."""


@dataclass(frozen=True)
class ClusterInfo:
    alias: str
    cluster_id: str
    broker_count: int
    topic_count: int


def admin_client(config: dict[str, str]) -> AdminClient:
    return AdminClient({**config, "log_level": "3"})


def describe_cluster(alias: str, config: dict[str, str], timeout_s: float = 10.0) -> ClusterInfo:
    """Ask a cluster for its id, brokers and topics; raise ClusterUnreachable naming it if it does not answer."""
    try:
        metadata = admin_client(config).list_topics(timeout=timeout_s)
    except KafkaException as error:
        hint = ""
        if "security.protocol" not in config:
            hint = " (if the cluster uses SASL or TLS, check security.protocol and credentials)"
        raise ClusterUnreachable(
            f"cluster '{alias}' at {config.get('bootstrap.servers')} did not answer (waited up to {timeout_s:.0f} s): "
            f"{error.args[0]}{hint}"
        ) from error
    return ClusterInfo(alias, metadata.cluster_id or "", len(metadata.brokers), len(metadata.topics))


class SameClusterError(PlanError):
    """The plan's source and target are one cluster (same cluster id), however their addresses are spelled."""


def describe_plan_clusters(
    plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], timeout_s: float = 10.0
) -> tuple[ClusterInfo, ClusterInfo]:
    """Both clusters of a plan, described, once each answered and they proved to be two clusters.

    Every entry point that acts on a plan's clusters (each CLI command, target preparation) calls this
    before reading or writing anything else. Plan validation compares the addresses as written; only the
    clusters themselves can tell that `127.0.0.1:9092` and `localhost:9092` (or a DNS alias, or a load
    balancer) are one cluster, which would replicate every record onto itself, without end.
    """
    source = describe_cluster(plan.source.alias, source_config, timeout_s)
    target = describe_cluster(plan.target.alias, target_config, timeout_s)
    if source.cluster_id and source.cluster_id == target.cluster_id:
        raise SameClusterError(f"'{plan.name}'", [
            f"source, target: source '{plan.source.alias}' ({source_config.get('bootstrap.servers')}) and "
            f"target '{plan.target.alias}' ({target_config.get('bootstrap.servers')}) are the same cluster "
            f"(cluster id {source.cluster_id}): its records would be replicated onto themselves; "
            "point target at another cluster",
        ])
    return source, target
