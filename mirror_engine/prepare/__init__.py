"""Preparing the target: read both clusters, compute the actions, print them as a dry-run, apply them; and what the
source principal may read."""

from mirror_engine.prepare.source_access import (
    ACL_SYNC,
    CONFIG_SYNC,
    DATA_COPY,
    GROUP_OFFSET_SYNC,
    Denial,
    SourceAccess,
)
from mirror_engine.prepare.target import (
    Action,
    ApplyResult,
    PreparePlan,
    apply_actions,
    compute_actions,
    plan_preparation,
    render_actions,
    render_result,
    to_json,
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
    "PreparePlan",
    "SourceAccess",
    "TargetConfigs",
    "apply_actions",
    "compute_actions",
    "plan_preparation",
    "render_actions",
    "render_result",
    "to_json",
    "unsynced_log_append_time",
]
