"""The project's entry in Airflow's providers registry, so that Airflow's connection form offers the connection
types the migration's tasks read (`schema_registry`).

Installed with the project (`pip install -e .`), unlike the plugin package itself, which Airflow imports from its
plugins folder: this module names the hook by its path and imports nothing, so Airflow's discovery of providers
never fails on it; a process without the plugins folder on its path only logs that the hook is missing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "package-name": "kafka-migration",
        "name": "Kafka migration",
        "description": "Kafka cluster migration: the connection types its DAGs' tasks read.",
        "versions": [version("kafka-migration")],
        "connection-types": [
            {
                "connection-type": "schema_registry",
                "hook-class-name": "kafka_migration.hooks.registry.SchemaRegistryHook",
                "hook-name": "Schema registry (migration)",
                "ui-field-behaviour": {
                    "hidden-fields": [],
                    "relabeling": {"host": "URL", "login": "User (basic auth)", "password": "Password (basic auth)",
                                   "extra": "Client settings (JSON)"},
                    "placeholders": {"host": "https://registry:8081 or http://registry:8080/apis/ccompat/v7",
                                     "extra": '{"ssl.ca.location": "/etc/ssl/registry-ca.pem"}'},
                },
            },
        ],
    }
