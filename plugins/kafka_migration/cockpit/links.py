"""Extra links from a migration's tasks to the cockpit page that shows what they did."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from kafka_migration.plan_dags import plan_of

NAME = "Migrations"  # the cockpit's one name: its navigation entry, its pages' titles, the demo's console
PREFIX = "/kafka-migrations/"  # where the api-server serves the cockpit's app
# The nav entry's route in the UI: /plugin/<route><path> shows the app's <path> in its frame. A route other than
# the app's own prefix, so that the UI's address does not say it twice (/plugin/kafka-migrations/kafka-migrations/).
NAV_ROUTE = "migrations"
IN_UI = f"/plugin/{NAV_ROUTE}"


class CockpitLink(BaseOperatorLink):
    """A link to one page of the task's plan in the cockpit, shown inside the Airflow UI (its navigation
    around the cockpit's frame); the cockpit's overview for the shared DAGs."""

    name = "Migration"
    page = ""

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        plan = plan_of(ti_key.dag_id)
        return IN_UI + (f"{PREFIX}plans/{plan}{self.page}" if plan else PREFIX)


class SwitchReportLink(CockpitLink):
    name = "Switch report"
    page = "/cutover"


class ValidationReportLink(CockpitLink):
    name = "Validation report"
    page = "/validations"
