"""The cockpit: a FastAPI app mounted in Airflow's api-server at /kafka-migrations, behind Airflow's login.

Every route depends on Airflow's own `get_user` (the UI's session cookie or a bearer token), so a request
without a valid session gets 401. Data comes from `mirror_engine.observe.flow_view` over the plans the DAGs are
built from; one `FlowView` per plan is kept (warm clients, incremental reads), each behind its own lock.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from kafka_migration.cockpit import pages
from kafka_migration.cockpit.links import PREFIX
from kafka_migration.plan_dags import migration_dag_id, plan_of, plans_folder


class Views:
    """The plans of the plans folder and a kept FlowView for each (built on first use)."""

    def __init__(self) -> None:
        self._views: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def plan_files(self) -> dict[str, Path]:
        from mirror_engine.plan import PlanError, load_plan

        files = {}
        for plan_file in sorted(plans_folder().glob("*.yaml")):
            try:
                files[load_plan(plan_file).name] = plan_file
            except PlanError:
                files[plan_file.stem] = plan_file  # shown with its problem
        return files

    def run(self, plan: str, action: Any) -> Any:
        """`action(view)` on the plan's FlowView, one caller at a time per plan."""
        with self._guard:
            lock = self._locks.setdefault(plan, threading.Lock())
        with lock:
            view = self._views.get(plan)
            if view is None:
                plan_file = self.plan_files().get(plan)
                if plan_file is None:
                    raise HTTPException(404, f"no migration plan named {plan!r} in {plans_folder()}")
                from kafka_migration.hooks.plan import MigrationPlanHook
                from mirror_engine.observe import FlowView

                hook = MigrationPlanHook(str(plan_file))
                view = self._views[plan] = FlowView(hook.plan, *hook.client_configs())
            return action(view)


VIEWS = Views()
app = FastAPI(title="Kafka migrations", dependencies=[Depends(get_user)])


def latest_stage(plan: str) -> str:
    """The state of the plan's latest migration run and the task groups it is in (from Airflow's database)."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        run = (session.query(DagRun).filter(DagRun.dag_id == migration_dag_id(plan))
               .order_by(DagRun.id.desc()).first())
        if run is None:
            return "never run"
        if run.state != "running":
            return f"{run.state}"
        active = session.query(TaskInstance.task_id).filter(
            TaskInstance.dag_id == run.dag_id, TaskInstance.run_id == run.run_id,
            TaskInstance.state.in_(["running", "deferred", "queued", "up_for_retry"])).all()
        stages = sorted({task_id.split(".")[0] for (task_id,) in active})
        return "running: " + (", ".join(stages) or "between tasks")


def plan_row(plan: str) -> dict[str, Any]:
    try:
        snapshot = VIEWS.run(plan, lambda view: view.snapshot())
        row = {key: snapshot[key] for key in ("plan", "flow_state", "engines", "lag", "lag_ms", "records_per_s",
                                              "eta_s", "problems")}
    except Exception as error:  # one unreachable or broken plan must not hide the others
        row = {"plan": plan, "error": f"{type(error).__name__}: {error}"}
    row["stage"] = latest_stage(plan)
    return row


def overview_data() -> list[dict[str, Any]]:
    """Every plan's row, the plans read side by side (each is a few small requests to its clusters)."""
    plans = list(VIEWS.plan_files())
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(plans)))) as pool:
        return list(pool.map(plan_row, plans))


@app.get("/", response_class=HTMLResponse)
def overview() -> str:
    rows = pages.overview_rows(overview_data(), PREFIX)
    return pages.page("Kafka migrations", f"<div id='rows'>{rows}</div>",
                      script=f"refresh('{PREFIX}api/overview/parts', ['rows'], 5000);")


@app.get("/api/overview")
def overview_json() -> list[dict[str, Any]]:
    return overview_data()


@app.get("/api/overview/parts")
def overview_parts() -> dict[str, str]:
    return {"rows": pages.overview_rows(overview_data(), PREFIX)}


@app.get("/plans/{plan}", response_class=HTMLResponse)
def migration(plan: str) -> str:
    return pages.migration_page(VIEWS.run(plan, lambda view: view.snapshot()), PREFIX)


@app.get("/api/plans/{plan}")
def migration_json(plan: str) -> dict[str, Any]:
    return VIEWS.run(plan, lambda view: view.snapshot())


@app.get("/api/plans/{plan}/parts")
def migration_parts(plan: str) -> dict[str, str]:
    return pages.migration_parts(VIEWS.run(plan, lambda view: view.snapshot()))


@app.get("/plans/{plan}/cutover", response_class=HTMLResponse)
def cutover(plan: str) -> str:
    return pages.cutover_page(VIEWS.run(plan, lambda view: view.cutover()), PREFIX)


@app.get("/api/plans/{plan}/cutover")
def cutover_json(plan: str) -> dict[str, Any]:
    return VIEWS.run(plan, lambda view: view.cutover())


@app.get("/plans/{plan}/validations", response_class=HTMLResponse)
def validations(plan: str) -> str:
    return pages.validations_page(plan, VIEWS.run(plan, lambda view: view.validations()), PREFIX, None)


@app.get("/plans/{plan}/validations/{name}", response_class=HTMLResponse)
def validation(plan: str, name: str) -> str:
    return pages.validations_page(plan, VIEWS.run(plan, lambda view: view.validations()), PREFIX, name)


@app.get("/api/plans/{plan}/validations")
def validations_json(plan: str) -> list[dict[str, Any]]:
    return VIEWS.run(plan, lambda view: view.validations())


@app.get("/runs/{dag_id}/{run_id}")
def run_page(dag_id: str, run_id: str) -> RedirectResponse:
    """A DAG run's tab: the migration page of its plan (validation runs: the plan's validations)."""
    plan = plan_of(dag_id)
    if plan is None:
        return RedirectResponse(PREFIX)
    return RedirectResponse(f"{PREFIX}plans/{plan}" + ("/validations" if "_validate__" in dag_id else ""))


@app.exception_handler(HTTPException)
def not_found(_request: Any, error: HTTPException) -> JSONResponse:
    return JSONResponse({"detail": error.detail}, status_code=error.status_code)
