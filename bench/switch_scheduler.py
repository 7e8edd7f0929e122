"""The migration DAG's switch_groups stage under the real Airflow: api-server, scheduler, dag-processor and
triggerer, LocalExecutor (4 slots), SQLite, as `tests/integration/airflow_services.py` starts them, for one
checkout of the project (this one, or an earlier one exported with `git archive` for a before/after in one run).

A run triggered with only the switch_groups stage selected (the other stages' tasks skip); timed from the trigger
to the run's end, and the stage from its first task's start to its last task's end. Every group's verified switch
report is then read back from the flow's reports topic.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mirror_engine.observe import ReportStore  # noqa: E402
from mirror_engine.plan import MigrationPlan  # noqa: E402
from tests.integration.airflow_services import AirflowServices  # noqa: E402


@dataclass
class StageRun:
    groups: int
    run_s: float  # trigger to the run's end
    stage_s: float  # the stage's first task start to its last task end
    task_instances: int  # of the switch_groups stage
    verified: int  # groups whose stored switch report is verified


class SchedulerRunner:
    """The Airflow components of one checkout, with `plans` as its plans folder; `stop()` ends them."""

    def __init__(self, checkout: Path, home: Path, plans: Path, environment: dict[str, str]) -> None:
        dags = home / "dags"
        dags.mkdir(parents=True)
        (dags / "migrations.py").symlink_to(checkout / "dags" / "migrations.py")
        python_path = os.pathsep.join([str(checkout), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                        if p and Path(p).resolve() != ROOT]])
        self.services = AirflowServices(home / "airflow", dags, {**environment, "KAFKA_MIGRATION_PLANS": str(plans),
                                                                 "PYTHONPATH": python_path})
        self.services.env["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(checkout / "plugins")

    def start(self, dag_id: str) -> None:
        self.services.start()
        self.services.wait_for_dag(dag_id)

    def stop(self) -> None:
        self.services.stop()

    def switch(self, dag_id: str, plan: MigrationPlan, target_config: dict[str, str], groups: list[str],
               timeout_s: float = 3600) -> StageRun:
        started = time.monotonic()
        run_id = self.services.trigger(dag_id, {"stages": ["switch_groups"], "groups": groups,
                                                "wait_timeout_s": 600})
        state = self.services.wait_for_run(dag_id, run_id, timeout_s)
        run_s = time.monotonic() - started
        tis = [ti for ti in self._task_instances(dag_id, run_id) if ti["task_id"].startswith("switch_groups.")]
        if state != "success":
            failed = [ti for ti in tis if ti["state"] != "success"]
            logs = [self.services.task_log(dag_id, run_id, ti["task_id"], ti["map_index"], max(1, ti["try_number"]))
                    [-6000:] for ti in failed[:2]]
            raise AssertionError(f"{[(ti['task_id'], ti['map_index'], ti['state']) for ti in failed][:20]}\n"
                                 + "\n".join(logs))
        starts = [_time(ti["start_date"]) for ti in tis if ti.get("start_date")]
        ends = [_time(ti["end_date"]) for ti in tis if ti.get("end_date")]
        store = ReportStore(plan, target_config)
        try:
            reports = store.read("group-switch")
        finally:
            store.close()
        verified = sum(1 for group in groups
                       if (reports.get(f"group-switch:{group}") or {}).get("report", {}).get("ok"))
        return StageRun(len(groups), run_s, max(ends) - min(starts), len(tis), verified)

    def _task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            status, body = self.services.api(
                "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100&offset={len(found)}")
            assert status == 200, (status, body)
            found += body["task_instances"]
            if not body["task_instances"] or len(found) >= body["total_entries"]:
                return found


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
