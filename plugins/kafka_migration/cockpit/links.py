"""Extra links from a migration's tasks to the cockpit page that shows what they did."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from kafka_migration.plan_dags import plan_of

PREFIX = "/kafka-migrations/"
NAV_ROUTE = "kafka-migrations"  # the nav entry's route in the UI: /plugin/<route>/<path> shows <path> in its frame
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
