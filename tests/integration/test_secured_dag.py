"""The migration DAG on TLS clusters with Airflow connections holding the settings (inline PEM included), its Spark
backfill submitted by the DAG's SparkSubmitOperator to a Spark standalone cluster on loopback: the TLS files reach
the executors through `spark-submit --files`, the executors may call the OAuth token endpoint, and no task log,
report, executor log or command line seen while the DAG ran holds a test password, token or key material.

One run for two kinds: the source speaks SASL_SSL with OAUTHBEARER (OIDC client credentials), the target SSL with
client certificates (mTLS), as a migration from a cloud service to a data centre's cluster would."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import NewTopic

from kafka_local.cluster import KafkaCluster
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics
from tests.integration.spark_standalone import SparkStandalone, start_standalone
from tests.integration.test_secured_migration import _seed
from tests.integration.tls_runs import NOW, PARTITIONS, RECORDS, assert_no_secret, ends, forbidden_strings

pytestmark = [pytest.mark.integration, pytest.mark.airflow, pytest.mark.spark]

DAGS = Path(__file__).resolve().parents[2] / "dags"
ALLOWED_URLS = "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls="


@pytest.fixture(scope="module")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    cluster = start_standalone(tmp_path_factory.mktemp("spark-standalone"))
    yield cluster
    cluster.stop()


class CommandLines:
    """The command lines of this process's descendants, and of processes naming `marker`, seen while a block runs
    (sampled every 0.2 s; other processes of the machine are not this test's)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            parents, commands = {}, {}
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    try:
                        stat = (entry / "stat").read_text()
                        raw = (entry / "cmdline").read_bytes()
                    except OSError:
                        continue
                    parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
                    commands[int(entry.name)] = raw.replace(b"\0", b" ").decode(errors="replace")
            ours = {os.getpid()}
            for _ in range(12):  # deep enough for spark-submit's, the executors' and the workers' children
                ours |= {pid for pid, parent in parents.items() if parent in ours}
            self.seen |= {command for pid, command in commands.items()
                          if command and (pid in ours or self.marker in command)}

    def __enter__(self) -> CommandLines:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _connection(cluster: KafkaCluster) -> str:
    """A `kafka` connection with every TLS file inline in its extras (as a secrets backend would hold it)."""
    config = cluster.client_config()
    extra = {key: value for key, value in config.items() if not key.endswith(".location")}
    if "ssl.ca.location" in config:
        extra["ssl.ca.pem"] = Path(config["ssl.ca.location"]).read_text()
    if "ssl.certificate.location" in config:
        extra["ssl.certificate.pem"] = Path(config["ssl.certificate.location"]).read_text()
        extra["ssl.key.pem"] = Path(config["ssl.key.location"]).read_text()
    return json.dumps({"conn_type": "kafka", "extra": extra})


def _migration_env(monkeypatch, tmp_path: Path, spark: SparkStandalone, source: KafkaCluster,
                   target: KafkaCluster) -> Path:
    plans = tmp_path / "plans"
    plans.mkdir()
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))
    host, port = spark.master.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", json.dumps({"conn_type": "spark", "host": host,
                                                               "port": int(port)}))
    monkeypatch.setenv("AIRFLOW_CONN_TLS_DAG_SOURCE", _connection(source))
    monkeypatch.setenv("AIRFLOW_CONN_TLS_DAG_TARGET", _connection(target))
    return plans


def _load_dag(dag_id: str):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}, bag.import_errors
    return bag.get_dag(dag_id)


def _logs_and_reports(name: str) -> list[tuple[str, str]]:
    home = Path(os.environ["AIRFLOW_HOME"])
    return [(path.read_text(errors="replace"), str(path)) for path in home.rglob("*")
            if path.is_file() and name in str(path) and path.suffix in (".log", ".json", ".html")]


def test_migration_dag_from_oidc_to_mtls_with_inline_pem_connections_and_a_spark_cluster(
        oauth_pair, mtls_pair, oauth_server, spark_standalone, airflow_db, monkeypatch, tmp_path, unique_name, capfd):
    from airflow.utils.state import DagRunState, TaskInstanceState

    source, target = oauth_pair[0], mtls_pair[1]
    orders, history, group = f"{unique_name}-orders", f"{unique_name}-history", f"{unique_name}-app"
    _seed(source, orders, group)
    create_topics(source, [NewTopic(history, PARTITIONS, 1)])
    produce(source, history, [(i % PARTITIONS, f"h{i}".encode(), f"old-{i}".encode(), None, NOW + i)
                              for i in range(RECORDS)])
    plans = _migration_env(monkeypatch, tmp_path, spark_standalone, source, target)
    name = f"tlsdag{unique_name[-8:]}"
    (plans / f"{name}.yaml").write_text(yaml.safe_dump({
        "name": name, "topics": {"include": [f"{unique_name}.*"]},
        "source": {"alias": "src", "conn_id": "tls_dag_source"},
        "target": {"alias": "tgt", "conn_id": "tls_dag_target"},
        "backfill": {"topics": [history]},
        "groups": {"include": [f"{unique_name}.*"]},
        "cutover": {"groups": [group], "wait_timeout_s": 240},
        "engine": {"refresh_interval_s": 2},
    }))
    capfd.readouterr()
    with CommandLines(name) as commands:
        run = _load_dag(f"kafka_migration__{name}").test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == DagRunState.SUCCESS, states
    for task_id in ("prepare.apply", "replicate.start", "backfill.history", "backfill.done", "validate.records",
                    "checkpoints.current", "switch_groups.switch", "finish.stop_engine"):
        assert states[task_id] == TaskInstanceState.SUCCESS, (task_id, states)
    for topic in (orders, history):
        assert ends(target, topic) == ends(source, topic) == [RECORDS // PARTITIONS] * PARTITIONS, topic
    report = json.loads(sorted((Path(os.environ["AIRFLOW_HOME"]) / "reports").glob(f"validation-{name}-*.json"))[-1]
                        .read_text())
    assert report["clean"] and report["totals"]["source_records"] == 2 * RECORDS, report["totals"]

    # The backfill ran on the Spark cluster, the TLS files shipped with --files (never a secret on the command line).
    submits = [c for c in commands.seen if "org.apache.spark.deploy.SparkSubmit" in c and name in c]
    assert submits and all(spark_standalone.master in c for c in submits), submits
    assert all("--files" in c and all(f in c for f in ("source-ca.pem", "target-ca.pem", "target-client.p12"))
               for c in submits), submits
    executors = [c for c in commands.seen if "CoarseGrainedExecutorBackend" in c]
    # The backfill's tasks read the OIDC source with librdkafka, which calls the token endpoint itself: no Java
    # Kafka client runs in its executors, so no JVM is allowed to call the endpoint.
    assert executors and not any(ALLOWED_URLS in c for c in executors), executors
    shipped = sorted(spark_standalone.work_dir.glob("app-*/*/target-client.p12"))
    assert shipped, "the client keystore did not reach the executors"
    for keystore in shipped:  # key material reaches the executors only encrypted, readable by its owner only
        assert b"PRIVATE KEY" not in keystore.read_bytes()
        assert keystore.stat().st_mode & 0o044 == 0, oct(keystore.stat().st_mode)
    # The executors' Kafka clients read the shipped files by their relative names, no path of the Airflow worker:
    # the history on the target (above) was read over TLS with source-ca.pem and written with target-client.p12 by
    # the backfill's tasks, and the staging folder that held them on the Airflow worker is gone (below).
    executor_logs = "".join(log.read_text(errors="replace") for log in spark_standalone.executor_logs())
    assert "mirror-engine-keys-" not in executor_logs and "mirror-engine-job-" not in executor_logs
    staging = {part for c in submits for part in c.split() if "mirror-engine-job-" in part}
    assert staging and not any(Path(p.split(",")[0]).parent.exists() for p in staging)  # removed after the task

    output = capfd.readouterr()
    secrets = forbidden_strings(source, target)
    texts = [(output.out + output.err, "the task logs"), *_logs_and_reports(name),
             *((log.read_text(errors="replace"), str(log)) for log in spark_standalone.executor_logs()),
             *((command, "a command line") for command in commands.seen)]
    assert any("backfilled" in text for text, _ in texts), "the backfill's output was not captured"
    for text, where in texts:
        assert_no_secret(text, secrets, where)
