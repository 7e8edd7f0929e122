"""One migration DAG per plan in `migrations/` (or $KAFKA_MIGRATION_PLANS), built at parse time: each YAML plan, and
each flow a MirrorMaker 2 file there enables (`kafka_migration.plan_dags`).

Parsing reads the YAML files only: no Kafka, Spark or Maven is contacted until a task runs. A plan
that does not validate (or whose schedule Airflow refuses, or whose name another plan file uses) still
gets a DAG of its own, whose preflight task fails with the plan's problems; the other plans' DAGs are
unaffected.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param, TaskGroup, task
from kafka_migration.hooks.plan import load_plan_or_fail
from kafka_migration.operators.approval import SwitchApprovalOperator
from kafka_migration.operators.failback import FailbackPreflightOperator, FailbackPrepareOperator
from kafka_migration.operators.migration import (
    SWITCHED_GROUPS,
    FlowControlOperator,
    PlanProblemOperator,
    PreflightOperator,
    PrepareTargetOperator,
    StartReplicationOperator,
    StopReplicationOperator,
    SwitchProducersOperator,
)
from kafka_migration.operators.schemas import PrepareSchemasOperator
from kafka_migration.operators.spark import MigrationSparkSubmitOperator
from kafka_migration.operators.switch_groups import BATCH_LABEL, SwitchGroupsOperator
from kafka_migration.plan_dags import (
    failback_dag_id,
    migration_dag_id,
    plan_files,
    plans_folder,
    read_plan_file,
    validation_dag_id,
)
from kafka_migration.sensors.readiness import (
    BackfillDoneSensor,
    CheckpointsCurrentSensor,
    ClustersAnswerSensor,
    EngineCopyingSensor,
    RegistriesAnswerSensor,
    ReplicationLagSensor,
    SchemasOnTargetSensor,
    TopicReadySensor,
)
from kafka_migration.stages import GROUPS_PER_TASK, group_batches, run_groups

from mirror_engine.mm2 import PlanReference
from mirror_engine.plan import MigrationPlan, PlanError

PLANS = plans_folder()
REPORTS = Path(os.environ.get("AIRFLOW_HOME", ".")) / "reports"
SPARK_CONN_ID = os.environ.get("KAFKA_MIGRATION_SPARK_CONN", "spark_local")
STAGES = ["preflight", "prepare", "replicate", "backfill", "catch_up", "validate", "checkpoints", "switch_groups",
          "switch_producers", "finish"]
STAGE_TITLES = {
    "preflight": "1. Preflight: clusters answer, plan valid, dry-run of every target change",
    "prepare": "2. Prepare the target: topics, partitions, configs, ACLs",
    "replicate": "3. Replicate: start an engine on this Airflow worker, wait until it copies every partition",
    "backfill": "4. Backfill: Spark copies the history of backfill topics",
    "catch_up": "5. Catch up: wait until the copy keeps up within max_lag_s or max_lag_records",
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
   for a plan with `schemas`, then a wait until both registries answer, the subjects of the topics moved to the
   target registry (`prepare.schemas`), and a wait until the target registry holds them all;
3. **replicate**: an engine worker started on this Airflow worker (`mirror-engine worker`), then a wait until
   an engine of the flow copies every partition (leave this stage out when engines run as their own service);
4. **backfill**: Spark copies the history of `backfill.topics`, then a wait until every held partition is done;
5. **catch_up**: a wait until the copy is at most `max_lag_s` seconds or `max_lag_records` records behind the
   source, held for the plan's `cutover.catch_up_settle_s` while the engine keeps up (a live source never
   reaches lag 0; the switches wait for their own records), whichever engines copy;
6. **validate**: Spark compares every copied record on both clusters; the report is in `{reports}`;
7. **checkpoints**: checkpoint rounds until the plan's groups are current on the target;
8. **switch_groups**: per group in `groups` (in tasks of up to `groups_per_task` groups): fenced on the source
   (with `fence`), a wait until it stopped there and was copied past, then the exact switch, verified, with an
   Asset event `kafka-migration://{name}/groups/<group>`;
9. **switch_producers**: per topic in `producer_topics`: a wait until idle on the source and copied to its end,
   then the switch (the engines stop copying it);
10. **finish**: the engine started by this run stopped (SIGTERM; progress stored).

Plan file: `{path}`
"""


FAILBACK_STAGES = ["preflight", "prepare", "replicate", "catch_up", "switch_groups", "switch_producers", "finish"]
FAILBACK_TITLES = {
    "preflight": "1. Preflight: clusters answer, producers were switched, where each partition's way back starts",
    "prepare": "2. Prepare: each partition's start stored on the source, its write fences lifted",
    "replicate": "3. Copy back: start an engine of the way back on this Airflow worker",
    "catch_up": "4. Catch up: wait until the copy back keeps up within max_lag_s or max_lag_records",
    "switch_groups": "5. Switch consumer groups back to the source, exactly, with a proof",
    "switch_producers": "6. Switch producers of the chosen topics back to the source",
    "finish": "7. Finish: stop the engine this run started",
}

FAILBACK_DOC = """
### The way back of migration `{name}`: {target} -> {source}

After the cutover of `{name}` (its producers switched to `{target}`), this DAG copies back to `{source}` what the
target received since, then moves groups and producers back, with the migration's own sensors and proofs
(`docs/failback.md` in the project). Each partition's copy back starts at the forward copy's end; a group's position
maps back exactly inside the forward copy and past it. It acts on plan `{name}-failback`, built when a task runs
from `{name}` and the switched topics.

Plan file: `{path}`
"""


def _params(plan: MigrationPlan, stages: list[str] = STAGES,
            titles: dict[str, str] = STAGE_TITLES) -> dict[str, Param]:
    cutover = plan.cutover
    return {
        "stages": Param(stages, type="array", items={"type": "string", "enum": stages}, examples=stages,
                        values_display=titles, minItems=1, title="Stages to run",
                        description="The stages this run runs, in their fixed order; the others are skipped."),
        "dry_run": Param(False, type="boolean", title="Dry run",
                         description="Prepare: have the target check every change, apply none."),
        "max_lag_records": Param(cutover.max_lag_records, type="integer", minimum=0,
                                 title="Largest lag to go on with (records)",
                                 description="Catch up: how many records the copy may still be behind."),
        "max_lag_s": Param(cutover.max_lag_s, type=["number", "null"], minimum=0,
                           title="Largest lag to go on with (seconds behind the source)",
                           description="Catch up: how old the oldest record not copied yet may be; empty: no "
                                       "time bound (then only max_lag_records counts)."),
        "wait_timeout_s": Param(cutover.wait_timeout_s, type="number", exclusiveMinimum=0,
                                title="Longest wait (seconds)",
                                description="The longest any one wait of this run may take before it fails."),
        # Null: the plan's cutover.groups, read by the run's `groups` task (Airflow copies each param into every
        # task at parse time, so the plan's list here would make each parse grow with it).
        "groups": Param(None, type=["array", "null"], items={"type": "string"},
                        title="Consumer groups to switch",
                        description=f"One group per line; empty: the plan's cutover.groups ({len(cutover.groups):,} "
                                    "group(s)). Each switches once stopped on the source. To switch none, leave "
                                    "the switch_groups stage out."),
        "groups_per_task": Param(GROUPS_PER_TASK, type="integer", minimum=1, title="Groups switched per task",
                                 description="The switch_groups stage switches its groups in tasks of at most this "
                                             "many, each group with its own proof."),
        "approve_switch": Param(cutover.approve_switch, type="boolean", title="Approve before the switch",
                                description="A person approves the switch under Required Actions, shown the lag, "
                                            "the validation and the checkpoints; rejected, the cutover is skipped "
                                            "and the engine keeps copying."),
        "fence": Param(cutover.fence, type="boolean", title="Fence groups on the source",
                       description="Deny READ on each group on the source before switching it, so that its old "
                                   "consumers cannot come back."),
        "producer_topics": Param(list(cutover.producer_topics), type=["array", "null"], items={"type": "string"},
                                 title="Topics whose producers switch",
                                 description="Source topics, one per line (the plan's cutover.producer_topics "
                                             "unless changed here); empty: none."),
        "producer_idle_s": Param(cutover.producer_idle_s, type="number", minimum=0,
                                 title="Idle time before a producer switch (seconds)",
                                 description="How long a topic must go unwritten on the source before its switch."),
    }


def _task_arguments(path: str) -> tuple[dict, dict]:
    """(every sensor's arguments, every cutover step's). A sensor's retries are for Airflow failing a deferred task
    on a stale executor event (apache/airflow#72716); a retry looks once before deferring. A cutover step killed
    mid-task (its worker lost) is retried: run again, it repeats nothing it did (mirror_engine.switched). Their
    refusals are AirflowFailException, never retried."""
    retried = {"retries": 2, "retry_delay": timedelta(seconds=2)}
    return {"plan_path": path, "wait_timeout_s": "{{ params.wait_timeout_s }}", **retried}, retried


def _replicate_stage(path: str, wait: dict) -> tuple:
    """An engine started on this Airflow worker, then a wait until an engine of the flow copies every partition."""
    with TaskGroup("replicate"):
        start = StartReplicationOperator(task_id="start", plan_path=path)
        copying = EngineCopyingSensor(task_id="engine_copying", **wait)
        start >> copying
    return start, copying


def _lag_sensor(wait: dict) -> ReplicationLagSensor:
    return ReplicationLagSensor(task_id="wait_for_lag", max_lag="{{ params.max_lag_records }}",
                                max_lag_s="{{ params.max_lag_s }}", **wait)


def _cutover_stages(path: str, wait: dict, retried: dict) -> SwitchApprovalOperator:
    """The approval gate, switch_groups, switch_producers and finish of a migration or its way back, in that order;
    the gate, which the stages before lead to."""
    with TaskGroup("approve"):
        # Retried as the sensors are: Airflow 3.3 can fail a parked task on the stale success of the process that
        # parked it when the answer comes within seconds (apache/airflow#72716); the retry asks again.
        approval = SwitchApprovalOperator(task_id="switch", plan_path=path, required="{{ params.approve_switch }}",
                                          **retried)
    with TaskGroup("switch_groups"):
        @task(task_id="groups")
        def groups_to_switch(params: dict | None = None) -> list[list[str]]:
            return group_batches(run_groups(params, load_plan_or_fail(path).plan),
                                 (params or {}).get("groups_per_task"))

        groups = groups_to_switch()
        switched = SwitchGroupsOperator.partial(
            task_id="switch", plan_path=path, fence="{{ params.fence }}", outlets=[SWITCHED_GROUPS],
            wait_timeout_s="{{ params.wait_timeout_s }}", map_index_template=BATCH_LABEL,
            **retried).expand(groups=groups)
    with TaskGroup("switch_producers"):
        @task(task_id="topics")
        def topics_to_switch(params: dict | None = None) -> list[str]:
            return list((params or {}).get("producer_topics") or [])

        topics = topics_to_switch()
        topic_ready = TopicReadySensor.partial(
            task_id="ready", idle_s="{{ params.producer_idle_s }}", map_index_template="{{ task.topic }}",
            **wait).expand(topic=topics)
        producers = SwitchProducersOperator.partial(
            task_id="switch", plan_path=path, idle_s="{{ params.producer_idle_s }}",
            wait_timeout_s="{{ params.wait_timeout_s }}", map_index_template="{{ task.topic }}",
            **retried).expand(topic=topics)
        topic_ready >> producers
    with TaskGroup("finish"):
        finish = StopReplicationOperator(task_id="stop_engine", plan_path=path)
    approval >> groups
    switched >> topics
    producers >> finish
    return approval


def build_dag(plan_path: str, plan: MigrationPlan) -> DAG:
    """`plan_path`: the plan's reference (a YAML file, or `FILE.properties#a->b`), which every task reads again."""
    name, path = plan.name, plan_path
    with DAG(
        dag_id=migration_dag_id(name),
        schedule=plan.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
        max_active_runs=1,
        params=_params(plan),
        # Templates render to the params' own types: a flag arrives a bool, a bound a number, an empty one None
        # (`kafka_migration.params` reads them), not their text.
        render_template_as_native_obj=True,
        tags=["kafka-migration"],
        default_args={"trigger_rule": "none_failed"},
        doc_md=DOC.format(name=name, source=plan.source.alias, target=plan.target.alias,
                          description=plan.description or "", reports=REPORTS, path=path),
    ) as dag:
        wait, retried = _task_arguments(path)
        with TaskGroup("preflight"):
            clusters = ClustersAnswerSensor(task_id="clusters_answer", trigger_rule="all_success", **wait)
            preflight = PreflightOperator(task_id="check", plan_path=path, trigger_rule="all_success")
            clusters >> preflight
        with TaskGroup("prepare"):
            prepare = PrepareTargetOperator(task_id="apply", plan_path=path, dry_run="{{ params.dry_run }}")
            if plan.schemas is not None:  # the target registry too, before the engine copies a record
                registries = RegistriesAnswerSensor(task_id="registries_answer", **wait)
                schemas = PrepareSchemasOperator(task_id="schemas", plan_path=path, dry_run="{{ params.dry_run }}")
                on_target = SchemasOnTargetSensor(task_id="schemas_on_target", poll_interval_s=10, **wait)
                prepare >> registries >> schemas >> on_target
                prepare = on_target
        start, copying = _replicate_stage(path, wait)
        with TaskGroup("backfill"):
            backfill = MigrationSparkSubmitOperator(task_id="history", job="backfill", plan_path=path,
                                                    stage="backfill", conn_id=SPARK_CONN_ID)
            backfilled = BackfillDoneSensor(task_id="done", **wait)
            backfill >> backfilled
        with TaskGroup("catch_up"):
            caught_up = _lag_sensor(wait)
        with TaskGroup("validate"):
            validate = MigrationSparkSubmitOperator(task_id="records", job="validate", plan_path=path,
                                                    stage="validate", conn_id=SPARK_CONN_ID,
                                                    job_args=["--report-dir", str(REPORTS)])
        with TaskGroup("checkpoints"):
            checkpoints = CheckpointsCurrentSensor(task_id="current", **wait)
        approval = _cutover_stages(path, wait, retried)

        preflight >> prepare >> start
        copying >> backfill
        backfilled >> caught_up >> validate >> checkpoints >> approval
    return dag


def build_failback_dag(plan_path: str, plan: MigrationPlan) -> DAG:
    """The way back of `plan` (its reference `plan_path`) after its cutover: its tasks act on the way back's plan
    (`plan_path#failback`), built when they run; the clusters are waited for as the forward plan names them."""
    from mirror_engine.mm2 import PlanReference

    path = str(PlanReference.parse(plan_path).way_back())
    with DAG(
        dag_id=failback_dag_id(plan.name),
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
        max_active_runs=1,
        params=_params(plan, FAILBACK_STAGES, FAILBACK_TITLES),
        render_template_as_native_obj=True,
        tags=["kafka-migration", "failback"],
        default_args={"trigger_rule": "none_failed"},
        doc_md=FAILBACK_DOC.format(name=plan.name, source=plan.source.alias, target=plan.target.alias,
                                   path=plan_path),
    ) as dag:
        wait, retried = _task_arguments(path)
        with TaskGroup("preflight"):
            clusters = ClustersAnswerSensor(task_id="clusters_answer", trigger_rule="all_success",
                                            **{**wait, "plan_path": plan_path})
            preflight = FailbackPreflightOperator(task_id="check", plan_path=path, trigger_rule="all_success")
            clusters >> preflight
        with TaskGroup("prepare"):
            prepare = FailbackPrepareOperator(task_id="apply", plan_path=path, dry_run="{{ params.dry_run }}")
        start, copying = _replicate_stage(path, wait)
        with TaskGroup("catch_up"):
            caught_up = _lag_sensor(wait)
        approval = _cutover_stages(path, wait, retried)

        preflight >> prepare >> start
        copying >> caught_up >> approval
    return dag


def build_validation_dag(plan_path: str, plan: MigrationPlan) -> DAG:
    """Validation alone, on the plan's `validation.schedule` during a long migration (or on trigger)."""
    with DAG(
        dag_id=validation_dag_id(plan.name),
        schedule=plan.validation.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
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
            task_id="validate", job="validate", plan_path=plan_path, stage="validate", conn_id=SPARK_CONN_ID,
            job_args=["--report-dir", str(REPORTS), "--mode", "{{ params.mode }}", "--fraction",
                      "{{ params.fraction }}"])
    return dag


def _plan_param(plan_paths: list[str]) -> Param:
    return Param(plan_paths[0] if plan_paths else None, type="string", enum=plan_paths or None, title="Migration plan",
                 values_display={p: _label(p) for p in plan_paths},
                 description="The plan (from the plans folder): a YAML plan, or a flow of a MirrorMaker 2 file.")


def _label(plan_path: str) -> str:
    """`shop` for `.../shop.yaml`, `mm2 (a->b)` for `.../mm2.properties#a->b`."""
    reference = PlanReference.parse(plan_path)
    return f"{reference.path.stem} ({reference.flow})" if reference.flow else reference.path.stem


def build_backfill_dag(plan_paths: list[str]) -> DAG:
    """Backfill by hand or through the REST API: a plan, its topics, partitions, and an offset or time range."""
    with DAG(
        dag_id="kafka_migration_backfill",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
        tags=["kafka-migration"],
        params={
            "plan": _plan_param(plan_paths),
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


def build_broken_plan_dag(plan_path: str, problem: str) -> DAG:
    """The DAG of a plan that cannot run: it appears under the plan's file name (and flow), and its one task fails
    with the problem, so a bad plan costs only its own DAG."""
    reference = PlanReference.parse(plan_path)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", reference.path.stem + (f"_{reference.flow}" if reference.flow else ""))
    with DAG(
        dag_id=migration_dag_id(name),
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
        tags=["kafka-migration"],
        doc_md=f"### Plan `{plan_path}` cannot run\n\n**This plan does not validate** (preflight fails):\n\n"
               f"```\n{problem}\n```",
    ) as dag, TaskGroup("preflight"):
        PlanProblemOperator(task_id="check", problem=problem)
    return dag


def load_plans(plan_files: list[Path]) -> tuple[dict[str, MigrationPlan], dict[str, str]]:
    """({plan reference: plan} of the plans that load, {reference or file: problem} of the others). A plan file
    never takes other plans' DAGs with it: whatever it does while loading is its own problem, and two plans of the
    same name are both refused, each naming the other."""
    plans: dict[str, MigrationPlan] = {}
    problems: dict[str, str] = {}
    for plan_file in plan_files:
        try:
            plans.update(read_plan_file(plan_file))
        except PlanError as error:
            problems[str(plan_file)] = str(error)
        except Exception as error:  # one unreadable file must not cost every migration's DAG
            problems[str(plan_file)] = f"{plan_file}: the plan could not be read: {type(error).__name__}: {error}"
    files_of: dict[str, list[str]] = {}
    for plan_file, plan in plans.items():
        files_of.setdefault(plan.name, []).append(plan_file)
    for name, files in files_of.items():
        if len(files) > 1:
            for plan_file in files:
                others = ", ".join(str(f) for f in files if f != plan_file)
                problems[plan_file] = (f"{plan_file}: name: plan name '{name}' is also the name of {others}; "
                                       "each plan needs a name of its own")
                del plans[plan_file]
    return plans, problems


def build_plan_dags(plan_path: str, plan: MigrationPlan) -> tuple[list[DAG], str]:
    """(the migration and validation DAGs of a plan, and its way back's under the identity policy, "") with their
    schedules checked as the scheduler checks them, or ([], the problem) when Airflow refuses a schedule."""
    dags = []
    if plan.replication_policy.type == "identity":  # a way back needs a topic's name to be the same on both sides
        dags.append(build_failback_dag(plan_path, plan))
    for field, value, build in (
            ("schedule", plan.schedule, lambda: build_dag(plan_path, plan)),
            ("validation.schedule", plan.validation.schedule, lambda: build_validation_dag(plan_path, plan))):
        try:
            dag = build()
            dag.timetable.validate()
        except Exception as error:  # Airflow refuses a schedule in several ways
            return [], f"{plan_path}: {field}: Airflow cannot schedule {value!r}: {error}"
        dags.append(dag)
    return dags, ""


_plans, _problems = load_plans(plan_files(PLANS))
for _plan_file, _plan in _plans.items():
    _dags, _problem = build_plan_dags(_plan_file, _plan)
    for _dag in _dags:
        globals()[_dag.dag_id] = _dag
    if _problem:
        _problems[_plan_file] = _problem
for _plan_file, _problem in _problems.items():
    _dag = build_broken_plan_dag(_plan_file, _problem)
    globals()[_dag.dag_id] = _dag
_plan_paths = sorted({*_plans, *_problems})
_backfill = build_backfill_dag(_plan_paths)


def build_flow_control_dag(plan_paths: list[str]) -> DAG:
    """Start, pause, resume or stop a flow's engines from the UI (they pick it up within a second or two)."""
    with DAG(
        dag_id="kafka_migration_flow_control",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        auto_register=False,  # registered by the module's globals, once checked (see build_plan_dags)
        tags=["kafka-migration"],
        params={"plan": _plan_param(plan_paths),
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


_flow_control = build_flow_control_dag(_plan_paths)
