"""Checks that Airflow reaches both clusters of a migration through its connections.

The smallest end-to-end DAG: each task turns an Airflow connection into client settings and asks
the cluster for its id and size. The full migration DAGs are generated from the plans in `migrations/`.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag
from kafka_migration.operators.cluster import DescribeClusterOperator


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
    DescribeClusterOperator(task_id="describe_source", kafka_conn_id="{{ params.source_conn_id }}")
    DescribeClusterOperator(task_id="describe_target", kafka_conn_id="{{ params.target_conn_id }}")


kafka_cluster_smoke()
