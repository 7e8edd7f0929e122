"""Airflow connections -> Kafka client config, in one place; nothing else reads connection extras."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

# Keys whose values are secrets: kept out of anything we log or return to XCom.
SECRET_KEYS = frozenset(
    {"sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.oauthbearer.client.secret"}
)


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
        return config


def redacted(config: dict[str, str]) -> dict[str, str]:
    """A copy safe to log: secret values replaced."""
    return {key: ("***" if key in SECRET_KEYS else value) for key, value in config.items()}
