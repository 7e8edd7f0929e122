"""Airflow connections holding a TLS cluster's settings, inline PEM included: the plan hook renders them for the
engine, and a Spark job reading them from its environment logs in with them; a login that cannot succeed ends the
validation job at once, naming the cluster."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml

from kafka_local.cluster import KafkaCluster
from mirror_engine.kafka import describe_cluster
from mirror_engine.plan import PlanError
from tests.integration.plans import cluster_section, plan_dict

pytestmark = pytest.mark.integration


def _inline_pem_extra(cluster: KafkaCluster) -> dict[str, str]:
    files = cluster.tls_files
    return {"bootstrap.servers": cluster.bootstrap, "security.protocol": "SSL", "ssl.ca.pem": files.ca.read_text(),
            "ssl.certificate.pem": files.client_certificate.read_text(), "ssl.key.pem": files.client_key.read_text(),
            "ssl.key.password": cluster.client_config()["ssl.key.password"]}


def _plan_file(tmp_path, source: KafkaCluster, target: KafkaCluster) -> str:
    plan = {"name": "conn", "source": {"alias": "src", "conn_id": "tls_source"},
            "target": {"alias": "tgt", "conn_id": "tls_target"}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return str(path)


def test_connections_with_inline_pem_reach_the_cluster_from_the_engine_and_spark(mtls_pair, tmp_path, monkeypatch):
    from kafka_migration.hooks.plan import MigrationPlanHook

    from mirror_engine.kafka import describe_plan_clusters

    source, target = mtls_pair
    for conn_id, cluster in (("TLS_SOURCE", source), ("TLS_TARGET", target)):
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id}", json.dumps({"conn_type": "kafka",
                                                                  "extra": _inline_pem_extra(cluster)}))
    hook = MigrationPlanHook(_plan_file(tmp_path, source, target))
    source_config, target_config = hook.client_configs()
    assert describe_cluster("src", source_config).broker_count == 1
    assert describe_cluster("tgt", target_config).broker_count == 1

    # A Spark job started by the DAG reads the same settings from its environment (never its command line), and
    # its driver and tasks log in with them (librdkafka, as the engine).
    for name, value in hook.process_env().items():
        monkeypatch.setenv(name, value)
    job_configs = hook.plan.client_configs()
    for config in job_configs:
        assert not any("PRIVATE KEY" in str(value) for name, value in config.items() if name != "ssl.key.pem")
    described = describe_plan_clusters(hook.plan, *job_configs)
    assert [info.broker_count for info in described] == [1, 1]


def test_a_connection_turning_off_the_host_name_check_is_refused_naming_it(mtls_pair, tmp_path, monkeypatch):
    from kafka_migration.hooks.plan import MigrationPlanHook

    source, target = mtls_pair
    monkeypatch.setenv("AIRFLOW_CONN_TLS_SOURCE", json.dumps({"conn_type": "kafka", "extra": {
        **_inline_pem_extra(source), "ssl.endpoint.identification.algorithm": "none"}}))
    target_connection = {"conn_type": "kafka", "extra": _inline_pem_extra(target)}
    monkeypatch.setenv("AIRFLOW_CONN_TLS_TARGET", json.dumps(target_connection))
    with pytest.raises(PlanError) as caught:
        MigrationPlanHook(_plan_file(tmp_path, source, target)).client_configs()
    assert "connection 'tls_source' extra.ssl.endpoint.identification.algorithm" in str(caught.value)
    assert "unsafe.skip.hostname.verification" in str(caught.value)
    assert "PRIVATE KEY" not in str(caught.value)


def test_validation_ends_at_once_naming_the_cluster_when_its_login_cannot_succeed(scram_ssl_pair, tmp_path,
                                                                                    capsys):
    from spark_jobs import validate

    source, target = scram_ssl_pair
    plan = tmp_path / "plan.yaml"
    data = plan_dict(source, target, "orders")
    data["source"] = cluster_section("dc1", source, "alice")
    data["source"]["client"]["sasl.password"] = "wrong-password"
    plan.write_text(yaml.safe_dump(data))
    started = time.monotonic()
    assert validate.main(["--plan", str(plan), "--report-dir", str(tmp_path / "reports")]) == 2
    assert time.monotonic() - started < 30  # the refusal, not the login timeout
    message = capsys.readouterr().err
    assert "authentication failed for user 'alice' on cluster 'dc1'" in message, message
    assert "SCRAM-SHA-512" in message and "wrong-password" not in message


# Run in a process of its own: a session already started in this one would be returned with its own jars.
_MSK_SESSION = """
import sys
from mirror_engine.security import read_security
from spark_jobs.packages import job_packages
from spark_jobs.session import build_session

msk = read_security("msk", {"bootstrap.servers": "b-1.x.c2.kafka.eu-west-1.amazonaws.com:9098",
                                   "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"})
spark = build_session("msk-jars", packages=job_packages(msk))
loader = spark._jvm.Thread.currentThread().getContextClassLoader()
for name in ("software.amazon.msk.auth.iam.IAMLoginModule", "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
             "org.apache.spark.sql.kafka010.KafkaSourceProvider"):
    spark._jvm.java.lang.Class.forName(name, False, loader)
print("JARS", spark.sparkContext.getConf().get("spark.jars"))
spark.stop()
"""


def test_spark_jobs_reading_an_msk_cluster_get_the_msk_iam_login_on_their_class_path():
    """Spark resolves the jars from Maven Central (cached): an MSK cluster cannot be reached from here."""
    import subprocess
    import sys

    from mirror_engine.security import read_security
    from spark_jobs.packages import job_packages, kafka_connector

    msk = read_security("msk", {"bootstrap.servers": "b-1.x.c2.kafka.eu-west-1.amazonaws.com:9098",
                                       "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"})
    plain = read_security("dc1", {"bootstrap.servers": "broker:9093"})
    assert job_packages(plain).packages == (kafka_connector(),)
    assert job_packages(plain, msk).packages == (kafka_connector(), "software.amazon.msk:aws-msk-iam-auth:2.3.9")
    done = subprocess.run([sys.executable, "-c", _MSK_SESSION], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jars = done.stdout.split("JARS ", 1)[1].split(",")
    assert any("aws-msk-iam-auth" in jar for jar in jars)
    # Spark's own Jackson and SLF4J stay the only ones on the class path.
    assert not any(os.path.basename(jar).split("_", 1)[-1].startswith(("jackson-databind-", "slf4j-"))
                   for jar in jars)


def test_a_spark_job_with_secrets_is_not_submitted_to_yarn_where_its_environment_would_be_on_the_command_line(
        tmp_path, monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException
    from kafka_migration.operators.spark import MigrationSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps({"conn_type": "spark", "host": "yarn"}))
    client = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "mirror",
              "sasl.password": "yarn-secret-4711"}
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({
        "name": "yarn", "backfill": {"topics": ["orders"]},
        "source": {"alias": "src", "bootstrap_servers": "broker-1:9093", "client": client},
        "target": {"alias": "tgt", "bootstrap_servers": "broker-2:9093", "client": client}}))
    operator = MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=str(plan), stage="backfill",
                                            conn_id="spark_yarn")
    with pytest.raises(AirflowFailException) as caught:
        operator.execute({"params": {}})
    assert "Spark connection 'spark_yarn'" in str(caught.value) and "yarn-secret-4711" not in str(caught.value)
