"""A check that Airflow reaches one Kafka cluster through its connection."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

from kafka_migration.hooks.cluster import KafkaClusterHook


class DescribeClusterOperator(BaseOperator):
    """Ask the cluster of an Airflow connection for its id and broker count (fails when it does not answer).

    :param kafka_conn_id: the Airflow connection of the cluster (templated).
    """

    template_fields = ("kafka_conn_id",)

    def __init__(self, *, kafka_conn_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Any) -> dict:
        info = KafkaClusterHook(self.kafka_conn_id).describe()
        self.log.info("cluster of connection '%s': id %s, %d broker(s)", self.kafka_conn_id, info.cluster_id,
                      info.broker_count)
        return {"alias": info.alias, "cluster_id": info.cluster_id, "brokers": info.broker_count}
