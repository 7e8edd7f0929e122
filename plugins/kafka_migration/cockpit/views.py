"""The plans of the plans folder and a kept `FlowView` for each (warm clients, incremental reads), each behind
its own lock; a plan whose view cannot be built raises `PlanUnavailable` with a sentence saying why and what to
do (never a server path, never a bare exception class)."""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from kafka_migration.plan_dags import failback_dag_id, migration_dag_id, plan_files, plans_folder, read_plan_file


class PlanUnavailable(Exception):
    """A plan's pages cannot be built: `str()` says why and what to do; `status` is the HTTP status to answer."""

    def __init__(self, sentence: str, status: int = 503) -> None:
        super().__init__(sentence)
        self.status = status


def _without_paths(text: str) -> str:
    """A message with the plans folder's path left out (a page shows file names, not the server's layout)."""
    folder = str(plans_folder())
    return text.replace(folder + os.sep, "").replace(folder, "the plans folder")


def unavailable(plan: str, error: Exception) -> PlanUnavailable:
    """The sentence for an error met while building or reading a plan's view."""
    from airflow.exceptions import AirflowNotFoundException

    from mirror_engine.plan import PlanError

    if isinstance(error, PlanUnavailable):
        return error
    if isinstance(error, AirflowNotFoundException):
        named = re.search(r"`([^`]+)`", str(error))
        conn_id = named.group(1) if named else str(error)
        return PlanUnavailable(
            f"Plan {plan}: the Airflow connection '{conn_id}' is not defined. Define it under Admin > Connections "
            f"(type kafka, its bootstrap.servers in the extra) or as the environment variable "
            f"AIRFLOW_CONN_{conn_id.upper()}; this page then shows the migration.")
    from mirror_engine.failback import FailbackError

    if isinstance(error, FailbackError):
        return PlanUnavailable(f"Plan {plan}: {_without_paths(str(error))}", 409)
    if isinstance(error, PlanError):
        return PlanUnavailable(f"Plan {plan} cannot be used: {_without_paths(str(error))}. Fix the plan file; "
                               "the page shows the migration at its next refresh.")
    return PlanUnavailable(f"Plan {plan}: its clusters could not be read: {_without_paths(str(error))}. Check the "
                           "clusters' connections (bootstrap servers, security settings) and that the clusters run.")


class Views:
    """The plans of the plans folder and a kept FlowView for each (built on first use)."""

    def __init__(self) -> None:
        self._views: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def plan_files(self) -> dict[str, str]:
        """{plan name: plan reference} of the plans folder (an MM2 file gives one per flow it enables)."""
        from mirror_engine.plan import PlanError

        files = {}
        for plan_file in plan_files(plans_folder()):
            try:
                files.update({plan.name: reference for reference, plan in read_plan_file(plan_file).items()})
            except PlanError:
                files[plan_file.stem] = str(plan_file)  # shown with its problem
        return files

    def way_back_of(self, plan: str) -> str | None:
        """The plan of the plans folder whose way back `plan` is (`<plan>-failback`), else None."""
        from mirror_engine.failback import FAILBACK_SUFFIX

        if not plan.endswith(FAILBACK_SUFFIX):  # most names: no plan file read (every page refresh asks)
            return None
        files = self.plan_files()
        forward = plan.removesuffix(FAILBACK_SUFFIX)
        return forward if plan not in files and forward in files else None

    def dag_id(self, plan: str) -> str:
        """The DAG whose runs move the plan's flow: its migration DAG, or a way back's failback DAG."""
        forward = self.way_back_of(plan)
        return migration_dag_id(plan) if forward is None else failback_dag_id(forward)

    def plan_file(self, plan: str) -> str:
        """The plan's reference; a way back's (`<plan>-failback`) is its forward plan's with `#failback`."""
        from mirror_engine.mm2 import PlanReference

        forward = self.way_back_of(plan)
        if forward is not None:
            return str(PlanReference.parse(self.plan_files()[forward]).way_back())
        plan_file = self.plan_files().get(plan)
        if plan_file is None:
            raise PlanUnavailable(f"There is no migration plan named '{plan}'. The cockpit shows the plans of its "
                                  "plans folder (KAFKA_MIGRATION_PLANS); see All migrations for the ones there.", 404)
        return plan_file

    def run(self, plan: str, action: Any) -> Any:
        """`action(view)` on the plan's FlowView, one caller at a time per plan; `PlanUnavailable` when the view
        cannot be built or read."""
        with self._guard:
            lock = self._locks.setdefault(plan, threading.Lock())
        with lock:
            try:
                view = self._views.get(plan)
                if view is None:
                    from kafka_migration.hooks.plan import MigrationPlanHook
                    from mirror_engine.observe import FlowView

                    hook = MigrationPlanHook(self.plan_file(plan))
                    view = self._views[plan] = FlowView(hook.plan, *hook.client_configs())
                return action(view)
            except Exception as error:
                raise unavailable(plan, error) from error
