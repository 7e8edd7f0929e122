"""Reaching a cluster: client configs and what a cluster says about itself."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient


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
