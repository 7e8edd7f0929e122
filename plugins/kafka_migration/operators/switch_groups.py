"""The switch of a batch of consumer groups: one mapped task per batch (`stages.group_batches`), not three tasks
per group, so a migration of 1,000 groups costs a few dozen task processes instead of 3,000.

Each group is still fenced (with the run's `fence`), waited for, switched, read back, proven and reported on its
own, by `mirror_engine.cutover.GroupBatch`; its report is stored per group, where the cockpit's cutover page
reads it. A group that cannot switch yet is waited for in the triggerer, where it holds no worker slot.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowFailException

from kafka_migration.cockpit.links import SwitchReportLink
from kafka_migration.hooks.plan import MigrationPlanHook
from kafka_migration.operators.migration import (
    RUN_FENCE,
    SWITCHED_GROUPS,
    MigrationOperator,
    group_asset,
)
from kafka_migration.params import flag, seconds
from kafka_migration.triggers.readiness import ReadinessTrigger

if TYPE_CHECKING:
    from mirror_engine.cutover import GroupBatch

# The task's name shown for a batch: its group when alone, else its first and last group and their count.
BATCH_LABEL = ("{{ task.groups[0] }}{% if task.groups | length > 1 %} .. {{ task.groups[-1] }} "
               "({{ task.groups | length }} groups){% endif %}")


class SwitchGroupsOperator(MigrationOperator):
    """Switch a batch of consumer groups to the target, each as soon as it can be: fenced on the source first (with
    `fence`), then switched once stopped there and copied past, verified, its report stored. While some still
    wait, the task defers to the triggerer (`groups_ready_to_switch`: done when one more of them can switch) and
    switches them when it resumes; run again (a retry, a cleared task), it repeats nothing for a group already
    switched. Each switched group's Asset event goes through the `SWITCHED_GROUPS` alias (give it as the
    task's outlet) when the batch succeeds.

    A group that cannot be switched (refused, switched but not verified, or still waiting after `wait_timeout_s`)
    fails the task once every other group of the batch is switched, with each such group's reason, stored where the
    cutover page shows it. A group with nothing to switch (no consumers and nothing committed on the source) is
    skipped, with its reason, and fails nothing.

    :param groups: the batch's consumer groups.
    :param fence: whether the run fences its groups on the source (templated).
    :param wait_timeout_s: the longest the batch waits for its groups, in seconds (None: the plan's setting).
    :param poll_interval_s: seconds between two polls of the waiting groups in the triggerer.
    """

    stage = "switch_groups"
    template_fields = ("plan_path", "groups", "fence", "wait_timeout_s")
    operator_extra_links = (SwitchReportLink(),)

    def __init__(self, *, groups: list[str], fence: bool | str = False, wait_timeout_s: float | str | None = None,
                 poll_interval_s: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.groups, self.fence, self.wait_timeout_s = groups, fence, wait_timeout_s
        self.poll_interval_s = poll_interval_s

    def run(self, context: Any) -> dict:
        hook = self.hook()
        timeout = seconds(self.wait_timeout_s) or hook.plan.cutover.wait_timeout_s
        return self._switch(context, list(self.groups), time.time() + timeout,
                            {"switched": {}, "refused": {}, "skipped": {}})

    def resume(self, context: Any, event: dict[str, Any], deadline: float, tally: dict[str, Any],
               waiting: list[str]) -> dict:
        """Back from the triggerer: switch the groups that can switch now, wait again for the others."""
        if event["status"] == "failed":
            raise AirflowFailException(event["reason"])
        if event["status"] == "timeout":
            hook = self.hook()
            with _batch(hook) as batch:
                for group in waiting:
                    batch.record(group, "late", f"still waiting after the run's wait_timeout_s: {event['progress']}")
            return self._finish(context, tally, {group: "" for group in waiting}, event["progress"])
        return self._switch(context, waiting, deadline, tally)

    def _switch(self, context: Any, groups: list[str], deadline: float, tally: dict[str, Any]) -> dict:
        from mirror_engine.cutover import GroupSwitchReport

        hook = self.hook()
        fence = flag(self.fence)

        def switched(report: GroupSwitchReport) -> None:
            self.log.info("%s", report.render())
            if report.ok:
                tally["switched"][report.group] = {"partitions": len(report.partitions), "repeated": report.repeated}
            else:
                tally["refused"][report.group] = "switched but not verified: see its report"

        with _batch(hook) as batch:
            outcome = batch.switch_ready(groups, fence=fence, on_switched=switched)
            if outcome.waiting and time.time() >= deadline:
                for group, line in outcome.waiting.items():
                    batch.record(group, "late", f"still waiting after the run's wait_timeout_s: {line}")
        tally["refused"].update(outcome.refused)
        tally.setdefault("skipped", {}).update(outcome.skipped)
        for group, reason in outcome.refused.items():
            self.log.error("group %s not switched: %s", group, reason)
        for group, reason in outcome.skipped.items():
            self.log.warning("group %s skipped: %s", group, reason)
        if outcome.waiting and time.time() < deadline:
            waiting = sorted(outcome.waiting)
            self.log.info("%d group(s) of %d switched; waiting up to %.0f s for %d more, in the triggerer: %s",
                          len(tally["switched"]), len(self.groups), deadline - time.time(), len(waiting),
                          "; ".join(outcome.waiting[g] for g in waiting[:5]))
            self.defer(trigger=ReadinessTrigger(self.plan_path, "groups_ready_to_switch",
                                                {"groups": waiting, "fence": fence}, deadline, self.poll_interval_s),
                       method_name="resume", kwargs={"deadline": deadline, "tally": tally, "waiting": waiting},
                       timeout=timedelta(seconds=max(0.0, deadline - time.time()) + 120))
        return self._finish(context, tally, outcome.waiting)

    def _finish(self, context: Any, tally: dict[str, Any], waiting: dict[str, str], progress: str = "") -> dict:
        """Every group's outcome: the Asset events of the switched ones; a failure naming each one left behind
        (`waiting`: group -> what it still waited for at the timeout, or "" with the wait's `progress` line)."""
        hook = self.hook()
        late = "still waiting after the run's wait_timeout_s"
        left = {**tally["refused"], **{group: f"{late}: {line}" if line else late for group, line in waiting.items()}}
        if left:
            raise AirflowFailException(f"{len(left)} group(s) of {len(self.groups)} not switched "
                                       f"({len(tally['switched'])} switched, each with its report):\n  "
                                       + "\n  ".join(f"{group}: {reason}" for group, reason in sorted(left.items()))
                                       + (f"\nthe last poll: {progress}" if progress else ""))
        for group, done in tally["switched"].items():
            context["outlet_events"][SWITCHED_GROUPS].add(group_asset(hook.plan.name, group),
                                                          extra={"partitions": done["partitions"]})
        repeated = sorted(group for group, done in tally["switched"].items() if done["repeated"])
        skipped = tally.get("skipped") or {}
        return {"switched": len(tally["switched"]), "repeated": len(repeated),
                "partitions": sum(done["partitions"] for done in tally["switched"].values()),
                **({"skipped": len(skipped)} if skipped else {})}


def _batch(hook: MigrationPlanHook) -> GroupBatch:
    """The run's batch of switches: along the way back, switches that lift the forward cutover's fences."""
    from mirror_engine.cutover import GroupBatch, GroupSwitcher
    from mirror_engine.failback import GroupSwitcherBack

    switcher = GroupSwitcher if hook.failback is None else GroupSwitcherBack
    return GroupBatch(hook.plan, *hook.client_configs(), fence_option=RUN_FENCE, switcher=switcher)
