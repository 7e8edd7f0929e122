"""The actions that make a target match its source for a plan: computed (pure), rendered for a dry-run or a log.

`compute_actions` compares what the source has (through the plan's filters, policy, config filter and principal
map) with what the target has, so a second apply after a successful one finds nothing to do. Problems that forbid
applying (a target topic already holding data that the plan did not say to reuse, a factor above the target's
broker count) are listed, not guessed around, and nothing is applied while any remain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mirror_engine.kafka import (
    Acl,
    ClusterState,
    ConfigFilter,
    TopicState,
    desired_target_acls,
    metric_name,
    topic_name_problem,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare.source_access import SourceAccess


@dataclass(frozen=True)
class Action:
    """One change to the target. `details` is JSON-able."""

    kind: str  # create_topic | add_partitions | alter_configs | create_acl
    resource: str  # the target topic, or the ACL in words
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "resource": self.resource, "details": self.details}

    def summary(self) -> str:
        d = self.details
        if self.kind == "create_topic":
            configs = ", ".join(f"{k}={v}" for k, v in sorted(d["configs"].items())) or "broker defaults"
            factor = "broker default" if d["replication_factor"] == -1 else d["replication_factor"]
            return f"{d['partitions']} partitions, RF {factor}, configs: {configs}"
        if self.kind == "add_partitions":
            return f"{d['from']} -> {d['to']} partitions"
        if self.kind == "alter_configs":
            sets = [f"set {k}={v}" for k, v in sorted(d["set"].items())]
            return ", ".join(sets + [f"delete {k}" for k in d["delete"]])
        acl = Acl(**d["acl"])
        return f"{acl.permission} {acl.principal} {acl.operation} from {acl.host}"


@dataclass
class PreparePlan:
    actions: list[Action]
    problems: list[str]
    source_topics: list[str]  # source topics the plan replicates, in order
    warnings: list[str] = field(default_factory=list)  # syncs skipped for want of a right on the source
    source_access: SourceAccess | None = None  # which syncs the source principal's permissions allow
    config_notes: list[str] = field(default_factory=list)  # source configs translated or dropped, once per name
    # The flow's internal topics missing on the target (name -> configs, one partition each): a full apply creates
    # them in the same request as the target topics, so the engine finds them served when it starts.
    internal_topics: dict[str, dict[str, str]] = field(default_factory=dict)
    # The target as read for this plan (its topics, their limits, the ends of the partitions looked at): the engine
    # starts from it instead of asking again.
    target: ClusterState | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "actions": [a.to_dict() for a in self.actions],
            "config_notes": self.config_notes,
            "internal_topics": sorted(self.internal_topics),
            "problems": self.problems,
            "source_topics": self.source_topics,
            "warnings": self.warnings,
            "source_access": self.source_access.to_dict() if self.source_access else None,
        }


@dataclass
class ApplyResult:
    applied: list[Action] = field(default_factory=list)
    failed: list[tuple[Action, str]] = field(default_factory=list)
    not_attempted: list[Action] = field(default_factory=list)
    internal_topics: list[str] = field(default_factory=list)  # the flow's internal topics created (or validated)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.not_attempted

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "applied": [a.to_dict() for a in self.applied],
            "internal_topics": self.internal_topics,
            "failed": [{**a.to_dict(), "error": e} for a, e in self.failed],
            "not_attempted": [a.to_dict() for a in self.not_attempted],
        }


def _replication_factor(plan: MigrationPlan, source: TopicState, target_brokers: int) -> int:
    planned = plan.sync.replication_factor
    if planned == "source":
        return min(source.replication_factor, target_brokers)
    return planned


def compute_actions(
    plan: MigrationPlan,
    source: ClusterState,
    target: ClusterState,
    managed_topics: frozenset[str] = frozenset(),
) -> PreparePlan:
    """The changes that make the target match the source for this plan.

    `managed_topics` are target topics this migration already writes (it has offset-syncs for
    them); data in those is the migration's own, not a reason to stop.
    """
    policy = plan.policy()
    config_filter = ConfigFilter(plan.config_excludes())
    actions: list[Action] = []
    problems: list[str] = []
    planned = plan.sync.replication_factor
    if isinstance(planned, int) and planned > target.broker_count:
        problems.append(f"sync.replication_factor: {planned} is more than the target's {target.broker_count} "
                        "broker(s); lower it or use 'source' (capped at the broker count)")

    remote_names = {name: policy.format_remote_topic(plan.source.alias, name) for name in sorted(source.topics)}
    problems += _target_name_problems(remote_names, target)

    for name, topic in sorted(source.topics.items()):
        remote = remote_names[name]
        existing = target.topics.get(remote)
        if existing is None:
            actions.append(Action("create_topic", remote, {
                "source_topic": name,
                "partitions": topic.partitions,
                "replication_factor": _replication_factor(plan, topic, target.broker_count),
                "configs": dict(topic.configs) if plan.sync.configs else {},
            }))
            continue
        # A heartbeats replica (`src.heartbeats`) is every flow's from that source alias, as MM2 writes it: records
        # in it are other flows' beats, never a reason to stop this one.
        if remote in target.topics_with_data and remote not in managed_topics and not plan.sync.reuse_existing_topics \
                and not policy.is_heartbeats_topic(remote):
            problems.append(
                f"topic '{remote}': already exists on the target and holds records that this migration did not "
                "copy; empty or delete it, or set sync.reuse_existing_topics: true to copy into it anyway"
            )
        if existing.partitions > topic.partitions and not plan.sync.allow_more_target_partitions:
            problems.append(
                f"topic '{remote}': has {existing.partitions} partitions on the target, more than the source's "
                f"{topic.partitions}, which breaks key-to-partition placement (producers moved to the target "
                "would send a key to another partition than the one holding its history); recreate it with "
                f"{topic.partitions} partitions, or set sync.allow_more_target_partitions: true if no consumer "
                "relies on keys"
            )
        if plan.sync.partitions and existing.partitions < topic.partitions:
            actions.append(Action("add_partitions", remote, {
                "source_topic": name, "from": existing.partitions, "to": topic.partitions,
            }))
        if plan.sync.configs and topic.configs_read and existing.configs_read:  # either unread: leave them as they are
            to_set = {k: v for k, v in topic.configs.items() if existing.configs.get(k) != v}
            to_delete = sorted(
                k for k in existing.configs if k not in topic.configs and not config_filter.excluded(k)
            )
            if to_set or to_delete:
                actions.append(Action("alter_configs", remote, {
                    "source_topic": name, "set": to_set, "delete": to_delete,
                }))

    if plan.sync.acls and source.acls:
        if target.acls is None:
            problems.append("sync.acls: the source has ACLs but the target has no authorizer; "
                            "enable one on the target or set sync.acls: false")
        else:
            for acl in sorted(desired_target_acls(source.acls, plan) - target.acls):
                resource = f"{acl.resource_type.lower()} {acl.pattern.lower()} '{acl.name}'"
                actions.append(Action("create_acl", resource, {"acl": acl.to_dict()}))

    return PreparePlan(actions, problems, sorted(source.topics))


def _target_name_problems(remote_names: dict[str, str], target: ClusterState) -> list[str]:
    """Every target name checked before anything is applied: one the broker would refuse, or one colliding
    with another, would fail its create after the others succeeded and leave the target half-prepared."""
    problems = []
    for name, remote in remote_names.items():
        reason = topic_name_problem(remote)
        if reason:
            problems.append(f"topic '{name}': its target name '{remote}' {reason}")
    by_metric_name: dict[str, set[str]] = {}
    for remote in (*remote_names.values(), *target.all_topic_names):
        by_metric_name.setdefault(metric_name(remote), set()).add(remote)
    planned = set(remote_names.values())
    for names in by_metric_name.values():
        if len(names) > 1 and names & planned:
            listed = " and ".join(f"'{n}'" for n in sorted(names))
            problems.append(f"topics {listed}: these target names collide (Kafka refuses a topic whose name differs "
                            "from another's only by '.' against '_'); exclude one of them from the plan")
    return problems


def render_actions(actions: list[Action]) -> str:
    """A readable table of actions for a dry-run or a task log."""
    if not actions:
        return "nothing to do: the target already matches the source for this plan"
    rows = [(a.kind, a.resource, a.summary()) for a in actions]
    widths = [max(len(r[i]) for r in [("action", "resource", "details"), *rows]) for i in range(2)]
    lines = [f"{'action':<{widths[0]}}  {'resource':<{widths[1]}}  details"]
    lines.append(f"{'-' * widths[0]}  {'-' * widths[1]}  {'-' * 7}")
    lines += [f"{k:<{widths[0]}}  {r:<{widths[1]}}  {d}" for k, r, d in rows]
    acls = [Acl(**a.details["acl"]) for a in actions if a.kind == "create_acl"]
    if acls:
        # Each ACL in full, one per line, so whoever approves a dry-run reads exactly the rights it grants.
        lines.append(f"ACLs to create on the target ({len(acls)}), exactly:")
        lines += [f"  {acl.describe()}" for acl in acls]
    return "\n".join(lines)


def _described(action: Action) -> str:
    return Acl(**action.details["acl"]).describe() if action.kind == "create_acl" else action.resource


def render_result(result: ApplyResult) -> str:
    lines = [f"applied {len(result.applied)}, failed {len(result.failed)}, not attempted {len(result.not_attempted)}"]
    if result.internal_topics:
        lines.append(f"  and the flow's internal topics: {', '.join(result.internal_topics)}")
    lines += [f"  FAILED {a.kind} {_described(a)}: {error}" for a, error in result.failed]
    lines += [f"  not attempted {a.kind} {_described(a)}" for a in result.not_attempted]
    return "\n".join(lines)


def to_json(value: PreparePlan | ApplyResult) -> str:
    return json.dumps(value.to_dict(), indent=2, sort_keys=True)

