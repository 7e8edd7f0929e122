"""The migration plan: one YAML file describing a whole migration, parsed into a validated model.

A bad plan fails at load with every problem listed, each naming its field path and what is
allowed (`PlanError`). Loading never contacts a cluster.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from mirror_engine.plan.clusters import ClusterSpec, render_client_config
from mirror_engine.plan.errors import PlanError
from mirror_engine.plan.field_checks import PlanName, StrictModel, check_schedule
from mirror_engine.plan.filters import (
    DEFAULT_GROUP_EXCLUDES,
    DEFAULT_TOPIC_EXCLUDES,
    NameFilter,
    RememberedAnswers,
    name_filter,
)
from mirror_engine.plan.policy import ReplicationPolicy, is_cycle, make_policy
from mirror_engine.plan.regexes import compile_any
from mirror_engine.plan.registries import SchemasSpec
from mirror_engine.plan.sections import (
    MM2_CONFIG_EXCLUDES,
    BackfillSpec,
    CutoverSpec,
    EngineSpec,
    NameSelection,
    PolicySpec,
    SyncSpec,
    ValidationSpec,
)
from mirror_engine.security import remember_secrets, without_credential_debug


class MigrationPlan(StrictModel):
    name: PlanName
    description: str = ""
    source: ClusterSpec
    target: ClusterSpec
    topics: NameSelection = Field(default_factory=NameSelection)
    groups: NameSelection = Field(default_factory=NameSelection)
    replication_policy: PolicySpec = Field(default_factory=PolicySpec)
    sync: SyncSpec = Field(default_factory=SyncSpec)
    engine: EngineSpec = Field(default_factory=EngineSpec)
    backfill: BackfillSpec = Field(default_factory=BackfillSpec)
    validation: ValidationSpec = Field(default_factory=ValidationSpec)
    cutover: CutoverSpec = Field(default_factory=CutoverSpec)
    # The schema registries, when records point into one (Confluent framing): none by default.
    schemas: SchemasSpec | None = None
    schedule: str | None = None

    _schedule = field_validator("schedule")(check_schedule)

    @model_validator(mode="after")
    def _no_loop(self) -> MigrationPlan:
        if self.source.alias == self.target.alias:
            raise ValueError(f"source.alias and target.alias are both '{self.source.alias}': "
                             "a flow needs two distinct aliases")
        if self.source.bootstrap_servers and self.source.bootstrap_servers == self.target.bootstrap_servers:
            raise ValueError("source.bootstrap_servers and target.bootstrap_servers name the same cluster: "
                             "records would be replicated onto themselves")
        if self.source.conn_id and self.source.conn_id == self.target.conn_id:
            raise ValueError(f"source.conn_id and target.conn_id are both '{self.source.conn_id}'")
        if self.cutover.return_flow is not None and self.replication_policy.type != "default":
            raise ValueError("cutover.return_flow needs replication_policy.type: default: under the identity policy "
                             "the return flow's copies on the source cannot be told from the source's own topics")
        return self

    # Derived objects, built on demand (the model is frozen and cheap to rebuild).
    def policy(self) -> ReplicationPolicy:
        spec = self.replication_policy
        return make_policy(spec.type, self.source.alias, spec.separator, spec.internal_separator_enabled)

    def accepts_group(self, group: str) -> bool:
        """MM2's groups filter: the group matches an include pattern and neither an exclude pattern nor MM2's default
        excludes. Answered once per name (`name_filter`)."""
        return name_filter(tuple(self.groups.include), (*DEFAULT_GROUP_EXCLUDES, *self.groups.exclude))(group)

    def raw_client_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """(source, target) librdkafka settings as written: from the environment when a launcher (an Airflow task)
        put them there as JSON in MIRROR_ENGINE_SOURCE_CONFIG / MIRROR_ENGINE_TARGET_CONFIG, else from the plan."""
        import json

        configs = []
        for side, spec in (("SOURCE", self.source), ("TARGET", self.target)):
            given = os.environ.get(f"MIRROR_ENGINE_{side}_CONFIG")
            config = {k: str(v) for k, v in json.loads(given).items()} if given else spec.client_config()
            remember_secrets(config)
            configs.append(without_credential_debug(config, f"cluster '{spec.alias}'"))
        return configs[0], configs[1]

    def client_configs(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(source, target) confluent-kafka settings, read into the security model and rendered from it
        (`cluster_security`): what cannot be rendered is refused here, before any connection."""
        rendered = []
        for (side, spec), config in zip((("source", self.source), ("target", self.target)),
                                        self.raw_client_configs(), strict=True):
            rendered.append(render_client_config(spec.alias, config, f"{side}.client"))
        return rendered[0], rendered[1]

    def backfills_topic(self, topic: str) -> bool:
        """The topic's history is copied by the Spark backfill, not by the engine."""
        return bool(self.backfill.topics) and name_filter(tuple(self.backfill.topics), ())(topic) \
            and self.replicates_topic(topic)

    def config_excludes(self) -> list[str]:
        """MM2's default excludes but those the plan includes (`sync.config_include`), and the plan's own."""
        included = compile_any(self.sync.config_include)
        defaults = [p for p in MM2_CONFIG_EXCLUDES if not (included and included.fullmatch(p.replace("\\.", ".")))]
        return [*defaults, *self.sync.config_exclude]

    def replicates_topic(self, topic: str) -> bool:
        """MM2's shouldReplicateTopic: accepted by the filter (or a heartbeats topic, when those are copied),
        not internal, not a cycle back to the target. Answered once per name for each choice of topics
        (`_topic_choice`: what the answer depends on, the key)."""
        spec = self.replication_policy
        return _topic_choice(tuple(self.topics.include), tuple(self.topics.exclude),
                             (spec.type, spec.separator, spec.internal_separator_enabled), self.source.alias,
                             self.target.alias, self.engine.replicate_heartbeats)(topic)


@lru_cache(maxsize=16)
def _topic_choice(include: tuple[str, ...], exclude: tuple[str, ...], policy_spec: tuple[str, str, bool],
                  source_alias: str, target_alias: str, heartbeats: bool) -> RememberedAnswers:
    """`MigrationPlan.replicates_topic` for plans that choose topics alike, its answers kept."""
    accepts = NameFilter(include, [*DEFAULT_TOPIC_EXCLUDES, *exclude]).accepts
    policy = make_policy(policy_spec[0], source_alias, policy_spec[1], policy_spec[2])

    def replicates(topic: str) -> bool:
        wanted = accepts(topic) or (heartbeats and policy.is_heartbeats_topic(topic))
        return wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)

    return RememberedAnswers(replicates)


def _problem_lines(error: ValidationError) -> list[str]:
    lines = []
    for detail in error.errors():
        path = ".".join(str(part) for part in detail["loc"]) or "(plan)"
        message = detail["msg"].removeprefix("Value error, ")
        if detail["type"] == "extra_forbidden":
            message = "unknown field (check its spelling against the example plans in migrations/)"
        elif detail["type"] == "literal_error":
            message = f"{message}, got {detail.get('input')!r}"
        lines.append(f"{path}: {message}")
    return lines


def plan_from_dict(data: Any, source: str = "<dict>") -> MigrationPlan:
    if not isinstance(data, dict):
        raise PlanError(source, ["(plan): the file must hold a mapping of fields, e.g. name:, source:, target:"])
    try:
        return MigrationPlan.model_validate(data)
    except ValidationError as error:
        raise PlanError(source, _problem_lines(error)) from None


def load_plan(path: str | Path) -> MigrationPlan:
    """Read and validate a YAML plan; raise PlanError listing every problem (a file that cannot be read as
    a plan, safely and within a second, gives the one `(file)` problem that says why)."""
    # Imported here: a plan built from an MM2 file (`mirror_engine.mm2`) reads no YAML, and its start skips PyYAML.
    from mirror_engine.plan.yaml_file import PlanFileProblem, read_plan_yaml

    path = Path(path)
    try:
        data = read_plan_yaml(path)
    except PlanFileProblem as problem:
        raise PlanError(str(path), [f"(file): {problem}"]) from None
    return plan_from_dict(data, str(path))
