"""The migration plan: its model and YAML file, replication policy (topic naming), name filters and RE2 regexes,
principals, schedules and start times."""

from mirror_engine.plan.clusters import ALIAS_PATTERN, ClusterSpec, render_client_config
from mirror_engine.plan.errors import PlanError
from mirror_engine.plan.filters import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, NameFilter
from mirror_engine.plan.model import MigrationPlan, load_plan, plan_from_dict
from mirror_engine.plan.policy import (
    HEARTBEATS_TOPIC,
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
    checkpoints_topic,
    is_cycle,
    make_policy,
    offset_syncs_topic,
)
from mirror_engine.plan.principals import map_principal
from mirror_engine.plan.regexes import RegexError, check_pattern, compile_any
from mirror_engine.plan.registries import RegistrySpec, SchemasSpec
from mirror_engine.plan.schedules import schedule_problem
from mirror_engine.plan.sections import FROM_PLAN, MM2_CONFIG_EXCLUDES, EngineSpec
from mirror_engine.plan.times import aware_time

__all__ = [
    "ALIAS_PATTERN",
    "DEFAULT_GROUP_EXCLUDES",
    "DEFAULT_TOPIC_EXCLUDES",
    "FROM_PLAN",
    "HEARTBEATS_TOPIC",
    "MM2_CONFIG_EXCLUDES",
    "ClusterSpec",
    "DefaultReplicationPolicy",
    "EngineSpec",
    "IdentityReplicationPolicy",
    "MigrationPlan",
    "NameFilter",
    "PlanError",
    "RegexError",
    "RegistrySpec",
    "ReplicationPolicy",
    "SchemasSpec",
    "aware_time",
    "check_pattern",
    "checkpoints_topic",
    "compile_any",
    "is_cycle",
    "load_plan",
    "make_policy",
    "map_principal",
    "offset_syncs_topic",
    "plan_from_dict",
    "render_client_config",
    "schedule_problem",
]
