"""Reaching a cluster: client configs and what a cluster says about itself."""

from __future__ import annotations

import contextlib
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.security import redact


class ClusterUnreachable(RuntimeError):
    """A cluster did not answer; the message says which and what to check."""


@dataclass(frozen=True)
class ClusterInfo:
    alias: str
    cluster_id: str
    broker_count: int


# An admin request refused for a moment (a leader not yet known of a topic created a moment ago, say) is asked again
# after this long, growing to librdkafka's retry.backoff.max.ms (1 s): at its default of 100 ms the ListOffsets that
# follows a topic's creation took 180 ms, against 65 ms at 10 ms, and a fresh migration's start waits for two.
ADMIN_RETRY_BACKOFF = {"retry.backoff.ms": "10"}


def admin_client(config: dict[str, str]) -> AdminClient:
    """An admin client of `config` (a backoff the configuration sets is kept)."""
    return AdminClient({**ADMIN_RETRY_BACKOFF, **config, "log_level": "3"})


# The admin clients `first_connection` saw connected.
_CONNECTED: weakref.WeakSet[AdminClient] = weakref.WeakSet()


def first_connection(admin: AdminClient, timeout_s: float) -> None:
    """Return once `admin` is connected to a broker of the cluster (looked at once per client; a failure is left to
    the request that follows, which meets it too and says why).

    librdkafka (2.10 and later) drops its bootstrap servers' connections once their first answer names the cluster's
    brokers: a request to partition leaders made by a fresh client at that moment finds no broker up and waits for
    the client's next look, a second later, once or more. ListOffsets asked of a fresh client took 1 to 3 s in 13 of
    100 tries on a two-broker cluster (0.07 s otherwise); after a DescribeCluster, which waits for any broker, in none
    of 100 (0.02 s more)."""
    if admin in _CONNECTED:
        return
    # A broker before 2.8 has no DescribeCluster (its refusal comes once connected); a cluster that does not answer
    # fails the request that follows as well.
    with contextlib.suppress(KafkaException):
        admin.describe_cluster(request_timeout=timeout_s).result()
    _CONNECTED.add(admin)


def cluster_identity(admin: AdminClient, timeout_s: float) -> tuple[str, list[int]]:
    """(cluster id, broker ids). DescribeCluster answers without the whole cluster's metadata (every topic and
    partition: 0.14 s against 0.02 s at 20,000 partitions, for every command and every poll of a sensor that checks
    the clusters); a broker before Kafka 2.8 has none, and the metadata also says best why a cluster does not answer:
    asked then, its KafkaException raised when it does not answer either."""
    try:
        answer = admin.describe_cluster(request_timeout=timeout_s).result()
        return answer.cluster_id or "", [node.id for node in answer.nodes]
    except KafkaException:
        metadata = admin.list_topics(timeout=timeout_s)
        return metadata.cluster_id or "", list(metadata.brokers)


def describe_cluster(alias: str, config: dict[str, str], timeout_s: float = 10.0) -> ClusterInfo:
    """Ask a cluster for its id and brokers (`cluster_identity`); raise ClusterUnreachable naming it if it does not
    answer.

    librdkafka retries a refused login or a listener speaking another protocol until the timeout and then
    says only "transport failure"; the client errors seen meanwhile (its error callback) tell why, and the
    first one that settles it ends the wait.
    """
    client_errors: list[KafkaError] = []
    admin = AdminClient({**config, "log_level": "3", "error_cb": client_errors.append})
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cluster_id, brokers = cluster_identity(admin, min(1.0, max(0.1, deadline - time.monotonic())))
            return ClusterInfo(alias, cluster_id, len(brokers))
        except KafkaException as error:
            admin.poll(0.1)  # serves the error callback
            if time.monotonic() >= deadline or any(e.code() == KafkaError._AUTHENTICATION for e in client_errors):
                raise ClusterUnreachable(_unreachable_message(alias, config, timeout_s, error, client_errors)) \
                    from error


def _unreachable_message(alias: str, config: dict[str, str], timeout_s: float, error: KafkaException,
                         client_errors: list[KafkaError]) -> str:
    """Why a cluster did not answer, in the user's terms: credentials, protocol, or the network."""
    bootstrap = config.get("bootstrap.servers", "")
    protocol = str(config.get("security.protocol", "plaintext")).upper()
    reasons = " ".join(e.str() for e in client_errors)
    if protocol.startswith("SASL") and "Request not valid in current SASL state" in reasons:
        # The broker answered the SASL handshake as a listener without SASL does (no mechanisms enabled).
        return (f"the listener at {bootstrap} does not speak SASL (is it PLAINTEXT?): cluster '{alias}' refused the "
                f"SASL handshake; set security.protocol to the listener's protocol, or point bootstrap.servers at "
                "its SASL listener")
    refusal = next((e.str() for e in client_errors if e.code() == KafkaError._AUTHENTICATION), "")
    if refusal:
        return (f"authentication failed for user '{config.get('sasl.username', '')}' on cluster '{alias}' "
                f"({bootstrap}, SASL mechanism {config.get('sasl.mechanism', 'GSSAPI')}): check the user's "
                f"password and mechanism ({redact(refusal)})")
    hint = ""
    if "security.protocol" not in config:
        hint = " (if the cluster uses SASL or TLS, check security.protocol and credentials)"
    return (f"cluster '{alias}' at {bootstrap} did not answer (waited up to {timeout_s:.0f} s): "
            f"{redact(error.args[0].str() if error.args else str(error))}{hint}")


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

    Both are asked at the same time; when neither answers, the source's error is the one raised.
    """
    with ThreadPoolExecutor(max_workers=2) as pool:
        asked_source = pool.submit(describe_cluster, plan.source.alias, source_config, timeout_s)
        asked_target = pool.submit(describe_cluster, plan.target.alias, target_config, timeout_s)
        source, target = asked_source.result(), asked_target.result()
    if source.cluster_id and source.cluster_id == target.cluster_id:
        raise SameClusterError(f"'{plan.name}'", [
            f"source, target: source '{plan.source.alias}' ({source_config.get('bootstrap.servers')}) and "
            f"target '{plan.target.alias}' ({target_config.get('bootstrap.servers')}) are the same cluster "
            f"(cluster id {source.cluster_id}): its records would be replicated onto themselves; "
            "point target at another cluster",
        ])
    return source, target
