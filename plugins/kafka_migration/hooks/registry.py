"""Airflow connections -> schema registry client settings, in one place (the registries' `cluster.py`)."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from kafka_migration.hooks.cluster import mask_client_secrets


class SchemaRegistryHook(BaseHook):
    """Client settings for one schema registry from an Airflow connection of type `schema_registry`.

    Its host is the registry's Confluent-compatible API, a whole URL (`http://registry:8080/apis/ccompat/v7`) or a
    host name (then `http://`, the port, and the schema field as the path); a login and password become basic auth
    (`basic.auth.user.info`); its extra holds the other settings Confluent's clients take (`bearer.auth.token` or
    the `bearer.auth.*` client credentials, `ssl.ca.location`, a client certificate: see the plan reference).

    :param registry_conn_id: the Airflow connection id.
    """

    conn_name_attr = "registry_conn_id"
    default_conn_name = "schema_registry_default"
    conn_type = "schema_registry"
    hook_name = "Schema registry (migration)"

    def __init__(self, registry_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.registry_conn_id = registry_conn_id

    def settings(self) -> dict[str, str]:
        conn = self.get_connection(self.registry_conn_id)
        host = (conn.host or "").rstrip("/")
        if not host:
            raise ValueError(f"connection '{self.registry_conn_id}' has no host: give the registry's URL there")
        if host.startswith(("http://", "https://")):
            url = host
        else:
            url = f"http://{host}" + (f":{conn.port}" if conn.port else "") + (f"/{conn.schema}" if conn.schema else "")
        extra: dict[str, Any] = conn.extra_dejson
        settings = {"url": url, **{key: str(value) for key, value in extra.items()}}
        if conn.login:
            settings["basic.auth.user.info"] = f"{conn.login}:{conn.password or ''}"
        return mask_client_secrets(settings)
