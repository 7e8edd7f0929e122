"""One migration DAG per plan file in `migrations/` (or $KAFKA_MIGRATION_PLANS), built at parse time.

Parsing reads the YAML files only: no Kafka, Spark or Maven is contacted until a task runs. A plan
that does not validate still gets its DAG, whose preflight task fails with the plan's problems.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param, TaskGroup, task
from kafka_migration.operators.migration import (
    SWITCHED_GROUPS,
    FenceGroupOperator,
    FlowControlOperator,
    PreflightOperator,
    PrepareTargetOperator,
    StartReplicationOperator,
    StopReplicationOperator,
    SwitchGroupOperator,
    SwitchProducersOperator,
)
from kafka_migration.operators.spark import MigrationSparkSubmitOperator
from kafka_migration.sensors.readiness import (
    BackfillDoneSensor,
    CheckpointsCurrentSensor,
    ClustersAnswerSensor,
    EngineCopyingSensor,
    GroupReadySensor,
    ReplicationLagSensor,
    TopicReadySensor,
)

from mirror_engine.plan import MigrationPlan, PlanError, load_plan

PLANS = Path(os.environ.get("KAFKA_MIGRATION_PLANS", Path(__file__).resolve().parents[1] / "migrations"))
REPORTS = Path(os.environ.get("AIRFLOW_HOME", ".")) / "reports"
SPARK_CONN_ID = os.environ.get("KAFKA_MIGRATION_SPARK_CONN", "spark_local")
STAGES = ["preflight", "prepare", "replicate", "backfill", "catch_up", "validate", "checkpoints", "switch_groups",
          "switch_producers", "finish"]
STAGE_TITLES = {
    "preflight": "1. Preflight: clusters answer, plan valid, dry-run of every target change",
    "prepare": "2. Prepare the target: topics, partitions, configs, ACLs",
    "replicate": "3. Replicate: start an engine on this Airflow worker, wait until it copies every partition",
    "backfill": "4. Backfill: Spark copies the history of backfill topics",
    "catch_up": "5. Catch up: wait until the lag is at most max_lag_records",
    "validate": "6. Validate: Spark compares every copied record",
    "checkpoints": "7. Checkpoints: groups' offsets current on the target",
    "switch_groups": "8. Switch consumer groups, exactly, with a proof",
    "switch_producers": "9. Switch producers of the chosen topics",
    "finish": "10. Finish: stop the engine this run started",
}

DOC = """
### Kafka migration `{name}`: {source} -> {target}

{description}

Stages, each a task group; every wait is a deferrable sensor (it holds no worker slot, and its log says what it
waits for and how far it is), followed by a short action. A stage left out of the run's `stages` is skipped and
the next ones go on:
1. **preflight**: both clusters answer (waited for); the plan is valid and every target change passes the
   target's dry-run;
2. **prepare**: topics, partitions, configs and ACLs created on the target (`dry_run` stops after the check);
3. **replicate**: an engine worker started on this Airflow worker (`mirror-engine worker`), then a wait until
   an engine of the flow copies every partition (leave this stage out when engines run as their own service);
4. **backfill**: Spark copies the history of `backfill.topics`, then a wait until every held partition is done;
5. **catch_up**: a wait until the lag is at most `max_lag_records` (whichever engines copy);
6. **validate**: Spark compares every copied record on both clusters; the report is in `{reports}`;
7. **checkpoints**: checkpoint rounds until the plan's groups are current on the target;
8. **switch_groups**: per group in `groups`: fenced on the source (with `fence`), a wait until it stopped there
   and was copied past, then the exact switch, verified, with an Asset event `kafka-migration://{name}/groups/<group>`;
9. **switch_producers**: per topic in `producer_topics`: a wait until idle on the source and copied to its end,
   then the switch (the engines stop copying it);
10. **finish**: the engine started by this run stopped (SIGTERM; progress stored).

Plan file: `{path}`{problem}
"""


def _params(plan: MigrationPlan | None) -> dict[str, Param]:
    cutover = plan.cutover if plan else None
    return {
        "stages": Param(STAGES, type="array", items={"type": "string", "enum": STAGES}, examples=STAGES,
                        values_display=STAGE_TITLES, minItems=1, title="Stages to run",
                        description="The stages this run runs, in their fixed order; the others are skipped."),
        "dry_run": Param(False, type="boolean", title="Dry run",
                         description="Prepare: have the target check every change, apply none."),
        "max_lag_records": Param(cutover.max_lag_records if cutover else 0, type="integer", minimum=0,
                                 title="Largest lag to go on with (records)",
                                 description="Catch up: how many records the copy may still be behind."),
        "wait_timeout_s": Param(cutover.wait_timeout_s if cutover else 1800, type="number", exclusiveMinimum=0,
                                title="Longest wait (seconds)",
                                description="The longest any one wait of this run may take before it fails."),
        "groups": Param(list(cutover.groups) if cutover else [], type=["array", "null"], items={"type": "string"},
                        title="Consumer groups to switch",
                        description="One group per line; empty: none. Each switches once stopped on the source."),
        "fence": Param(cutover.fence if cutover else False, type="boolean", title="Fence groups on the source",
                       description="Deny READ on each group on the source before switching it, so that its old "
                                   "consumers cannot come back."),
        "producer_topics": Param([], type=["array", "null"], items={"type": "string"},
                                 title="Topics whose producers switch",
                                 description="Source topics, one per line; empty: none."),
        "producer_idle_s": Param(cutover.producer_idle_s if cutover else 30, type="number", minimum=0,
                                 title="Idle time before a producer switch (seconds)",
                                 description="How long a topic must go unwritten on the source before its switch."),
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
        # Every sensor's arguments. Its retries are for Airflow failing a deferred task on a stale executor
        # event (apache/airflow#72716); a retry looks once before deferring. Real failures never retry.
        wait = {"plan_path": path, "wait_timeout_s": "{{ params.wait_timeout_s }}", "retries": 2,
                "retry_delay": timedelta(seconds=2)}
        with TaskGroup("preflight"):
            clusters = ClustersAnswerSensor(task_id="clusters_answer", trigger_rule="all_success", **wait)
            preflight = PreflightOperator(task_id="check", plan_path=path, trigger_rule="all_success")
            clusters >> preflight
        with TaskGroup("prepare"):
            prepare = PrepareTargetOperator(task_id="apply", plan_path=path, dry_run="{{ params.dry_run }}")
        with TaskGroup("replicate"):
            start = StartReplicationOperator(task_id="start", plan_path=path)
            copying = EngineCopyingSensor(task_id="engine_copying", **wait)
            start >> copying
        with TaskGroup("backfill"):
            backfill = MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=path,
                                                    stage="backfill", conn_id=SPARK_CONN_ID)
            backfilled = BackfillDoneSensor(task_id="done", **wait)
            backfill >> backfilled
        with TaskGroup("catch_up"):
            caught_up = ReplicationLagSensor(task_id="wait_for_lag", max_lag="{{ params.max_lag_records }}", **wait)
        with TaskGroup("validate"):
            validate = MigrationSparkSubmitOperator(task_id="records", job="validate", plan_path=path,
                                                    stage="validate", conn_id=SPARK_CONN_ID,
                                                    job_args=["--report-dir", str(REPORTS)])
        with TaskGroup("checkpoints"):
            checkpoints = CheckpointsCurrentSensor(task_id="current", **wait)
        with TaskGroup("switch_groups"):
            @task(task_id="groups")
            def groups_to_switch(params: dict | None = None) -> list[str]:
                return list((params or {}).get("groups") or [])

            groups = groups_to_switch()
            fenced = FenceGroupOperator.partial(
                task_id="fence", plan_path=path, fence="{{ params.fence }}",
                map_index_template="{{ task.group }}").expand(group=groups)
            group_ready = GroupReadySensor.partial(
                task_id="ready", fence="{{ params.fence }}", map_index_template="{{ task.group }}",
                **wait).expand(group=groups)
            switched = SwitchGroupOperator.partial(
                task_id="switch", plan_path=path, fence="{{ params.fence }}", outlets=[SWITCHED_GROUPS],
                map_index_template="{{ task.group }}").expand(group=groups)
            fenced >> group_ready >> switched
        with TaskGroup("switch_producers"):
            @task(task_id="topics")
            def topics_to_switch(params: dict | None = None) -> list[str]:
                return list((params or {}).get("producer_topics") or [])

            topics = topics_to_switch()
            topic_ready = TopicReadySensor.partial(
                task_id="ready", idle_s="{{ params.producer_idle_s }}", map_index_template="{{ task.topic }}",
                **wait).expand(topic=topics)
            producers = SwitchProducersOperator.partial(
                task_id="switch", plan_path=path, map_index_template="{{ task.topic }}").expand(topic=topics)
            topic_ready >> producers
        with TaskGroup("finish"):
            finish = StopReplicationOperator(task_id="stop_engine", plan_path=path)

        preflight >> prepare >> start
        copying >> backfill
        backfilled >> caught_up >> validate >> checkpoints >> groups
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
        params={"mode": Param(plan.validation.mode, type="string", enum=["full", "sample"], title="Mode",
                              values_display={"full": "Full: every copied record", "sample": "Sample: a fraction"},
                              description="Compare every copied record, or a random sample of them."),
                "fraction": Param(plan.validation.sample_fraction, type="number", exclusiveMinimum=0, maximum=1,
                                  title="Sample fraction",
                                  description="In sample mode, the share of records compared (above 0, at most 1).")},
        doc_md=f"Validates, record by record, what plan `{plan.name}` has copied so far; the report goes to "
               f"`{REPORTS}` and the task fails when the copy is not clean.",
    ) as dag:
        MigrationSparkSubmitOperator(
            task_id="validate", job="validate", plan_path=str(plan_file), stage="validate", conn_id=SPARK_CONN_ID,
            job_args=["--report-dir", str(REPORTS), "--mode", "{{ params.mode }}", "--fraction",
                      "{{ params.fraction }}"])
    return dag


def _plan_param(plan_files: list[Path]) -> Param:
    files = [str(p) for p in plan_files]
    return Param(files[0] if files else None, type="string", enum=files or None, title="Migration plan",
                 values_display={f: Path(f).stem for f in files}, description="The plan file (from the plans folder).")


def build_backfill_dag(plan_files: list[Path]) -> DAG:
    """Backfill by hand or through the REST API: a plan, its topics, partitions, and an offset or time range."""
    with DAG(
        dag_id="kafka_migration_backfill",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        tags=["kafka-migration"],
        params={
            "plan": _plan_param(plan_files),
            "topics": Param(None, type=["null", "string"], title="Topics",
                            description="Comma-separated source topics; empty: every topic waiting for its backfill."),
            "partitions": Param(None, type=["null", "string"], pattern=r"^\s*\d+(\s*,\s*\d+)*\s*$",
                                title="Partitions", description="Comma-separated partition numbers; empty: all."),
            "from": Param(None, type=["null", "string"], title="From",
                          description="First offset, or an ISO time such as 2026-11-01T00:00:00Z; empty: the "
                                      "earliest."),
            "to": Param(None, type=["null", "string"], title="To",
                        description="End offset (excluded) or ISO time; empty: the engine's snapshot."),
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
        params={"plan": _plan_param(plan_files),
                "action": Param(None, type="string", enum=["start", "pause", "resume", "stop"], title="Action",
                                values_display={"start": "Start: join again and copy",
                                                "pause": "Pause: keep the partitions, stop fetching",
                                                "resume": "Resume after a pause",
                                                "stop": "Stop: store progress, release the partitions"},
                                description="What every engine of the flow does, within a second or two.")},
        doc_md="Starts, pauses, resumes or stops every engine of a plan's flow, wherever it runs, through the "
               "flow's control topic on the target. Stop stores each engine's progress and releases its "
               "partitions; start takes them up again from there.",
    ) as dag:
        FlowControlOperator(task_id="apply", plan_path="{{ params.plan }}", action="{{ params.action }}")
    return dag


_flow_control = build_flow_control_dag(_plan_files)
