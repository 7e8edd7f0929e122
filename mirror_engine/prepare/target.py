"""Target preparation: read both clusters, compute the actions, print them, then apply them.

`compute_actions` is pure: it compares what the source has (through the plan's filters, policy,
config filter and principal map) with what the target has, so a second apply after a successful
one finds nothing to do. Problems that forbid applying (a target topic already holding data that
the plan did not say to reuse, a factor above the target's broker count) are listed, not guessed
around, and nothing is applied while any remain.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from mirror_engine.kafka import (
    Acl,
    ClusterInfo,
    ClusterState,
    ConfigFilter,
    TopicState,
    acl_sync_skipped,
    admin_client,
    config_sync_skipped,
    describe_plan_clusters,
    describe_topic_configs,
    desired_target_acls,
    fence_problem,
    list_topic_metadata,
    metric_name,
    plan_groups,
    read_acls,
    syncable_configs,
    too_old,
    topic_name_problem,
    topic_overrides,
    topics_holding_data,
    undescribable_groups,
    wait_until_served,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare.source_access import (
    ACL_SYNC,
    CONFIG_SYNC,
    DATA_COPY,
    GROUP_OFFSET_SYNC,
    Denial,
    SourceAccess,
    topic_denial,
    unreadable_topics,
)
from mirror_engine.prepare.target_configs import TargetConfigs, adapt_source_configs, unsynced_log_append_time

log = logging.getLogger(__name__)


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "actions": [a.to_dict() for a in self.actions],
            "config_notes": self.config_notes,
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

    @property
    def ok(self) -> bool:
        return not self.failed and not self.not_attempted

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "applied": [a.to_dict() for a in self.applied],
            "failed": [{**a.to_dict(), "error": e} for a, e in self.failed],
            "not_attempted": [a.to_dict() for a in self.not_attempted],
        }


def read_source_state(admin: AdminClient, plan: MigrationPlan, denials: list[Denial],
                      notes: list[str] | None = None) -> ClusterState:
    """The source's replicated topics, their configs and its ACLs, as far as the principal may read them: what
    it may not read is left out and added to `denials` (configs per topic, ACLs as a whole); what becomes of
    LogAppendTime topics' timestamps, and syncs a broker before 0.11 cannot answer, are said in `notes`."""
    broker_count, metadata = list_topic_metadata(admin)
    names = sorted(name for name in metadata if plan.replicates_topic(name))
    config_filter = ConfigFilter(plan.config_excludes())
    entries: dict[str, list] = {}
    unread: list[str] = []
    if plan.sync.configs:
        try:
            entries = describe_topic_configs(admin, names, denied=unread)
        except KafkaException as error:
            if not too_old(error):
                raise
            unread = list(names)  # created with the target's defaults; existing ones keep theirs
            if notes is not None:
                notes.append(config_sync_skipped(error))
        else:
            denials += topic_denial(CONFIG_SYNC, "DESCRIBE_CONFIGS", unread)
        if notes is not None:
            notes += unsynced_log_append_time(entries, config_filter.excluded)
    topics = {
        name: TopicState(name, metadata[name][0], metadata[name][1],
                         syncable_configs(entries.get(name, []), config_filter), metadata[name][2],
                         configs_read=name not in unread)
        for name in names
    }
    acls = None
    if plan.sync.acls:
        try:
            acls = read_acls(admin)
        except KafkaException as error:
            if too_old(error) and notes is not None:
                notes.append(acl_sync_skipped(error))
            elif error.args[0].code() != KafkaError.CLUSTER_AUTHORIZATION_FAILED:
                raise
            else:
                denials.append(Denial(ACL_SYNC, "DESCRIBE", "cluster"))
    return ClusterState(broker_count, topics, acls)


def read_target_state(
    admin: AdminClient, plan: MigrationPlan, target_topics: list[str], read_target_acls: bool = True
) -> ClusterState:
    """The target as far as the plan's topics go: the remote topics that exist, their data and configs."""
    broker_count, metadata = list_topic_metadata(admin)
    existing = sorted(name for name in target_topics if name in metadata)
    entries = describe_topic_configs(admin, existing)
    topics = {
        name: TopicState(name, metadata[name][0], metadata[name][1], topic_overrides(entries[name]))
        for name in existing
    }
    with_data = topics_holding_data(admin, {name: metadata[name][0] for name in existing})
    acls = read_acls(admin) if plan.sync.acls and read_target_acls else None
    return ClusterState(broker_count, topics, acls, with_data, frozenset(metadata))


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
        if remote in target.topics_with_data and remote not in managed_topics and not plan.sync.reuse_existing_topics:
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
        if plan.sync.configs and topic.configs_read:  # unread source configs: leave the target's as they are
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


def plan_preparation(
    plan: MigrationPlan,
    source_config: dict[str, str],
    target_config: dict[str, str],
    managed_topics: frozenset[str] = frozenset(),
    best_effort: bool = False,
    target_configs: TargetConfigs | None = None,
    clusters: tuple[ClusterInfo, ClusterInfo] | None = None,
) -> PreparePlan:
    """Read both clusters and compute the actions (changes nothing).

    What the source principal may not read is left out and said in `source_access` (see `source_access`): a
    sync it does not allow is a warning, or a problem under sync.require_source_permissions; a topic it may not
    READ is a problem. `best_effort` (the engine's refresh) checks only what the engine syncs itself (configs
    and ACLs), not the topics' READ nor the groups. Source configs the target refuses are translated or dropped
    (`target_configs`, which remembers the target's answers: pass the same one to ask once per process).
    `clusters`: both clusters as the caller just described them (`describe_plan_clusters`): not asked again.
    """
    if clusters is None:  # else the caller just described them (`describe_plan_clusters`)
        describe_plan_clusters(plan, source_config, target_config)
    source_admin = admin_client(source_config)
    denials: list[Denial] = []
    notes: list[str] = []
    source = read_source_state(source_admin, plan, denials, notes)
    asked = [DATA_COPY, *([CONFIG_SYNC] if plan.sync.configs else []), *([ACL_SYNC] if plan.sync.acls else [])]
    if not best_effort:
        asked.append(GROUP_OFFSET_SYNC)
        denials += topic_denial(DATA_COPY, "READ", unreadable_topics(source_admin, sorted(source.topics)))
        groups = undescribable_groups(source_admin, plan_groups(source_admin, plan))
        if groups:
            denials.append(Denial(GROUP_OFFSET_SYNC, "DESCRIBE", "group", tuple(groups)))
    policy = plan.policy()
    remote_names = [policy.format_remote_topic(plan.source.alias, name) for name in source.topics]
    target_admin = admin_client(target_config)
    if plan.sync.configs:
        source, adapted = adapt_source_configs(source, target_admin, target_configs or TargetConfigs())
        notes += adapted
    target = read_target_state(target_admin, plan, remote_names, read_target_acls=bool(source.acls))
    prepared = compute_actions(plan, source, target, managed_topics)
    prepared.config_notes = notes
    access = SourceAccess(tuple(asked), tuple(denials), plan.sync.require_source_permissions)
    prepared.source_access = access
    prepared.problems += access.problems()
    prepared.warnings = access.warnings()
    if plan.cutover.fence and not best_effort:
        fencing = fence_problem(source_admin, plan.source.alias, "the plan's groups", "cutover.fence: true")
        prepared.warnings += [f"cutover.fence: {fencing}"] if fencing else []
    return prepared


def apply_actions(
    target_config: dict[str, str], actions: list[Action], validate_only: bool = False, timeout_s: float = 30.0
) -> ApplyResult:
    """Apply actions in order (topics, partitions, configs, ACLs); report each one's outcome.

    With `validate_only`, the broker checks topic, partition and config changes without making
    them (ACL creation has no such mode and is only listed).
    """
    admin = admin_client(target_config)
    result = ApplyResult()
    by_kind: dict[str, list[Action]] = {}
    for action in actions:
        by_kind.setdefault(action.kind, []).append(action)

    def settle(action: Action, future: Any) -> None:
        try:
            future.result()
            result.applied.append(action)
        except KafkaException as error:
            result.failed.append((action, str(error.args[0].str() if error.args else error)))

    creates = by_kind.get("create_topic", [])
    if creates:
        new_topics = [
            NewTopic(a.resource, a.details["partitions"], a.details["replication_factor"], config=a.details["configs"])
            for a in creates
        ]
        futures = admin.create_topics(new_topics, request_timeout=timeout_s, validate_only=validate_only)
        for action in creates:
            settle(action, futures[action.resource])
    grows = by_kind.get("add_partitions", [])
    if grows:
        futures = admin.create_partitions(
            [NewPartitions(a.resource, a.details["to"]) for a in grows],
            request_timeout=timeout_s, validate_only=validate_only,
        )
        for action in grows:
            settle(action, futures[action.resource])
    for action in by_kind.get("alter_configs", []):
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in action.details["set"].items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                    for k in action.details["delete"]]
        resource = ConfigResource(ConfigResource.Type.TOPIC, action.resource, incremental_configs=entries)
        futures = admin.incremental_alter_configs([resource], request_timeout=timeout_s, validate_only=validate_only)
        settle(action, next(iter(futures.values())))
    acl_actions = by_kind.get("create_acl", [])
    if acl_actions and validate_only:
        result.not_attempted.extend(acl_actions)
    elif acl_actions:
        bindings = {Acl(**a.details["acl"]).to_binding(): a for a in acl_actions}
        futures = admin.create_acls(list(bindings), request_timeout=timeout_s)
        for binding, future in futures.items():
            settle(bindings[binding], future)
        _wait_for_acls(admin, {Acl(**a.details["acl"]) for a in result.applied if a.kind == "create_acl"})

    if not validate_only and (creates or grows):
        wait_until_served(admin, [a.resource for a in result.applied if a.kind in ("create_topic", "add_partitions")])
    return result


def _wait_for_acls(admin: AdminClient, created: set[Acl], timeout_s: float = 15.0) -> None:
    """The authorizer applies new ACLs from the metadata log a moment after creation; wait for that."""
    deadline = time.monotonic() + timeout_s
    while created and time.monotonic() < deadline:
        if created <= (read_acls(admin) or frozenset()):
            return
        time.sleep(0.2)


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
    lines += [f"  FAILED {a.kind} {_described(a)}: {error}" for a, error in result.failed]
    lines += [f"  not attempted {a.kind} {_described(a)}" for a in result.not_attempted]
    return "\n".join(lines)


def to_json(value: PreparePlan | ApplyResult) -> str:
    return json.dumps(value.to_dict(), indent=2, sort_keys=True)
