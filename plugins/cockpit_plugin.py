"""Registers the migration cockpit with Airflow: the FastAPI app, a top-level navigation entry, a tab on
every DAG run (the migration page of the run's plan), and the switch and validation tasks' extra links.

External views rather than a React app: the pages are server-rendered HTML from the same process that holds
the Kafka clients, so there is no bundle to build or ship and nothing third-party to commit; the UI shows
them in its own frame, under its own login.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from kafka_migration.cockpit.app import app
from kafka_migration.cockpit.links import NAME, NAV_ROUTE, CockpitLink, SwitchReportLink, ValidationReportLink


class KafkaMigrationCockpit(AirflowPlugin):
    name = "kafka_migration_cockpit"
    fastapi_apps = [{"app": app, "url_prefix": "/kafka-migrations", "name": NAME}]
    operator_extra_links = [CockpitLink(), SwitchReportLink(), ValidationReportLink()]

    external_views = [
        # One name everywhere (the UI's side bar cuts longer labels: "Kafka migrations" showed as "Kafka mig...").
        {"name": NAME, "href": "kafka-migrations/", "destination": "nav", "url_route": NAV_ROUTE,
         "nav_top_level": True},
        {"name": "Migration", "href": "kafka-migrations/runs/{DAG_ID}/{RUN_ID}", "destination": "dag_run",
         "url_route": "kafka-migration-run"},
    ]
