"""A secured migration run by Airflow: no task log holds a secret, and every secret the hooks read is masked."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kafka_local.cluster import SECURED_USERS
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

DAGS = Path(__file__).resolve().parents[2] / "dags"
ADMIN_PASSWORD = SECURED_USERS["admin"]


def _migrating_user(cluster, user: str, password: str) -> None:
    """A SCRAM user allowed everything a migration's target principal does (topics, groups, transactions)."""
    admin = AdminClient(cluster.client_config())
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result()
    resources = [(ResourceType.BROKER, "kafka-cluster"), (ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"),
                 (ResourceType.TRANSACTIONAL_ID, "*")]
    acls = [AclBinding(kind, name, ResourcePatternType.LITERAL, f"User:{user}", "*", AclOperation.ALL,
                       AclPermissionType.ALLOW) for kind, name in resources]
    for future in admin.create_acls(acls).values():
        future.result()


def test_a_secured_migrations_task_logs_hold_no_secret(secured_pair, airflow_db, monkeypatch, tmp_path,
                                                        unique_name, capfd):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk._shared.secrets_masker import redact
    from airflow.utils.state import DagRunState

    source, target = secured_pair
    topic = f"{unique_name}-orders"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, int(time.time() * 1000)) for i in range(40)])
    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    # The source through an Airflow connection (password in its password field), the target in the plan itself
    # with its password from the environment: both kinds of secret reach the tasks.
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_SECURED_SOURCE", json.dumps({
        "conn_type": "kafka", "login": "admin", "password": ADMIN_PASSWORD,
        "extra": {"bootstrap.servers": source.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "SCRAM-SHA-512"}}))
    target_user, target_password = f"tgt-{unique_name[-8:]}", f"target-{unique_name[-8:]}-password"
    _migrating_user(target, target_user, target_password)
    monkeypatch.setenv("SECURED_TARGET_PASSWORD", target_password)
    name = f"airflowsecrets{unique_name[-8:]}"
    (plans / f"{name}.yaml").write_text(yaml.safe_dump({
        "name": name, "topics": {"include": [f"{unique_name}.*"]},
        "source": {"alias": "src", "conn_id": "kafka_secured_source"},
        "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap,
                   "client": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                              "sasl.username": target_user, "sasl.password": "${SECURED_TARGET_PASSWORD}"}},
        "engine": {"status_interval_s": 0.5},
    }))
    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}, bag.import_errors
    dag = bag.get_dag(f"kafka_migration__{name}")
    run = dag.test(run_conf={"stages": ["preflight", "prepare", "replicate", "catch_up", "finish"]})
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states

    output = capfd.readouterr()
    logs = [output.out, output.err]
    logs += [path.read_text(errors="replace") for path in Path(os.environ["AIRFLOW_HOME"]).rglob("*.log")
             if path.is_file() and name in str(path)]
    assert any("engine stopped" in text for text in logs), "the task logs were not captured"
    for text in logs:
        assert ADMIN_PASSWORD not in text and target_password not in text
    # Whatever a task would print, Airflow's masker hides every secret the hooks read, from either source.
    for secret in (ADMIN_PASSWORD, target_password):
        assert secret not in str(redact(f"settings: sasl.password={secret} {{'x': '{secret}'}}"))
