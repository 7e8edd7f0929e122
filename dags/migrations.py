"""One migration DAG per plan file in `migrations/` (or $KAFKA_MIGRATION_PLANS), built at parse time.

Parsing reads the YAML files only: no Kafka, Spark or Maven is contacted until a task runs. A plan
that does not validate still gets its DAG, whose preflight task fails with the plan's problems.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param, TaskGroup, task
from kafka_migration.operators.migration import (
    CheckpointOperator,
    FlowControlOperator,
    PreflightOperator,
    PrepareTargetOperator,
    StartReplicationOperator,
    StopReplicationOperator,
    SwitchGroupOperator,
    SwitchProducersOperator,
)
from kafka_migration.operators.spark import MigrationSparkSubmitOperator
from kafka_migration.sensors.lag import ReplicationLagSensor

from mirror_engine.plan import MigrationPlan, PlanError, load_plan

PLANS = Path(os.environ.get("KAFKA_MIGRATION_PLANS", Path(__file__).resolve().parents[1] / "migrations"))
REPORTS = Path(os.environ.get("AIRFLOW_HOME", ".")) / "reports"
SPARK_CONN_ID = os.environ.get("KAFKA_MIGRATION_SPARK_CONN", "spark_local")
STAGES = ["preflight", "prepare", "replicate", "backfill", "validate", "checkpoints", "switch_groups",
          "switch_producers", "finish"]

DOC = """
### Kafka migration `{name}`: {source} -> {target}

{description}

Stages, each a task group, each guarded by the one before (a stage left out of the run's `stages` is
skipped and the next ones go on):
1. **preflight**: the plan is valid, both clusters answer, every target change passes the target's dry-run;
2. **prepare**: topics, partitions, configs and ACLs created on the target (`dry_run` stops after the check);
3. **replicate**: the engine started on this worker (`mirror-engine run`); **backfill**: Spark copies the
   history of `backfill.topics`; **catch_up**: waits (deferred) until the lag is at most `max_lag_records`;
4. **validate**: Spark compares every copied record on both clusters; the report is in `{reports}`;
5. **checkpoints**: MM2-format checkpoints and group offset sync; **switch_groups**: each group in
   `groups` switched exactly and verified, with an Asset event per group; **switch_producers**: each topic in
   `producer_topics` switched once idle on the source;
6. **finish**: the engine stopped (SIGTERM; progress stored).

Plan file: `{path}`{problem}
"""


def _params(plan: MigrationPlan | None) -> dict[str, Param]:
    cutover = plan.cutover if plan else None
    return {
        "stages": Param(STAGES, type="array", items={"type": "string", "enum": STAGES},
                        description="the stages to run; the others are skipped"),
        "dry_run": Param(False, type="boolean", description="prepare: check the target changes, apply none"),
        "max_lag_records": Param(cutover.max_lag_records if cutover else 0, type="integer", minimum=0,
                                 description="catch_up: records the copy may still be behind"),
        "wait_timeout_s": Param(cutover.wait_timeout_s if cutover else 1800, type="number", exclusiveMinimum=0,
                                description="the longest any stage waits"),
        "groups": Param(list(cutover.groups) if cutover else [], type="array", items={"type": "string"},
                        description="consumer groups to switch to the target"),
        "fence": Param(cutover.fence if cutover else False, type="boolean",
                       description="fence each group on the source (DENY READ) before switching it"),
        "producer_topics": Param([], type="array", items={"type": "string"},
                                 description="source topics whose producers switch to the target"),
        "producer_idle_s": Param(cutover.producer_idle_s if cutover else 30, type="number", minimum=0,
                                 description="seconds a topic must be idle on the source before its switch"),
    }


def build_dag(plan_file: Path) -> DAG:
    try:
        plan: MigrationPlan | None = load_plan(plan_file)
        problem = ""
    except PlanError as error:
        plan, problem = None, f"\n\n**This plan does not validate** (preflight fails):\n\n```\n{error}\n```"
    name = plan.name if plan else plan_file.stem
    path = str(plan_file)
    with DAG(
        dag_id=f"kafka_migration__{name}",
        schedule=plan.schedule if plan else None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        params=_params(plan),
        tags=["kafka-migration"],
        default_args={"trigger_rule": "none_failed"},
        doc_md=DOC.format(name=name, source=plan.source.alias if plan else "?",
                          target=plan.target.alias if plan else "?",
                          description=(plan.description if plan else "") or "", reports=REPORTS, path=path,
                          problem=problem),
    ) as dag:
        with TaskGroup("preflight"):
            preflight = PreflightOperator(task_id="check", plan_path=path, trigger_rule="all_success")
        with TaskGroup("prepare"):
            prepare = PrepareTargetOperator(task_id="apply", plan_path=path, dry_run="{{ params.dry_run }}")
        with TaskGroup("replicate"):
            start = StartReplicationOperator(task_id="start", plan_path=path)
        with TaskGroup("backfill"):
            backfill = MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=path,
                                                    stage="backfill", conn_id=SPARK_CONN_ID)
        with TaskGroup("catch_up"):
            caught_up = ReplicationLagSensor(task_id="wait_for_lag", plan_path=path, stage="replicate",
                                             max_lag="{{ params.max_lag_records }}",
                                             wait_timeout_s="{{ params.wait_timeout_s }}")
        with TaskGroup("validate"):
            validate = MigrationSparkSubmitOperator(task_id="records", job="validate", plan_path=path,
                                                    stage="validate", conn_id=SPARK_CONN_ID,
                                                    job_args=["--report-dir", str(REPORTS)])
        with TaskGroup("checkpoints"):
            checkpoints = CheckpointOperator(task_id="sync", plan_path=path)
        with TaskGroup("switch_groups"):
            @task(task_id="groups")
            def groups_to_switch(params: dict | None = None) -> list[str]:
                return list((params or {}).get("groups") or [])

            groups = groups_to_switch()
            switched = SwitchGroupOperator.partial(
                task_id="switch", plan_path=path, fence="{{ params.fence }}",
                wait_timeout_s="{{ params.wait_timeout_s }}").expand(group=groups)
        with TaskGroup("switch_producers"):
            @task(task_id="topics")
            def topics_to_switch(params: dict | None = None) -> list[str]:
                return list((params or {}).get("producer_topics") or [])

            topics = topics_to_switch()
            producers = SwitchProducersOperator.partial(
                task_id="switch", plan_path=path, idle_s="{{ params.producer_idle_s }}",
                wait_timeout_s="{{ params.wait_timeout_s }}").expand(topic=topics)
        with TaskGroup("finish"):
            finish = StopReplicationOperator(task_id="stop_engine", plan_path=path)

        preflight >> prepare >> start >> backfill >> caught_up >> validate >> checkpoints >> groups
        switched >> topics
        producers >> finish
    return dag


def build_validation_dag(plan_file: Path, plan: MigrationPlan) -> DAG:
    """Validation alone, on the plan's `validation.schedule` during a long migration (or on trigger)."""
    with DAG(
        dag_id=f"kafka_migration_validate__{plan.name}",
        schedule=plan.validation.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["kafka-migration"],
        params={"mode": Param(plan.validation.mode, enum=["full", "sample"]),
                "fraction": Param(plan.validation.sample_fraction, type="number", exclusiveMinimum=0, maximum=1)},
        doc_md=f"Validates, record by record, what plan `{plan.name}` has copied so far; the report goes to "
               f"`{REPORTS}` and the task fails when the copy is not clean.",
    ) as dag:
        MigrationSparkSubmitOperator(
            task_id="validate", job="validate", plan_path=str(plan_file), stage="validate", conn_id=SPARK_CONN_ID,
            job_args=["--report-dir", str(REPORTS), "--mode", "{{ params.mode }}", "--fraction",
                      "{{ params.fraction }}"])
    return dag


def build_backfill_dag(plan_files: list[Path]) -> DAG:
    """Backfill by hand or through the REST API: a plan, its topics, partitions, and an offset or time range."""
    with DAG(
        dag_id="kafka_migration_backfill",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        tags=["kafka-migration"],
        params={
            "plan": Param(str(plan_files[0]) if plan_files else "", type="string",
                          enum=[str(p) for p in plan_files] or None, description="the migration plan"),
            "topics": Param("", type="string", description="comma-separated source topics (empty: all pending)"),
            "partitions": Param("", type="string", description="comma-separated partitions (empty: all)"),
            "from": Param("", type="string", description="first offset or ISO time (empty: the earliest)"),
            "to": Param("", type="string", description="end offset or ISO time (empty: the engine's snapshot)"),
        },
        doc_md="Copies the history of topics held for backfill (the plan's `backfill.topics`, or a topic added "
               "to a running migration) with Spark, then lets the engine copy on. Re-run it after a failure: it "
               "resumes without duplicates.",
    ) as dag:
        @task(task_id="arguments")
        def arguments(params: dict | None = None) -> list[str]:
            params = params or {}
            args = ["--plan", params["plan"]]
            for name in ("topics", "partitions", "from", "to"):
                if str(params.get(name) or "").strip():
                    args += [f"--{name}", str(params[name]).strip()]
            return args

        args = arguments()
        copy = MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path="{{ params.plan }}",
                                            stage="backfill", conn_id=SPARK_CONN_ID)
        copy.application_args = args  # resolved when the task runs
        args >> copy
    return dag


_plan_files = sorted(PLANS.glob("*.yaml"))
for _plan_file in _plan_files:
    _dag = build_dag(_plan_file)
    globals()[_dag.dag_id] = _dag
    try:
        _validation = build_validation_dag(_plan_file, load_plan(_plan_file))
        globals()[_validation.dag_id] = _validation
    except PlanError:
        pass  # its migration DAG's preflight reports the problems
_backfill = build_backfill_dag(_plan_files)


def build_flow_control_dag(plan_files: list[Path]) -> DAG:
    """Start, pause, resume or stop a flow's engines from the UI (they pick it up within a second or two)."""
    with DAG(
        dag_id="kafka_migration_flow_control",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        tags=["kafka-migration"],
        params={"plan": Param(str(plan_files[0]) if plan_files else "", type="string",
                              enum=[str(p) for p in plan_files] or None),
                "action": Param("pause", enum=["start", "pause", "resume", "stop"])},
        doc_md="Starts, pauses, resumes or stops every engine of a plan's flow, wherever it runs, through the "
               "flow's control topic on the target. Stop stores each engine's progress and releases its "
               "partitions; start takes them up again from there.",
    ) as dag:
        FlowControlOperator(task_id="apply", plan_path="{{ params.plan }}", action="{{ params.action }}")
    return dag


_flow_control = build_flow_control_dag(_plan_files)
