"""The migration's tasks, each a thin call into `mirror_engine`.

Every operator belongs to a stage; a run's `stages` param lists the stages to run and the others are
skipped (the DAG's trigger rules let later stages run past skipped ones). Cluster settings come from
Airflow connections through `MigrationPlanHook`; nothing secret is logged or returned to XCom.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, AssetAlias, BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kafka_migration.cockpit.links import SwitchReportLink
from kafka_migration.hooks.plan import MigrationPlanHook, load_plan_or_fail
from kafka_migration.params import flag, seconds
from kafka_migration.stages import run_groups, skip_unless_selected

if TYPE_CHECKING:
    from mirror_engine.replication import DetachedWorker

SWITCHED_GROUPS = AssetAlias("kafka-migration-switched-groups")
RUN_FENCE = "fence (the run's fence param)"  # how a run asks for fences, named when the source cannot hold one


def group_asset(plan_name: str, group: str) -> Asset:
    """The Asset a downstream DAG (an application's deploy) waits on for one switched group."""
    return Asset(name=f"kafka-migration.{plan_name}.group.{group}", uri=f"kafka-migration://{plan_name}/groups/{group}")


class MigrationOperator(BaseOperator):
    """Base: a plan file and the stage this task belongs to."""

    template_fields: tuple[str, ...] = ("plan_path",)
    stage = ""

    def __init__(self, *, plan_path: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_path = plan_path

    def hook(self) -> MigrationPlanHook:
        return load_plan_or_fail(self.plan_path)

    def execute(self, context: Any) -> Any:
        skip_unless_selected(self.stage, context)
        return self.run(context)

    def run(self, context: Any) -> Any:
        raise NotImplementedError


class PlanProblemOperator(BaseOperator):
    """The one task of a plan that cannot run: it fails with the plan's problems."""

    def __init__(self, *, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def execute(self, context: Any) -> None:
        raise AirflowFailException(self.problem)


def _log_source_access(operator: BaseOperator, prepared: Any) -> None:
    """Which syncs the source's permissions allow, and a warning for each one skipped for want of a right."""
    if prepared.source_access:
        operator.log.info("%s", prepared.source_access.statement())
    for warning in prepared.warnings:
        operator.log.warning("%s", warning)
    for note in prepared.config_notes:
        operator.log.warning("%s", note)


def _fencing_problems(plan: Any, source: dict[str, str], params: dict[str, Any]) -> list[str]:
    """The run fences its groups on a source that cannot hold a fence (no authorizer): one sentence."""
    from mirror_engine.kafka import admin_client, fence_problem

    groups = run_groups(params, plan)
    stages = params.get("stages")
    if not flag(params.get("fence", plan.cutover.fence)) or not groups or \
            (stages is not None and "switch_groups" not in stages):
        return []
    problem = fence_problem(admin_client(source), plan.source.alias, f"the run's groups ({', '.join(groups)})",
                            RUN_FENCE)
    return [problem] if problem else []


class PreflightOperator(MigrationOperator):
    """Plan valid, both clusters reachable, and a dry-run of every target change the plan needs."""

    stage = "preflight"

    def run(self, context: Any) -> dict:
        from mirror_engine.kafka import ClusterUnreachable, describe_plan_clusters
        from mirror_engine.prepare import prepare_target, render_actions, render_result

        hook = self.hook()
        plan = hook.plan
        source, target = hook.client_configs()
        try:
            clusters = describe_plan_clusters(plan, source, target)
        except ClusterUnreachable as error:
            raise AirflowFailException(str(error)) from None

        def planned(prepared: Any) -> None:
            _log_source_access(self, prepared)
            self.log.info("plan '%s': %d topic(s) to replicate; changes on the target:\n%s", plan.name,
                          len(prepared.source_topics), render_actions(prepared.actions))

        preparation = prepare_target(
            plan, source, target, clusters=clusters, dry_run=True, on_planned=planned,
            more_problems=lambda _prepared: _fencing_problems(plan, source, context.get("params") or {}),
            on_checked=lambda result: self.log.info("dry-run, validated by the target: %s", render_result(result)))
        prepared = preparation.prepared
        if preparation.refused:
            raise AirflowFailException("preflight failed, nothing changed:\n  " + "\n  ".join(prepared.problems))
        if preparation.failed:
            refused = "; ".join(f"{action.kind} {action.resource}: {error}" for action, error in preparation.failed)
            raise AirflowFailException(f"the target refused {len(preparation.failed)} change(s) in the dry-run: "
                                       f"{refused}")
        return {"topics": len(prepared.source_topics), "changes": len(prepared.actions)}


class PrepareTargetOperator(MigrationOperator):
    """Create topics, partitions, configs and ACLs on the target (dry-run first, in the log)."""

    stage = "prepare"
    template_fields = ("plan_path", "dry_run")

    def __init__(self, *, dry_run: bool | str = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dry_run = dry_run

    def run(self, context: Any) -> dict:
        from mirror_engine.prepare import prepare_target, render_actions, render_result

        def planned(prepared: Any) -> None:
            _log_source_access(self, prepared)
            self.log.info("changes on the target:\n%s", render_actions(prepared.actions))

        hook = self.hook()
        dry_run = flag(self.dry_run)
        preparation = prepare_target(
            hook.plan, *hook.client_configs(), dry_run=True, apply=not dry_run, on_planned=planned,
            on_checked=lambda result: self.log.info("dry-run: %s", render_result(result)),
            on_applied=lambda result: self.log.info("applied: %s", render_result(result)))
        if preparation.refused:
            raise AirflowFailException("nothing applied:\n  " + "\n  ".join(preparation.prepared.problems))
        if preparation.checked is not None and preparation.checked.failed:
            raise AirflowFailException("the dry-run failed: nothing applied")
        if preparation.applied is not None and preparation.applied.failed:
            raise AirflowFailException(f"{len(preparation.applied.failed)} change(s) failed")
        if dry_run:
            return {"applied": 0, "dry_run": True}
        return {"applied": len(preparation.applied.applied) if preparation.applied else 0, "dry_run": False}


def _detached_worker(plan_name: str) -> DetachedWorker:
    """The plan's engine worker detached on this Airflow worker, its files under AIRFLOW_HOME."""
    from mirror_engine.replication import DetachedWorker

    return DetachedWorker(plan_name, Path(os.environ.get("AIRFLOW_HOME", ".")))


class StartReplicationOperator(MigrationOperator):
    """Start an engine worker for the plan on this Airflow worker, in the background, unless it already runs.

    It joins the flow's worker group, so it shares the flow with workers run elsewhere (see
    docker-compose.yaml); at scale those run as their own service and this task may be left out. The task
    ends within seconds: the sensor after it waits for the engine to copy.
    """

    stage = "replicate"

    def run(self, context: Any) -> dict:
        from mirror_engine.mm2 import PlanReference
        from mirror_engine.replication import SupervisionError

        hook = self.hook()
        worker = _detached_worker(hook.plan.name)
        try:
            engine, started = worker.ensure_running(PlanReference.parse(self.plan_path),
                                                    {**os.environ, **hook.process_env()}, worker_prefix="airflow")
        except SupervisionError as error:
            raise AirflowFailException(str(error)) from None
        self.log.info("engine %s (%s), log in %s", "started" if started else "already running", engine.describe(),
                      worker.log_file)
        return {"pid": engine.pid, "host": engine.host, "log": str(worker.log_file)}


class StopReplicationOperator(MigrationOperator):
    """Stop the engine started by StartReplicationOperator on this host (SIGTERM: it flushes and stores its
    progress; SIGKILL after 120 s). Fails with a sentence when that engine cannot be found or stopped from here."""

    stage = "finish"

    def run(self, context: Any) -> dict:
        from mirror_engine.replication import SupervisionError

        worker = _detached_worker(self.hook().plan.name)
        log_file = worker.log_file
        stages = context["params"].get("stages")
        if stages is not None and "replicate" not in stages and not worker.started_here():
            raise AirflowSkipException("this run leaves out the replicate stage and no engine was started on this "
                                       "host: engines run as their own service are stopped where they run")
        try:
            engine, killed = worker.stop(timeout_s=120)
        except SupervisionError as error:
            raise AirflowFailException(str(error)) from None
        if killed:
            self.log.warning("the engine (%s) did not stop within 120 s of SIGTERM and was killed; a restart "
                             "re-sends nothing. Its log: %s", engine.describe(), log_file)
        else:
            self.log.info("engine stopped (%s); its log: %s", engine.describe(), log_file)
        return {"stopped": True, "killed": killed}


class SwitchProducersOperator(MigrationOperator):
    """Switch one topic's producers once its sensor saw it idle on the source and fully copied: the engines
    stop copying it.

    The switch polls the check its sensor deferred on (idle for `idle_s`, copied to the end; each None: the
    plan's setting), up to `wait_timeout_s`: the topic is seen idle again right before the switch."""

    stage = "switch_producers"
    template_fields = ("plan_path", "topic", "idle_s", "wait_timeout_s")
    operator_extra_links = (SwitchReportLink(),)

    def __init__(self, *, topic: str, idle_s: float | str | None = None, wait_timeout_s: float | str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topic, self.idle_s, self.wait_timeout_s = topic, idle_s, wait_timeout_s

    def run(self, context: Any) -> dict:
        from mirror_engine.cutover import SwitchError, switch_producers

        hook = self.hook()
        try:
            report = switch_producers(hook.plan, *hook.client_configs(), self.topic,
                                      idle_s=seconds(self.idle_s),
                                      timeout_s=seconds(self.wait_timeout_s))
        except SwitchError as error:
            raise AirflowFailException(str(error)) from None
        self.log.info("%s", report.render())
        return json.loads(report.to_json())


class FlowControlOperator(MigrationOperator):
    """Start, pause, resume or stop every engine of the plan's flow, through the flow's control topic."""

    stage = "replicate"
    template_fields = ("plan_path", "action")

    def __init__(self, *, action: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.action = action

    def run(self, context: Any) -> dict:
        from mirror_engine.flow import FLOW_ACTIONS, ControlChannel

        if self.action not in FLOW_ACTIONS:
            raise AirflowFailException(f"action must be one of {', '.join(FLOW_ACTIONS)}, got {self.action!r}")
        hook = self.hook()
        _source, target = hook.client_configs()
        ControlChannel(hook.plan, target).set_flow_state(FLOW_ACTIONS[self.action])
        self.log.info("flow of plan '%s': %s", hook.plan.name, self.action)
        return {"action": self.action}
