"""A migration run as Airflow records it: its stages (task groups) and their times, and the waits it is in.

The run's waits are read from Airflow's own tables (the deferred task instance and its trigger's arguments);
what each wait waits for is the same readiness check its trigger polls (`mirror_engine.cutover.build_check`),
kept open here between refreshes, so the status strip says the sentence the trigger logs, with the live value.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mirror_engine.observe import waiting_sentence

ACTIVE = ("running", "deferred", "awaiting_input", "queued", "up_for_retry", "up_for_reschedule", "scheduled")
STAGE_ORDER = ("preflight", "prepare", "replicate", "backfill", "catch_up", "validate", "checkpoints",
               "approve", "switch_groups", "switch_producers", "finish")
READINESS_TRIGGER = "kafka_migration.triggers.readiness.ReadinessTrigger"


def _ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


@dataclass
class Stage:
    name: str
    state: str
    start_ms: int | None
    end_ms: int | None
    tasks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunRecord:
    """One DAG run: its state and times, its stages in the DAG's order, and its waits now."""

    dag_id: str
    run_id: str
    state: str
    start_ms: int | None
    end_ms: int | None
    stages: list[Stage]
    waits: list[dict[str, Any]]  # deferred readiness waits: task, check, arguments, plan_path, waited_s, left_s

    @property
    def current(self) -> list[str]:
        return [stage.name for stage in self.stages if stage.state in ACTIVE]


def _stage_state(states: list[str]) -> str:
    for state in ("failed", "upstream_failed", "awaiting_input", "deferred", "running", "up_for_retry", "queued",
                  "scheduled"):
        if state in states:
            return state
    if states and all(s == "skipped" for s in states):
        return "skipped"
    if states and all(s in ("success", "skipped") for s in states):
        return "success"
    return "not started"


def read_run(dag_id: str, run_id: str | None = None) -> RunRecord | None:
    """The DAG run `run_id` (the latest run when None), or None when there is none."""
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        query = session.query(DagRun).filter(DagRun.dag_id == dag_id)
        run = (query.filter(DagRun.run_id == run_id) if run_id else query.order_by(DagRun.id.desc())).first()
        if run is None:
            return None
        tis = session.query(TaskInstance).filter(TaskInstance.dag_id == dag_id,
                                                 TaskInstance.run_id == run.run_id).all()
        now = time.time()
        by_stage: dict[str, list[Any]] = {}
        waits = []
        for ti in tis:
            by_stage.setdefault(ti.task_id.split(".")[0], []).append(ti)
            trigger = ti.trigger if ti.state == "deferred" else None
            if trigger is not None and trigger.classpath == READINESS_TRIGGER:
                kwargs = trigger.kwargs
                label = ti.task_id + (f"[{ti.rendered_map_index or ti.map_index}]" if ti.map_index >= 0 else "")
                started = ti.start_date.timestamp() if ti.start_date else now
                waits.append({"task": label, "key": (dag_id, run.run_id, ti.task_id, ti.map_index, trigger.id),
                              "check": kwargs["check"], "arguments": dict(kwargs["arguments"]),
                              "plan_path": kwargs["plan_path"], "waited_s": now - started,
                              "left_s": float(kwargs["deadline"]) - now})
        order = {name: i for i, name in enumerate(STAGE_ORDER)}
        stages = []
        for name, items in sorted(by_stage.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
            starts = [ti.start_date for ti in items if ti.start_date]
            ends = [ti.end_date for ti in items if ti.end_date]
            states = [str(ti.state or "not started") for ti in items]
            stages.append(Stage(name, _stage_state(states), _ms(min(starts)) if starts else None,
                                _ms(max(ends)) if ends and len(ends) == len(items) else None,
                                [{"task": ti.task_id + (f"[{ti.rendered_map_index or ti.map_index}]"
                                                        if ti.map_index >= 0 else ""),
                                  "state": str(ti.state or "not started"), "try": ti.try_number}
                                 for ti in sorted(items, key=lambda ti: (ti.task_id, ti.map_index))]))
        # A run whose tasks were cleared is restarted (its own start and end reset): its window spans its tasks.
        starts = [ms for ms in [_ms(run.start_date)] + [stage.start_ms for stage in stages] if ms]
        ends = [ms for ms in [_ms(run.end_date)] + [stage.end_ms for stage in stages] if ms]
        finished = run.end_date is not None
        return RunRecord(dag_id, run.run_id, str(run.state), min(starts) if starts else None,
                         max(ends) if finished and ends else None, stages, sorted(waits, key=lambda w: w["task"]))


class Waits:
    """The readiness checks of the waits in progress, kept open between refreshes (a catch-up trend needs
    several polls) and closed once their wait is over."""

    POLL_EVERY_S = 2.0

    def __init__(self) -> None:
        self._checks: dict[tuple, tuple[Any, float, str]] = {}  # key -> (check, polled at, progress)
        self._lock = threading.Lock()

    def sentences(self, dag_id: str, waits: list[dict[str, Any]]) -> list[str]:
        """A sentence per wait of a run of `dag_id`; the checks of its waits that are over are closed."""
        with self._lock:
            self._close_except(dag_id, {wait["key"] for wait in waits})
            return [waiting_sentence(wait["task"], self._progress(wait), wait["waited_s"], wait["left_s"])
                    for wait in waits]

    def _progress(self, wait: dict[str, Any]) -> str:
        key = wait["key"]
        entry = self._checks.get(key)
        if entry is not None and time.monotonic() - entry[1] < self.POLL_EVERY_S:
            return entry[2]
        try:
            check = entry[0] if entry else self._open(wait)
            readiness = check.check()
            progress = readiness.failed or readiness.progress
        except Exception as error:  # the strip shows why it cannot say more; the wait itself goes on
            check, progress = (entry[0] if entry else None), f"its progress cannot be read here: {error}"
        if check is not None:
            self._checks[key] = (check, time.monotonic(), progress)
        return progress

    @staticmethod
    def _open(wait: dict[str, Any]) -> Any:
        from kafka_migration.hooks.plan import MigrationPlanHook
        from mirror_engine.cutover import build_check

        hook = MigrationPlanHook(wait["plan_path"])
        return build_check(wait["check"], hook.plan, *hook.client_configs(), wait["arguments"])

    def _close_except(self, dag_id: str, keys: set[tuple]) -> None:
        for key in [key for key in self._checks if key[0] == dag_id and key not in keys]:
            check = self._checks.pop(key)[0]
            with contextlib.suppress(Exception):  # a check that cannot close cleanly is dropped all the same
                check.close()
