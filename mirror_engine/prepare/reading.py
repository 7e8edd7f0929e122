"""Reading both clusters for a plan and computing the target's actions: what `prepare_target` plans (changes
nothing)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import replace

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirror_engine.flow import InternalTopics
from mirror_engine.kafka import (
    ClusterInfo,
    ClusterState,
    ConfigFilter,
    TopicListing,
    TopicState,
    acl_sync_skipped,
    admin_client,
    at_once,
    config_sync_skipped,
    describe_plan_clusters,
    describe_topic_configs,
    fence_problem,
    list_offsets,
    list_topic_metadata,
    plan_groups,
    read_acls,
    syncable_configs,
    too_old,
    topic_overrides,
    topics_holding_data,
    undescribable_groups,
)
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare.actions import PreparePlan, compute_actions
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


def read_source_state(admin: AdminClient, plan: MigrationPlan, denials: list[Denial],
                      notes: list[str] | None = None, listing: TopicListing | None = None,
                      configs_of: Collection[str] | None = None) -> ClusterState:
    """The source's replicated topics, their configs and its ACLs, as far as the principal may read them: what
    it may not read is left out and added to `denials` (configs per topic, ACLs as a whole); what becomes of
    LogAppendTime topics' timestamps, and syncs a broker before 0.11 cannot answer, are said in `notes`.
    `listing`: the source's topics as just listed (not asked again). `configs_of`: read the configs of these topics
    only (None: of all); the others' are left unread (their target topics keep their configs)."""
    broker_count, metadata = listing if listing is not None else list_topic_metadata(admin)
    names = sorted(name for name in metadata if plan.replicates_topic(name))
    config_filter = ConfigFilter(plan.config_excludes())
    entries: dict[str, list] = {}
    asked = names if configs_of is None else [name for name in names if name in configs_of]
    unread = [] if configs_of is None else [name for name in names if name not in configs_of]
    if plan.sync.configs:
        denied: list[str] = []
        try:
            entries = describe_topic_configs(admin, asked, denied=denied) if asked else {}
        except KafkaException as error:
            if not too_old(error):
                raise
            denied = list(asked)  # created with the target's defaults; existing ones keep theirs
            if notes is not None:
                notes.append(config_sync_skipped(error))
        else:
            denials += topic_denial(CONFIG_SYNC, "DESCRIBE_CONFIGS", denied)
        unread += denied
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


ManagedTopics = frozenset[str] | Callable[[], frozenset[str]]
"""The target topics the flow writes already, or how to learn them: a callable is called once, when first needed
(the engine's start reads its stored progress, which names them, beside both clusters' state)."""


def managed_now(managed: ManagedTopics) -> frozenset[str]:
    """The target topics the flow writes already (learned now, if they were given as how to learn them)."""
    return managed() if callable(managed) else managed


def read_target_state(
    admin: AdminClient, config: dict[str, str], plan: MigrationPlan, target_topics: list[str],
    read_target_acls: bool = True, managed_topics: frozenset[str] = frozenset(), listing: TopicListing | None = None,
    ends_of_managed: bool = False, configs: bool = True,
) -> ClusterState:
    """The target as far as the plan's topics go: the remote topics that exist, their data and configs. Whether
    records are in them is asked only of those the flow does not manage already (`managed_topics`, whose records
    are its own): the engine's refreshes ask no partition's offsets of the topics it copies into. With
    `ends_of_managed` (the engine's start, which needs every end) those are asked too, beside the configs.
    `listing`: the target's topics as just listed (not asked again). `configs`: False leaves the topics' configs
    unread (empty), for a preparation that syncs no config of an existing topic."""
    broker_count, metadata = listing if listing is not None else list_topic_metadata(admin)
    existing = sorted(name for name in target_topics if name in metadata)
    looked_at = [TopicPartition(name, partition) for name in existing if ends_of_managed or name not in managed_topics
                 for partition in range(metadata[name][0])]
    # Up to 60 s, as the engine's other reads of the target's ends: a broker still creating the logs of thousands of
    # partitions just asked for (`run` right after `prepare`) answers "not leader" for them meanwhile.
    entries, ends = at_once(
        lambda: describe_topic_configs(admin, existing) if configs else {},
        lambda: list_offsets(admin_client(config), looked_at, OffsetSpec.latest(), timeout_s=60) if looked_at else {})
    topics = {name: TopicState(name, metadata[name][0], metadata[name][1], topic_overrides(entries.get(name, [])),
                               configs_read=configs) for name in existing}
    with_data = topics_holding_data(config, {key: end for key, end in ends.items() if key[0] not in managed_topics},
                                    timeout_s=60)
    acls = read_acls(admin) if plan.sync.acls and read_target_acls else None
    return ClusterState(broker_count, topics, acls, with_data, frozenset(metadata), ends=ends)


def plan_preparation(
    plan: MigrationPlan,
    source_config: dict[str, str],
    target_config: dict[str, str],
    managed_topics: ManagedTopics = frozenset(),
    best_effort: bool = False,
    target_configs: TargetConfigs | None = None,
    clusters: tuple[ClusterInfo, ClusterInfo] | None = None,
    ends_of_managed: bool = False,
    configs_of_existing: bool = True,
    list_source: Callable[[], TopicListing] | None = None,
) -> PreparePlan:
    """Read both clusters and compute the actions (changes nothing).

    What the source principal may not read is left out and said in `source_access` (see `source_access`): a
    sync it does not allow is a warning, or a problem under sync.require_source_permissions; a topic it may not
    READ is a problem. `best_effort` (the engine's refresh) checks only what the engine syncs itself (configs
    and ACLs), not the topics' READ nor the groups. Source configs the target refuses are translated or dropped
    (`target_configs`, which remembers the target's answers: pass the same one to ask once per process).
    `clusters`: both clusters as the caller just described them (`describe_plan_clusters`): not asked again.
    `ends_of_managed`: ask the ends of the managed topics' partitions too (`read_target_state`); what was read of
    the target stays in `prepared.target`. Then `managed_topics` matter only once both clusters are read: given as
    how to learn them, they are learned beside the reads. `configs_of_existing`: read the source configs of the
    topics the target has already, and the target's configs, to sync them (False: the source configs only of the
    topics to create, none of the target's; the others' are synced by a later preparation, as the engine's refresh
    does). `list_source`: how to have the source's topics listed now by the caller's own client (the engine's
    start lists them for its assignment at the same time: one listing of every source partition, not two).
    """
    managed = functools.cache(functools.partial(managed_now, managed_topics))
    if clusters is None:
        describe_plan_clusters(plan, source_config, target_config)
    source_admin, target_admin = admin_client(source_config), admin_client(target_config)
    denials: list[Denial] = []
    notes: list[str] = []
    asked = [DATA_COPY, *([CONFIG_SYNC] if plan.sync.configs else []), *([ACL_SYNC] if plan.sync.acls else [])]
    # Both clusters at the same time: their topics first, then the plan's topics' configs, data and ACLs on each.
    source_listing, target_listing = at_once(list_source or (lambda: list_topic_metadata(source_admin)),
                                             lambda: list_topic_metadata(target_admin))

    policy = plan.policy()
    remote_names = {name: policy.format_remote_topic(plan.source.alias, name)
                    for name in sorted(name for name in source_listing[1] if plan.replicates_topic(name))}
    configs_of = None if configs_of_existing else {
        name for name, remote in remote_names.items() if remote not in target_listing[1]}

    def read_source() -> ClusterState:
        state = read_source_state(source_admin, plan, denials, notes, listing=source_listing, configs_of=configs_of)
        if not best_effort:
            denials.extend(topic_denial(DATA_COPY, "READ", unreadable_topics(source_admin, sorted(state.topics))))
            groups = undescribable_groups(source_admin, plan_groups(source_admin, plan))
            if groups:
                denials.append(Denial(GROUP_OFFSET_SYNC, "DESCRIBE", "group", tuple(groups)))
        return state

    source, target = at_once(read_source, lambda: read_target_state(
        target_admin, target_config, plan, list(remote_names.values()), read_target_acls=False,
        managed_topics=frozenset() if ends_of_managed else managed(), listing=target_listing,
        ends_of_managed=ends_of_managed, configs=configs_of_existing))
    if not best_effort:
        asked.append(GROUP_OFFSET_SYNC)
    if plan.sync.acls and source.acls:  # the target's ACLs matter only where the source has some to carry over
        target = replace(target, acls=read_acls(target_admin))
    if plan.sync.configs:
        source, adapted = adapt_source_configs(source, target_admin, target_configs or TargetConfigs())
        notes += adapted
    prepared = compute_actions(plan, source, target, managed())
    prepared.target = target
    prepared.config_notes = notes
    prepared.internal_topics = {name: configs for name, configs in InternalTopics.for_plan(plan).specs().items()
                                if name not in target.all_topic_names}
    access = SourceAccess(tuple(asked), tuple(denials), plan.sync.require_source_permissions)
    prepared.source_access = access
    prepared.problems += access.problems()
    prepared.warnings = access.warnings()
    if plan.cutover.fence and not best_effort:
        fencing = fence_problem(source_admin, plan.source.alias, "the plan's groups", "cutover.fence: true")
        prepared.warnings += [f"cutover.fence: {fencing}"] if fencing else []
    return prepared


