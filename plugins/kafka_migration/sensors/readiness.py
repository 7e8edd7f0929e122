"""Deferrable sensors, one per wait of a migration; each polls a `mirror_engine.cutover.readiness` check in the
triggerer.

A sensor holds no worker slot while it waits: it loads the plan (a bad plan fails it at once), defers to
`ReadinessTrigger`, and on the trigger's event succeeds, or fails with the check's reason or, at its
timeout, with the last progress line (what it still waited for).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kafka_migration.hooks.plan import MigrationPlanHook, load_plan_or_fail
from kafka_migration.params import seconds, whole
from kafka_migration.stages import skip_unless_selected
from kafka_migration.triggers.readiness import ReadinessTrigger
from mirror_engine.plan import FROM_PLAN


class ReadinessSensor(BaseSensorOperator):
    """Base: a plan, the stage the sensor belongs to, and the check it waits on.

    :param plan_path: the migration plan file.
    :param wait_timeout_s: the longest the wait may take, in seconds.
    :param poll_interval_s: seconds between two polls of the check.
    """

    template_fields: tuple[str, ...] = ("plan_path", "wait_timeout_s")
    check = ""
    stage = ""
    timeout_hint = ""

    def __init__(self, *, plan_path: str, wait_timeout_s: float | str = 1800, poll_interval_s: float = 2.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_path, self.wait_timeout_s, self.poll_interval_s = plan_path, wait_timeout_s, poll_interval_s

    def arguments(self) -> dict[str, Any]:
        """The check's own arguments, from the rendered template fields."""
        return {}

    def skip_reason(self, hook: MigrationPlanHook) -> str:
        """Why this wait has nothing to wait for in this plan ("" when it has)."""
        return ""

    def waits_for(self, hook: MigrationPlanHook) -> str:
        """What the wait waits for, for the first line of its log."""
        return self.check

    def _check_once(self, hook: MigrationPlanHook) -> Any:
        from mirror_engine.cutover import build_check

        check = build_check(self.check, hook.plan, *hook.client_configs(), self.arguments())
        try:
            return check.check()
        finally:
            check.close()

    def execute(self, context: Any) -> Any:
        skip_unless_selected(self.stage, context)
        hook = load_plan_or_fail(self.plan_path)
        reason = self.skip_reason(hook)
        if reason:
            raise AirflowSkipException(reason)
        timeout = float(self.wait_timeout_s)
        if context["ti"].try_number > 1:
            # A retry: Airflow 3.3 can fail a deferred task whose trigger fired within seconds, on the stale
            # success its deferring process reported (apache/airflow#72716). Look once before deferring again.
            readiness = self._check_once(hook)
            if readiness.failed:
                raise AirflowFailException(readiness.failed)
            if readiness.done:
                self.log.info("%s", readiness.progress)
                return readiness.detail
        self.log.info("waiting up to %.0f s for %s; progress follows in this log while the task is deferred",
                      timeout, self.waits_for(hook))
        self.defer(trigger=ReadinessTrigger(self.plan_path, self.check, self.arguments(), time.time() + timeout,
                                            self.poll_interval_s),
                   method_name="execute_complete", timeout=timedelta(seconds=timeout + 120))

    def execute_complete(self, context: Any, event: dict[str, Any]) -> dict[str, Any]:
        if event["status"] == "failed":
            raise AirflowFailException(event["reason"])
        if event["status"] != "ok":
            raise AirflowFailException(f"still waiting after {float(self.wait_timeout_s):.0f} s: {event['progress']}"
                                       + (f" ({self.timeout_hint})" if self.timeout_hint else ""))
        self.log.info("%s", event["progress"])
        return event.get("detail") or {}


class ClustersAnswerSensor(ReadinessSensor):
    """Both clusters answer, and they are two different clusters."""

    check, stage = "clusters_answer", "preflight"
    timeout_hint = "check the clusters' connections: bootstrap servers, security protocol, credentials"


class RegistriesAnswerSensor(ReadinessSensor):
    """Both schema registries of the plan answer; while one does not, the log says which and why."""

    check, stage = "registries_answer", "prepare"
    timeout_hint = "check the plan's schemas.source and schemas.target: url, credentials"


class SchemasOnTargetSensor(ReadinessSensor):
    """The target registry holds every version of the subjects of the plan's topics."""

    check, stage = "schemas_on_target", "prepare"
    timeout_hint = "see prepare.schemas's log: which subjects it moved"


class EngineCopyingSensor(ReadinessSensor):
    """A live engine of the flow copies every partition the flow copies (from the status topic)."""

    check, stage = "engine_copying", "replicate"
    timeout_hint = "see the engine's log; `mirror-engine status --plan ...` shows what each engine reports"


class BackfillDoneSensor(ReadinessSensor):
    """Every partition held for the Spark backfill reached its snapshot offset and was handed to the engine."""

    check, stage = "backfill_done", "backfill"

    def skip_reason(self, hook: MigrationPlanHook) -> str:
        return "" if hook.plan.backfill.topics else "the plan names no backfill topics"


class ReplicationLagSensor(ReadinessSensor):
    """The catch-up gate (`mirror_engine.cutover.catch_up`): the lag at most `max_lag` records or `max_lag_s` seconds
    behind the source, held for the plan's settle period while the engine keeps up (lag 0 at once); each omitted
    bound is the plan's. Fails at once when an engine reports a stopped partition."""

    template_fields = ("plan_path", "wait_timeout_s", "max_lag", "max_lag_s")
    check, stage = "lag_at_most", "catch_up"
    timeout_hint = "is an engine of the flow running (the replicate stage, or `mirror-engine worker`)?"

    def __init__(self, *, max_lag: int | str | None = None, max_lag_s: float | str | None = FROM_PLAN,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_lag, self.max_lag_s = max_lag, max_lag_s

    def arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {}
        if whole(self.max_lag) is not None:
            arguments["max_lag"] = whole(self.max_lag)
        if self.max_lag_s != FROM_PLAN:
            arguments["max_lag_s"] = seconds(self.max_lag_s)
        return arguments

    def waits_for(self, hook: MigrationPlanHook) -> str:
        from mirror_engine.cutover import CatchUpBounds

        arguments = self.arguments()
        bounds = CatchUpBounds.from_plan(hook.plan, arguments.get("max_lag"), arguments.get("max_lag_s", FROM_PLAN))
        return f"the catch-up gate: {bounds.describe()}"


class CheckpointsCurrentSensor(ReadinessSensor):
    """Checkpoint rounds until every group the plan selects is current on the target (groups still consuming
    on either cluster are named in the log, not waited for). Fails at once when a group the run switches can only
    fail to switch (`mirror_engine.cutover.outlook`), before anyone is asked to approve the switch; a group with
    nothing to switch is named as skipped."""

    check, stage = "checkpoints_current", "checkpoints"
    timeout_hint = "has the engine copied up to the groups' offsets?"
    _run_groups: list[str] | None = None

    def execute(self, context: Any) -> Any:
        params = context["params"]
        stages = params.get("stages")
        # The run's own groups (None: the plan's, read by the check), none when the run switches no group.
        self._run_groups = [] if stages is not None and "switch_groups" not in stages else params.get("groups")
        return super().execute(context)

    def arguments(self) -> dict[str, Any]:
        return {} if self._run_groups is None else {"groups": list(self._run_groups)}


class TopicReadySensor(ReadinessSensor):
    """One topic: idle on the source for `idle_s` and copied to its end."""

    template_fields = ("plan_path", "wait_timeout_s", "topic", "idle_s")
    check, stage = "topic_ready_to_switch", "switch_producers"
    timeout_hint = "stop the topic's producers on the source"

    def __init__(self, *, topic: str, idle_s: float | str = 30, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.topic, self.idle_s = topic, idle_s

    def arguments(self) -> dict[str, Any]:
        return {"topic": self.topic, "idle_s": float(self.idle_s)}
