"""Switching a batch of consumer groups in one pass, with one set of clients: what a migration DAG maps over, a
task per batch, so that a group costs its requests and its proof, not a task (and a process) of its own.

Each group is still switched, read back, proven and reported on its own (`GroupSwitcher`); a batch only shares
the flow's mapping, the stored reports and the clients between its groups. A pass switches every group that can
switch now and says what the others wait for (`GroupsReadyToSwitch` waits for the next of them); run again, a
pass repeats nothing for a group already switched (`switched`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaException

from mirror_engine.cutover.group_switch import GroupSwitcher, GroupSwitchReport
from mirror_engine.cutover.outlook import BLOCKED, SKIP
from mirror_engine.cutover.readiness_base import Readiness
from mirror_engine.cutover.waiting import NothingToSwitch, SwitchError
from mirror_engine.kafka import FENCE_OPTION
from mirror_engine.observe import GROUP_OUTCOME, FlowWatch, ReportStore
from mirror_engine.plan import MigrationPlan

log = logging.getLogger(__name__)


@dataclass
class BatchPass:
    """What one pass over a batch did, per group."""

    switched: list[GroupSwitchReport] = field(default_factory=list)  # now, or before (`repeated`)
    waiting: dict[str, str] = field(default_factory=dict)  # group -> what it still waits for
    refused: dict[str, str] = field(default_factory=dict)  # group -> why it cannot switch (`outlook.BLOCKED`)
    skipped: dict[str, str] = field(default_factory=dict)  # group -> why there is nothing to switch (`outlook.SKIP`)


class GroupBatch:
    """Switches the groups of a batch with one flow watch and one report store; close it (or use `with`)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 fence_option: str = FENCE_OPTION, switcher: type[GroupSwitcher] = GroupSwitcher) -> None:
        """`switcher`: the kind of switch (the way back's lifts the forward fences: `mirror_engine.failback`)."""
        self.watch = FlowWatch(plan, source_config, target_config)
        self.reports = ReportStore(plan, target_config)
        self.switcher = switcher(plan, source_config, target_config, fence_option, watch=self.watch,
                                 reports=self.reports)

    def __enter__(self) -> GroupBatch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def switch_ready(self, groups: list[str], *, fence: bool = False,
                     on_switched: Callable[[GroupSwitchReport], None] | None = None) -> BatchPass:
        """One pass: each of `groups` (fenced first, with `fence`) switched if it can be now, else left waiting or
        refused; `on_switched` hears of each report as soon as it is stored."""
        outcome = BatchPass()
        for group in groups:
            try:
                answer = self.switcher.switch_if_ready(group, fence=fence)
            except NothingToSwitch as error:
                outcome.skipped[group] = str(error)
                self.record(group, SKIP, str(error))
                continue
            except SwitchError as error:
                outcome.refused[group] = str(error)
                self.record(group, BLOCKED, str(error))
                continue
            except (KafkaException, TimeoutError) as error:
                # A cluster that answered late: the group is looked at again with the others still waiting (a
                # switch cut short repeats at most the same commit, `switched`), not left to fail the batch.
                log.warning("group %s: %s; it is looked at again", group, error)
                outcome.waiting[group] = f"group {group}: looked at again after an error: {error}"
                continue
            if isinstance(answer, Readiness):
                outcome.waiting[group] = answer.progress
                continue
            outcome.switched.append(answer)
            if on_switched is not None:
                on_switched(answer)
        return outcome

    def record(self, group: str, verdict: str, reason: str) -> None:
        """Store why `group` was not switched (`verdict` SKIP or BLOCKED, or "late": still waiting at the run's
        timeout), where the cutover page shows it beside the switch reports; a later switch's report supersedes it."""
        self.reports.put(GROUP_OUTCOME, group, {"verdict": verdict, "reason": reason})

    def close(self) -> None:
        self.reports.close()
        self.watch.close()
