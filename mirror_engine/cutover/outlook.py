"""What a switch will do with each group, said before anyone approves it: switch it, skip it (nothing to switch), or
nothing but fail (blocked), each with why.

`group_verdict` is the one rule: the switch of one group applies it when the group stopped on the source
(`GroupReadyToSwitch`), and `switch_outlook` applies it to a run's groups at once, before the switch (the
checkpoints stage fails on a blocked group; the approval shows every verdict). A group with no consumers and
nothing committed on the source has no position to carry over: its consumers start on the target where their
`auto.offset.reset` puts them, as they would have on the source, so it is skipped, not failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import AdminClient

from mirror_engine.cutover.switched import group_already_switched
from mirror_engine.kafka import (
    GroupError,
    GroupState,
    admin_client,
    committed_offsets_of,
    describe_groups,
    is_engine_group,
)
from mirror_engine.plan import MigrationPlan

SWITCH, SKIP, BLOCKED = "switch", "skip", "blocked"
NOTHING_TO_SWITCH = ("nothing committed on the source and no consumers there: nothing to switch (its consumers "
                     "start on the target where their auto.offset.reset puts them, as on the source)")


@dataclass(frozen=True)
class GroupOutlook:
    """One group's verdict (SWITCH, SKIP or BLOCKED) and why."""

    group: str
    verdict: str
    reason: str

    def sentence(self) -> str:
        return f"group {self.group}: {self.reason}"


def group_verdict(group: str, *, committed: dict[tuple[str, int], int], not_replicated: list[str],
                  active_on_source: bool = False, active_on_target: bool = False,
                  switched_before: bool = False) -> GroupOutlook:
    """The verdict on `group` from what the clusters say of it: its committed source offsets, the topics among
    them the plan does not copy, and whether it has members on either cluster (`switched_before`: its finished
    switch is stored and it has not come back to the source)."""
    if is_engine_group(group):
        return GroupOutlook(group, BLOCKED, "a replication engine's own group: it is never switched")
    if switched_before:
        return GroupOutlook(group, SWITCH, "already switched to the target (its stored report proves it)")
    if active_on_target:
        return GroupOutlook(group, BLOCKED, "already has active members on the target: stop them there, or leave "
                                            "the group out of the run")
    if not_replicated:
        return GroupOutlook(group, BLOCKED, "reads topics this plan does not copy: " + ", ".join(not_replicated))
    if not committed:
        if active_on_source:
            return GroupOutlook(group, SWITCH, "consuming on the source, nothing committed yet: switches once its "
                                               "consumers stop")
        return GroupOutlook(group, SKIP, NOTHING_TO_SWITCH)
    partitions = f"offsets on {len(committed)} partition(s)"
    if active_on_source:
        return GroupOutlook(group, SWITCH, f"consuming on the source ({partitions}): switches once its consumers "
                                           "stop and the copy is past its offsets")
    return GroupOutlook(group, SWITCH, f"stopped on the source ({partitions}): switches once the copy is past them")


def _active(state: GroupState | GroupError) -> bool:
    if isinstance(state, GroupError):  # a group that cannot be described: its verdict cannot be given yet
        raise state
    return state.active


def switch_outlook(plan: MigrationPlan, source_admin: AdminClient, target_admin: AdminClient,
                   target_config: dict[str, str], groups: list[str]) -> list[GroupOutlook]:
    """Each of `groups`' verdict now, in their order; read in one request per coordinator and question (the groups
    described on both clusters, then the source's committed offsets). A group active on the target is blocked
    unless it was switched before (read then, for that group alone). GroupError when a group cannot be read."""
    on_source, on_target = describe_groups(source_admin, groups), describe_groups(target_admin, groups)
    offsets = committed_offsets_of(source_admin, [g for g in groups if not isinstance(on_source[g], GroupError)])
    outlooks = []
    for group in groups:
        active_on_source, active_on_target = _active(on_source[group]), _active(on_target[group])
        committed = offsets[group]
        if isinstance(committed, GroupError):
            raise committed
        switched_before = active_on_target and not active_on_source and group_already_switched(
            plan, target_config, group, committed) is not None
        not_replicated = sorted({topic for topic, _ in committed if not plan.replicates_topic(topic)})
        outlooks.append(group_verdict(group, committed=committed, not_replicated=not_replicated,
                                      active_on_source=active_on_source, active_on_target=active_on_target,
                                      switched_before=switched_before))
    return outlooks


def read_switch_outlook(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                        groups: list[str]) -> list[GroupOutlook]:
    """`switch_outlook` with clients of its own, closed after."""
    if not groups:
        return []
    return switch_outlook(plan, admin_client(source_config), admin_client(target_config), target_config, groups)


def outlook_lines(outlooks: list[GroupOutlook], shown: int = 10) -> list[str]:
    """One line per verdict (blocked, skipped, then switched), each naming up to `shown` groups with their reasons."""
    lines = []
    for verdict, title in ((BLOCKED, "blocked, the switch would fail"), (SKIP, "skipped"), (SWITCH, "to switch")):
        of = [o for o in outlooks if o.verdict == verdict]
        if not of:
            continue
        named = "; ".join(f"{o.group} ({o.reason})" for o in of[:shown])
        lines.append(f"{len(of)} group(s) {title}: {named}" + (f" and {len(of) - shown} more" if len(of) > shown
                                                              else ""))
    return lines
