"""Airflow connections -> Kafka client config, in one place; nothing else reads connection extras."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from mirror_engine.security import secret_values

if TYPE_CHECKING:
    from mirror_engine.kafka import ClusterInfo


def mask_client_secrets(config: dict[str, str]) -> dict[str, str]:
    """Register every secret of a cluster's client settings with Airflow's masker (task logs, the triggerer's and
    the supervisor's show `***` instead), and return the settings.

    Airflow masks a connection's password field and extra keys with sensitive names only: `sasl.jaas.config`,
    `ssl.key.pem` or settings given in the plan itself are not among them; `mirror_engine.security.secrets` knows
    them all.
    """
    for secret in secret_values(config):
        mask_secret(secret)
    return config


class KafkaClusterHook(BaseHook):
    """Client settings for one Kafka cluster from an Airflow connection.

    The connection is the Apache Kafka provider's `kafka` type: its extra is a JSON object of
    librdkafka settings (`bootstrap.servers`, `security.protocol`, `sasl.mechanism`, ...). A login
    and password on the connection, when set, become `sasl.username` and `sasl.password`, so the
    secret can live in the masked password field instead of the extra.

    :param kafka_conn_id: the Airflow connection id.
    """

    conn_name_attr = "kafka_conn_id"
    default_conn_name = "kafka_default"
    conn_type = "kafka"
    hook_name = "Kafka cluster (migration)"

    def __init__(self, kafka_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id

    def client_config(self) -> dict[str, str]:
        conn = self.get_connection(self.kafka_conn_id)
        extra: dict[str, Any] = conn.extra_dejson
        config = {key: str(value) for key, value in extra.items()}
        if not config.get("bootstrap.servers"):
            if not conn.host:
                raise ValueError(
                    f"connection '{self.kafka_conn_id}' has no bootstrap.servers in its extra and no host"
                )
            config["bootstrap.servers"] = f"{conn.host}:{conn.port}" if conn.port else conn.host
        if conn.login:
            config["sasl.username"] = conn.login
        if conn.password:
            config["sasl.password"] = conn.password
        return mask_client_secrets(config)

    def describe(self) -> ClusterInfo:
        """The cluster's id and size, asked through this connection (ClusterUnreachable when it does not answer)."""
        from mirror_engine.kafka import describe_cluster

        return describe_cluster(self.kafka_conn_id, self.client_config())
