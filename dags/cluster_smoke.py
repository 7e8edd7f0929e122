"""Checks that Airflow reaches both clusters of a migration through its connections.

The smallest end-to-end DAG: each task turns an Airflow connection into client settings and asks
the cluster for its id and size. The full migration DAGs are generated from `migrations/*.yaml`.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task


@dag(
    dag_id="kafka_cluster_smoke",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafka-migration"],
    params={
        "source_conn_id": Param("kafka_source", type="string", description="Airflow connection of the source"),
        "target_conn_id": Param("kafka_target", type="string", description="Airflow connection of the target"),
    },
    doc_md=__doc__,
)
def kafka_cluster_smoke() -> None:
    @task
    def describe(conn_param: str, params: dict | None = None) -> dict:
        from kafka_migration.hooks.cluster import KafkaClusterHook

        from mirror_engine.kafka import describe_cluster

        assert params is not None
        conn_id = params[conn_param]
        info = describe_cluster(conn_id, KafkaClusterHook(conn_id).client_config())
        return {"alias": info.alias, "cluster_id": info.cluster_id, "brokers": info.broker_count}

    describe.override(task_id="describe_source")("source_conn_id")
    describe.override(task_id="describe_target")("target_conn_id")


kafka_cluster_smoke()
