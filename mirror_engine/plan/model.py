"""The migration plan: one YAML file describing a whole migration, parsed into a validated model.

A bad plan fails at load with every problem listed, each naming its field path and what is
allowed (`PlanError`). Loading never contacts a cluster.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from mirror_engine.plan.filters import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, NameFilter
from mirror_engine.plan.policy import ReplicationPolicy, is_cycle, make_policy
from mirror_engine.plan.principals import check_principal_map
from mirror_engine.plan.regexes import check_patterns, compile_any
from mirror_engine.plan.schedules import schedule_problem
from mirror_engine.plan.times import StartPosition
from mirror_engine.plan.yaml_file import PlanFileProblem, read_plan_yaml
from mirror_engine.security import remember_secrets, without_credential_debug

# MirrorMaker 2's DefaultConfigPropertyFilter `config.properties.exclude`, as regexes.
MM2_CONFIG_EXCLUDES: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ALIAS_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]*$"


class PlanError(ValueError):
    """A plan that cannot be used; `problems` holds one `field.path: what is wrong` line each."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"invalid migration plan {source}: {len(problems)} problem(s)\n{listed}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regexes(patterns: list[str]) -> list[str]:
    # RegexError is a ValueError: pydantic reports it under the field's path.
    check_patterns(patterns)
    return patterns


def _shown(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


def _in_range(low: float, high: float, unit: str, integer: bool, low_excluded: bool) -> Callable[[Any], Any]:
    """A before-validator: the value as a finite number within [low, high] (or (low, high]), else one message
    that names the range. YAML reads `1e300` as text and `.inf`/`.nan` as floats; all of them end here."""
    kind = "a whole number" if integer else "a number"
    of_unit = f" of {unit}" if unit else ""
    excluded = " (excluded)" if low_excluded else ""
    allowed = f"must be {kind}{of_unit} from {_shown(low)}{excluded} to {_shown(high)}"

    def check(value: Any) -> Any:
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and len(value) <= 40:
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or (integer and not float(number).is_integer()) \
                or number < low or number > high or (low_excluded and number == low):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise ValueError(f"{allowed}, got {shown}")
        return int(number) if integer else float(number)

    return check


def _seconds(low: float, high: float) -> Any:
    return Annotated[float, BeforeValidator(_in_range(low, high, "seconds", integer=False, low_excluded=False))]


def _optional_seconds(low: float, high: float) -> Any:
    """Seconds in [low, high], or None (null in YAML) for the behaviour the field's comment names."""
    check = _in_range(low, high, "seconds", integer=False, low_excluded=False)
    return Annotated[float | None, BeforeValidator(lambda value: None if value is None else check(value))]


def _whole(low: int, high: int, unit: str = "") -> Any:
    return Annotated[int, BeforeValidator(_in_range(low, high, unit, integer=True, low_excluded=False))]


# Kafka's offsets and counts are signed 64-bit.
_INT64_MAX = 2**63 - 1


class ClusterSpec(_Strict):
    """One side of the migration: an alias and how to reach it.

    From Airflow, `conn_id` names the connection; from the CLI, `bootstrap_servers` and `client`
    (librdkafka settings such as security.protocol) are used. Values may reference environment
    variables as `${NAME}`, so secrets stay out of plan files.
    """

    alias: Annotated[str, Field(pattern=ALIAS_PATTERN, max_length=64)]
    conn_id: str | None = None
    bootstrap_servers: str | None = None
    client: dict[str, str | int | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _reachable_somehow(self) -> ClusterSpec:
        if not self.conn_id and not self.bootstrap_servers:
            raise ValueError("give conn_id (an Airflow connection) or bootstrap_servers")
        if "bootstrap.servers" in self.client:
            raise ValueError("put bootstrap servers in bootstrap_servers, not in client")
        return self

    def client_config(self) -> dict[str, str]:
        """librdkafka settings for the CLI, with `${ENV}` references resolved."""
        if not self.bootstrap_servers:
            raise PlanError(
                f"cluster '{self.alias}'",
                [f"cluster '{self.alias}' names only the Airflow connection '{self.conn_id}': "
                 "give bootstrap_servers to use it outside Airflow"],
            )
        config = {"bootstrap.servers": _resolve_env(self.bootstrap_servers, f"{self.alias}.bootstrap_servers")}
        for key, value in self.client.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            config[key] = _resolve_env(text, f"{self.alias}.client.{key}")
        return config


def render_client_config(alias: str, config: dict[str, str], where: str) -> dict[str, Any]:
    """librdkafka settings of cluster `alias` rendered from the security model; PlanError naming `where.<key>`."""
    from mirror_engine.security import SecurityError, security_config

    try:
        return security_config(alias, config)
    except SecurityError as error:
        raise PlanError(f"cluster '{alias}'", [f"{where}.{problem}" for problem in error.problems]) from None


def _resolve_env(text: str, field: str) -> str:
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise PlanError(field, [f"{field}: environment variable {name} is not set"])
        return os.environ[name]

    return _ENV_REFERENCE.sub(lookup, text)


class NameSelection(_Strict):
    """Include/exclude regex lists (full match), on top of MirrorMaker 2's default excludes."""

    include: list[str] = Field(default_factory=lambda: [".*"])
    exclude: list[str] = Field(default_factory=list)

    _check = field_validator("include", "exclude")(_check_regexes)


class PolicySpec(_Strict):
    type: Literal["identity", "default"] = "identity"
    # Part of every target topic name under the default policy: only characters Kafka allows in topic names.
    separator: Annotated[str, Field(min_length=1, max_length=4)] = "."
    # KIP-949: false keeps the pre-3.1 "." names of MM2's internal topics with a custom separator.
    internal_separator_enabled: bool = True

    @field_validator("separator")
    @classmethod
    def _legal_in_topic_names(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._\-]+", value):
            raise ValueError(f"{value!r} would make target topic names Kafka refuses: use ASCII letters, digits, "
                             "'.', '_' or '-'")
        return value


class SyncSpec(_Strict):
    configs: bool = True
    partitions: bool = True
    acls: bool = True
    # Regexes of topic config names never synced, added to MirrorMaker 2's default exclude list.
    config_exclude: list[str] = Field(default_factory=list)
    # Regexes of topic config names synced even though MirrorMaker 2's default list excludes them: a migration may
    # want the source's timestamp rules on the target (`message\.timestamp\..*`: LogAppendTime topics stay so, and
    # message.timestamp.difference.max.ms becomes Kafka 4's before/after pair).
    config_include: list[str] = Field(default_factory=list)
    # Source principal -> target principal, e.g. {"User:app": "User:app-prod"}: one principal each side;
    # a wildcard (User:*) on the target only for the wildcard on the source.
    principal_map: dict[str, str] = Field(default_factory=dict)
    # "source": the source topic's own factor, capped at the target's broker count;
    # -1: the target broker's default; N: that factor.
    replication_factor: Literal["source"] | int = "source"
    # A target topic that already holds data is an error unless this is set.
    reuse_existing_topics: bool = False
    # A target topic with more partitions than its source is an error unless this is set: producers moved to
    # the target would place keys in other partitions than their copied history.
    allow_more_target_partitions: bool = False
    # Configs and ACLs are synced at every refresh of the engine (engine.refresh_interval_s). A shorter interval
    # here (MM2's sync.topic.configs.interval.seconds / sync.topic.acls.interval.seconds) also syncs them that
    # often beside the copy (`run` and `worker`); null: only at the engine's refreshes.
    configs_interval_s: _optional_seconds(0.1, 86_400) = None
    acls_interval_s: _optional_seconds(0.1, 86_400) = None
    # A sync the plan asks for that the source principal's permissions do not allow (configs: DESCRIBE_CONFIGS on
    # each topic; ACLs: DESCRIBE on the cluster; group offsets: DESCRIBE on each group) is skipped with a warning
    # naming the missing operation and resource; with this set it is a problem, and nothing is prepared.
    require_source_permissions: bool = False

    _check = field_validator("config_exclude", "config_include")(_check_regexes)

    @field_validator("replication_factor", mode="before")
    @classmethod
    def _factor(cls, value: Any) -> Any:
        # Checked before the union, so a bad value gives one message instead of one per union branch.
        if value == "source" or (isinstance(value, int) and not isinstance(value, bool)
                                 and (value == -1 or 1 <= value <= 32767)):
            return value
        raise ValueError(f"must be 'source', -1 (the target broker's default) or a factor from 1 to 32767, "
                         f"got {value!r}")

    @field_validator("principal_map")
    @classmethod
    def _principals(cls, value: dict[str, str]) -> dict[str, str]:
        check_principal_map(value)  # one principal each side, never one principal widened to a wildcard
        return value


class EngineSpec(_Strict):
    # earliest, latest, or an ISO-8601 time with its zone: where a new flow starts reading each partition.
    start_from: StartPosition = "earliest"
    batch_size: _whole(1, 100_000, "records") = 5000
    linger_ms: _whole(0, 60_000, "milliseconds") = 20
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "lz4"
    producer_batch_bytes: _whole(1024, 64 * 1024 * 1024, "bytes") = 1_048_576
    refresh_interval_s: _seconds(0.1, 86_400) = 30.0
    # MM2's emit.heartbeats.enabled: the flow's heartbeats written to the target every heartbeat_interval_s.
    emit_heartbeats: bool = True
    heartbeat_interval_s: _seconds(0.1, 3600) = 1.0
    offset_sync_interval_s: _seconds(0.1, 3600) = 5.0
    progress_interval_s: _seconds(0.05, 3600) = 1.0
    log_interval_s: _seconds(0.1, 86_400) = 30.0  # per-partition progress in the log
    # Copy the source's heartbeats topic (as MM2's heartbeats.replication.enabled), which makes the flow's
    # latency measurable end to end (`mirror-engine latency`). Off by default: two plans from the same source
    # alias to the same target would both write the one replica topic.
    replicate_heartbeats: bool = False
    # Records, offset-syncs and progress written in one transaction on the target: read_committed consumers
    # there see each source record once, through crashes and rebalances.
    exactly_once: bool = False
    # A transaction left open by a crashed worker hides later records from read_committed readers until
    # the target aborts it after this long; the engine commits far more often (every progress_interval_s).
    transaction_timeout_s: _seconds(5, 900) = 30.0
    # Skip records the source deleted before they were copied, instead of stopping the partition.
    allow_gaps: bool = False
    # Workers (`mirror-engine worker`): how long a silent worker keeps its partitions before the others take them.
    session_timeout_s: _seconds(6, 300) = 10.0
    status_interval_s: _seconds(0.1, 3600) = 5.0  # status records and the HTTP status's refresh
    # The loopback HTTP port of /status and /metrics: 0 picks a free one (logged, and in the status records),
    # -1 serves none.
    status_port: _whole(-1, 65535) = 0
    status_host: str = "127.0.0.1"  # 0.0.0.0 to let a scraper on another host (or container) reach it
    # `run` and `worker` also run the checkpoint loop beside the copy (checkpoints and group offset sync as the
    # `cutover` section sets them), as MM2's dedicated mode runs its checkpoint connector beside its source
    # connector; one process of the flow writes them at a time (`checkpoint_loop`). MM2 files: true.
    run_checkpoints: bool = False


class BackfillSpec(_Strict):
    topics: list[str] = Field(default_factory=list)  # regexes of topics whose history Spark copies
    spark_master: str = "local[2]"

    _check = field_validator("topics")(_check_regexes)


def _check_schedule(value: str | None) -> str | None:
    problem = None if value is None else schedule_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class ValidationSpec(_Strict):
    mode: Literal["full", "sample"] = "full"
    sample_fraction: Annotated[float, BeforeValidator(_in_range(0, 1, "", integer=False, low_excluded=True))] = 0.1
    report_dir: str = "reports"
    schedule: str | None = None
    # A copy of at most this many source records is compared in the Airflow task itself, without a Spark
    # application (whose start costs tens of seconds); 0 always submits to Spark.
    in_process_max_records: _whole(0, _INT64_MAX, "records") = 500_000

    _schedule = field_validator("schedule")(_check_schedule)


class CutoverSpec(_Strict):
    groups: list[str] = Field(default_factory=list)
    fence: bool = False
    # A person approves the switch before it runs (the migration DAG's human-in-the-loop gate); off by default,
    # so runs go on unattended; a run's form can ask for it too.
    approve_switch: bool = False
    # The catch_up gate (a live source never reaches lag 0): at most max_lag_records records or max_lag_s seconds
    # behind the source (the oldest record not copied yet; null: no time bound), held for catch_up_settle_s while
    # the engine keeps up; lag 0 passes at once. Group and producer switches still wait for their own records.
    max_lag_records: _whole(0, _INT64_MAX, "records") = 0
    max_lag_s: _optional_seconds(0, 86_400) = 10.0
    catch_up_settle_s: _seconds(0, 3600) = 10.0
    producer_idle_s: _seconds(0, 86_400) = 30.0
    wait_timeout_s: _seconds(0.1, 7 * 86_400) = 1800.0
    # Checkpoints (MM2's emit.checkpoints.enabled / emit.checkpoints.interval.seconds) and group offset sync
    # into groups idle on the target (sync.group.offsets.enabled / sync.group.offsets.interval.seconds; null:
    # with every checkpoint round), by `mirror-engine checkpoint` or, with engine.run_checkpoints, by `run`.
    emit_checkpoints: bool = True
    checkpoint_interval_s: _seconds(0.1, 86_400) = 10.0
    sync_group_offsets: bool = True
    sync_group_offsets_interval_s: _optional_seconds(0.1, 86_400) = None
    # The source's groups are listed again every refresh_groups_interval_s (MM2's refresh.groups.interval.seconds;
    # null: at every round); refresh_groups false (refresh.groups.enabled) lists them once, at start.
    refresh_groups: bool = True
    refresh_groups_interval_s: _optional_seconds(0.1, 86_400) = None


class MigrationPlan(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_\-]*$", max_length=100)]
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
    schedule: str | None = None

    _schedule = field_validator("schedule")(_check_schedule)

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
        return self

    # Derived objects, built on demand (the model is frozen and cheap to rebuild).
    def policy(self) -> ReplicationPolicy:
        spec = self.replication_policy
        return make_policy(spec.type, self.source.alias, spec.separator, spec.internal_separator_enabled)

    def topic_filter(self) -> NameFilter:
        return NameFilter(self.topics.include, [*DEFAULT_TOPIC_EXCLUDES, *self.topics.exclude])

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
        return NameFilter(self.backfill.topics, []).accepts(topic) and self.replicates_topic(topic)

    def group_filter(self) -> NameFilter:
        return NameFilter(self.groups.include, [*DEFAULT_GROUP_EXCLUDES, *self.groups.exclude])

    def config_excludes(self) -> list[str]:
        """MM2's default excludes but those the plan includes (`sync.config_include`), and the plan's own."""
        included = compile_any(self.sync.config_include)
        defaults = [p for p in MM2_CONFIG_EXCLUDES if not (included and included.fullmatch(p.replace("\\.", ".")))]
        return [*defaults, *self.sync.config_exclude]

    def replicates_topic(self, topic: str) -> bool:
        """MM2's shouldReplicateTopic: accepted by the filter (or a heartbeats topic, when those are copied),
        not internal, not a cycle back to the target."""
        policy = self.policy()
        wanted = self.topic_filter().accepts(topic) or (
            self.engine.replicate_heartbeats and policy.is_heartbeats_topic(topic)
        )
        return wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, self.target.alias)


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
    path = Path(path)
    try:
        data = read_plan_yaml(path)
    except PlanFileProblem as problem:
        raise PlanError(str(path), [f"(file): {problem}"]) from None
    return plan_from_dict(data, str(path))
