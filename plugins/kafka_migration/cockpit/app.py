"""The cockpit: a FastAPI app mounted in Airflow's api-server at /kafka-migrations, behind Airflow's login.

Every route depends on Airflow's own `get_user` (the UI's session cookie or a bearer token), so a request
without a valid session gets 401. Data comes from `mirror_engine.observe.FlowView` over the plans the DAGs are
built from (`views.py`) and from Airflow's own run records (`runs.py`). A page that cannot be built answers with
a page saying why and what to do, never a 500 or a server path.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse

from kafka_migration.cockpit import migration_pages, pages
from kafka_migration.cockpit.links import NAME, PREFIX
from kafka_migration.cockpit.runs import Waits, read_run
from kafka_migration.cockpit.views import PlanUnavailable, Views
from kafka_migration.plan_dags import plan_of, plans_folder

__all__ = ["app", "plans_folder"]

VIEWS = Views()
WAITS = Waits()
app = FastAPI(title=NAME, dependencies=[Depends(get_user)])


def latest_stage(plan: str) -> str:
    """The state of the plan's latest migration run and the stages it is in (from Airflow's database)."""
    run = read_run(VIEWS.dag_id(plan))
    if run is None:
        return "never run"
    if run.state != "running":
        return run.state
    return "running: " + (", ".join(run.current) or "between tasks")


def strip(plan: str, run_id: str | None = None) -> str:
    """The status strip of the plan's latest run (or of `run_id`), its waits read live."""
    dag_id = VIEWS.dag_id(plan)
    run = read_run(dag_id, run_id)
    sentences = WAITS.sentences(run.dag_id, run.waits) if run is not None and run.waits else []
    return migration_pages.status_strip(plan, run, sentences, PREFIX, this_run=run_id is not None, dag_id=dag_id)


def plan_row(plan: str) -> dict[str, Any]:
    try:
        row = VIEWS.run(plan, lambda view: view.overview_row())
    except PlanUnavailable as error:  # one unreachable or broken plan must not hide the others
        row = {"plan": plan, "error": str(error)}
    row["stage"] = latest_stage(plan)
    return row


def overview_data() -> list[dict[str, Any]]:
    """Every plan's row, the plans read side by side (each is a few small requests to its clusters)."""
    plans = list(VIEWS.plan_files())
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(plans)))) as pool:
        return list(pool.map(plan_row, plans))


@app.exception_handler(PlanUnavailable)
def plan_unavailable(request: Request, error: PlanUnavailable) -> HTMLResponse | JSONResponse:
    if "/api/" in request.url.path:
        return JSONResponse({"detail": str(error)}, status_code=error.status)
    plan = request.path_params.get("plan")
    return HTMLResponse(pages.error_page(f"Migration {plan}" if plan else NAME, str(error), PREFIX,
                                         plan if error.status != 404 else None), status_code=error.status)


@app.get("/", response_class=HTMLResponse)
def overview() -> str:
    rows = pages.overview_rows(overview_data(), PREFIX)
    return pages.page(NAME, f"<div id='rows'>{rows}</div>", refresh_ms=5000)


@app.get("/api/overview")
def overview_json() -> list[dict[str, Any]]:
    return overview_data()


@app.get("/plans/{plan}", response_class=HTMLResponse)
def migration(plan: str, page: int = 1, q: str = "") -> str:
    shown = VIEWS.run(plan, lambda view: view.page_of(view.snapshot(), page, q))
    return migration_pages.migration_page(shown, strip(plan), PREFIX)


@app.get("/api/plans/{plan}")
def migration_json(plan: str, page: int = 1, q: str = "") -> dict[str, Any]:
    """The plan's summary and one page of its partitions (stopped, then most behind, first; `q` filters by
    name), as the migration page shows them."""
    return VIEWS.run(plan, lambda view: view.page_of(view.snapshot(), page, q))


@app.get("/plans/{plan}/cutover", response_class=HTMLResponse)
def cutover(plan: str, page: int = 1) -> str:
    return migration_pages.cutover_page(VIEWS.run(plan, lambda view: view.cutover()), PREFIX, page)


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


@app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse)
def run_page(dag_id: str, run_id: str) -> str:
    """A DAG run's tab: that run's stages, times and reports (a validation run: the plan's validations)."""
    plan = plan_of(dag_id)
    if plan is None:
        return pages.error_page(NAME, f"The DAG {dag_id} is not a migration of a plan; see All "
                                "migrations.", PREFIX)
    if "_validate__" in dag_id:
        return validations(plan)
    run = read_run(dag_id, run_id)
    if run is None:
        raise PlanUnavailable(f"Airflow has no run {run_id} of {dag_id}.", 404)
    end_ms = run.end_ms or int(time.time() * 1000)
    try:
        produced: dict[str, Any] | str = VIEWS.run(
            plan, lambda view: view.stored_between(run.start_ms or 0, end_ms))
    except PlanUnavailable as error:
        produced = str(error)
    return migration_pages.run_page(plan, run, strip(plan, run_id), produced, PREFIX)
