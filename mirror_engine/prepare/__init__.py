"""Preparing the target: read both clusters, compute the actions, print them as a dry-run, apply them, in one
sequence (`prepare_target`, which every front end calls); and what the source principal may read."""

from mirror_engine.prepare.actions import (
    Action,
    ApplyResult,
    PreparePlan,
    compute_actions,
    render_actions,
    render_result,
    to_json,
)
from mirror_engine.prepare.applying import apply_actions
from mirror_engine.prepare.reading import ManagedTopics, managed_now, plan_preparation
from mirror_engine.prepare.schemas import SchemaPreparation, prepare_schemas
from mirror_engine.prepare.sequence import Preparation, prepare_target
from mirror_engine.prepare.source_access import (
    ACL_SYNC,
    CONFIG_SYNC,
    DATA_COPY,
    GROUP_OFFSET_SYNC,
    Denial,
    SourceAccess,
)
from mirror_engine.prepare.target_configs import ConfigNote, TargetConfigs, unsynced_log_append_time

__all__ = [
    "ACL_SYNC",
    "CONFIG_SYNC",
    "DATA_COPY",
    "GROUP_OFFSET_SYNC",
    "Action",
    "ApplyResult",
    "ConfigNote",
    "Denial",
    "ManagedTopics",
    "Preparation",
    "PreparePlan",
    "SchemaPreparation",
    "SourceAccess",
    "TargetConfigs",
    "apply_actions",
    "compute_actions",
    "managed_now",
    "plan_preparation",
    "prepare_schemas",
    "prepare_target",
    "render_actions",
    "render_result",
    "to_json",
    "unsynced_log_append_time",
]
