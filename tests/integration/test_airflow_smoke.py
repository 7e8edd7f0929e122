"""Airflow loads the project's DAGs and runs the smoke DAG against the real clusters."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_dagbag_has_no_import_errors():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert "kafka_cluster_smoke" in bag.dag_ids


def test_smoke_dag_runs_against_both_clusters(airflow_db, kafka_pair, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState

    source, target = kafka_pair
    for conn_id, cluster in (("kafka_source", source), ("kafka_target", target)):
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}",
            json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": cluster.bootstrap}}),
        )
    dag = DagBag(dag_folder=str(DAGS)).get_dag("kafka_cluster_smoke")
    run = dag.test()
    assert run.state == DagRunState.SUCCESS


def test_smoke_dag_fails_when_a_cluster_is_unreachable(airflow_db, kafka_pair, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState

    from kafka_local.cluster import free_port

    source, _ = kafka_pair
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_SOURCE", json.dumps(
        {"conn_type": "kafka", "extra": {"bootstrap.servers": source.bootstrap}}))
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_TARGET", json.dumps(
        {"conn_type": "kafka", "extra": {"bootstrap.servers": f"127.0.0.1:{free_port()}",
                                         "socket.connection.setup.timeout.ms": "2000"}}))
    assert os.environ["AIRFLOW_CONN_KAFKA_TARGET"]
    dag = DagBag(dag_folder=str(DAGS)).get_dag("kafka_cluster_smoke")
    run = dag.test()
    assert run.state == DagRunState.FAILED
