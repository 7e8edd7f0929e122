"""Approval before the switch: Airflow's human-in-the-loop `ApprovalOperator`, asked only when the run (or the
plan's default in the form) asks for it, so demos and schedules still run unattended.

The request shows what a person decides on (`mirror_engine.observe.switch_summary`: lag and its trend, the
newest validation, checkpoint freshness, the groups and topics to switch). Approving lets the switch run;
rejecting skips every task after it (the cutover and the finish stage), so the engine keeps copying. The
decision, who made it and when is stored with the plan's reports ("switch-approval"), where the cutover page
and the run's tab show it.
"""

from __future__ import annotations

import time
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk.exceptions import AirflowFailException

from kafka_migration.hooks.plan import load_plan_or_fail
from kafka_migration.params import flag
from kafka_migration.stages import run_groups, skip_unless_selected


class SwitchApprovalOperator(ApprovalOperator):
    """Waits for a person's approval of the switch when `required` renders true; passes at once otherwise.

    :param plan_path: the migration plan file.
    :param required: whether this run asks for an approval (templated, e.g. "{{ params.approve_switch }}").
    """

    template_fields = (*ApprovalOperator.template_fields, "plan_path", "required")

    def __init__(self, *, plan_path: str, required: bool | str = False, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "Switch the migration's consumer groups and producers?")
        super().__init__(ignore_downstream_trigger_rules=True, **kwargs)
        self.plan_path, self.required = plan_path, required

    def execute(self, context: Any) -> Any:
        skip_unless_selected("switch_groups", context)
        if not flag(self.required):
            self.log.info("this run asks for no approval before the switch (approve_switch is off)")
            return {"approval": "not asked"}
        self.body = self._summary(context)
        self.log.info("asking for an approval of the switch:\n%s", self.body)
        return super().execute(context)

    def _summary(self, context: Any) -> str:
        """The request's text; a run with a group that can only fail to switch fails here, with each such group
        and why, instead of offering an approval of a switch that cannot succeed."""
        from mirror_engine.cutover import BLOCKED, outlook_lines, read_switch_outlook
        from mirror_engine.observe import FlowView, switch_summary

        hook = load_plan_or_fail(self.plan_path)
        params = context["params"]
        groups = run_groups(params, hook.plan)
        outlooks = read_switch_outlook(hook.plan, *hook.client_configs(), groups)
        blocked = [o for o in outlooks if o.verdict == BLOCKED]
        if blocked:
            raise AirflowFailException("no approval asked: the switch would fail for "
                                       + "; ".join(o.sentence() for o in blocked))
        view = FlowView(hook.plan, *hook.client_configs())
        try:
            view.snapshot()
            time.sleep(3)  # a second sample a few seconds later: the rates and the lag's trend
            snapshot = view.snapshot(fresh=True)
            return switch_summary(snapshot, view.validations(), groups, list(params.get("producer_topics") or []),
                                  outlook_lines(outlooks))
        finally:
            view.close()

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        # Recorded first: on a rejection the operator skips what follows by raising (Airflow 3's skip).
        if "error" not in event and list(event.get("chosen_options") or [])[:1] in ([self.APPROVE], [self.REJECT]):
            self._record(context, event)
        return super().execute_complete(context=context, event=event)

    def _record(self, context: Any, event: dict[str, Any]) -> None:
        from mirror_engine.observe import ReportStore

        hook = load_plan_or_fail(self.plan_path)
        user = event.get("responded_by_user") or {}
        at = event.get("responded_at")
        decision = "approved" if event["chosen_options"][0] == self.APPROVE else "rejected"
        store = ReportStore(hook.plan, hook.client_configs()[1])
        try:
            store.put("switch-approval", context["run_id"], {
                "decision": decision, "by": user.get("name") or user.get("id") or "unknown",
                "at_ms": int(at.timestamp() * 1000) if hasattr(at, "timestamp") else int(time.time() * 1000),
                "run_id": context["run_id"], "summary": self.body or ""})
        finally:
            store.close()
        self.log.info("the switch was %s by %s", decision, user.get("name") or user.get("id"))
