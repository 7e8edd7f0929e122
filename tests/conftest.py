"""Shared fixtures: real local Kafka clusters (plain and secured pairs) and Airflow's environment.

Airflow reads its configuration from the environment when first imported, so it is set here,
before any test module imports Airflow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".airflow"))
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(ROOT / "dags"))
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(ROOT / "plugins"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__PARALLELISM", "4")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Airflow puts the plugins folder on sys.path in its own processes; tests import it directly.
sys.path.insert(0, str(ROOT / "plugins"))

from kafka_local.cluster import KafkaCluster, start_pair  # noqa: E402
from kafka_local.registry import SchemaRegistryServer, start_registry  # noqa: E402


@pytest.fixture(scope="session")
def kafka_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """A plain source and target cluster, shared by the whole session."""
    source, target = start_pair(tmp_path_factory.mktemp("kafka-plain"))
    yield source, target
    source.stop()
    target.stop()


@pytest.fixture(scope="session")
def registry_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SchemaRegistryServer,
                                                                             SchemaRegistryServer]]:
    """A source and a target schema registry (Apicurio, Confluent-compatible API), shared by the whole session."""
    home = tmp_path_factory.mktemp("registries")
    source = start_registry(home / "source")
    try:
        target = start_registry(home / "target")
    except BaseException:
        source.stop()
        raise
    yield source, target
    source.stop()
    target.stop()


@pytest.fixture(scope="session")
def secured_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """A SASL (PLAIN and SCRAM-SHA-512) source and target with ACLs enforced; `admin` is the super user."""
    source, target = start_pair(tmp_path_factory.mktemp("kafka-secured"), secured=True)
    yield source, target
    source.stop()
    target.stop()


# The ZooKeeper-era version in the suite; older ones run in tests marked slow (`pytest -m slow`).
LEGACY_SUITE_VERSION = "2.8.2"


@pytest.fixture(scope="session")
def legacy_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """A Kafka 2.8 broker in ZooKeeper mode, with its own ZooKeeper, SASL PLAIN and `AclAuthorizer` (`admin` is
    the super user): a source cluster of the ZooKeeper era. Started only when a test asks for it."""
    from kafka_local.legacy import start_legacy_cluster

    cluster = start_legacy_cluster("legacy-source", tmp_path_factory.mktemp("kafka-legacy") / "source",
                                   LEGACY_SUITE_VERSION, secured=True)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def mtls_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """A source and target speaking SSL with client certificates required (no SASL)."""
    source, target = start_pair(tmp_path_factory.mktemp("kafka-mtls"), tls="mtls")
    yield source, target
    source.stop()
    target.stop()


@pytest.fixture(scope="session")
def scram_ssl_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """A source and target speaking SASL_SSL with SCRAM-SHA-512 logins."""
    source, target = start_pair(tmp_path_factory.mktemp("kafka-scram-ssl"), tls="scram")
    yield source, target
    source.stop()
    target.stop()


@pytest.fixture(scope="session")
def oauth_server(tmp_path_factory: pytest.TempPathFactory):
    """A real OAuth 2 server on loopback (mock-oauth2-server): client-credentials tokens, a JWKS endpoint."""
    from kafka_local.oauth import start_oauth_server

    server = start_oauth_server(tmp_path_factory.mktemp("oauth"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oauth_pair(tmp_path_factory: pytest.TempPathFactory, oauth_server) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """A source and target speaking SASL_SSL with OAUTHBEARER, validating `oauth_server`'s tokens (JWKS)."""
    source, target = start_pair(tmp_path_factory.mktemp("kafka-oauth"), tls="oauth", oauth_issuer=oauth_server.issuer)
    yield source, target
    source.stop()
    target.stop()


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """Airflow's SQLite metadata DB, migrated (idempotent; a few seconds when already current)."""
    airflow = Path(sys.executable).parent / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A topic/group name unique to the test, so tests sharing clusters never see each other's data."""
    import uuid

    return f"{request.node.name[:40]}-{uuid.uuid4().hex[:8]}".replace("[", "-").replace("]", "")


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession with the Kafka connector for the whole run (starting one takes seconds)."""
    from spark_jobs.session import build_session

    session = build_session("tests")
    yield session
    session.stop()
