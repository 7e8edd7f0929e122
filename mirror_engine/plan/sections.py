"""The sections of a plan beside its clusters: topic and group selection, replication policy, what to sync, the
engine's, the backfill's, the validation's and the cutover's settings, each field with its range or choices."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from mirror_engine.plan.field_checks import (
    INT64_MAX,
    PlanName,
    StrictModel,
    check_regexes,
    check_schedule,
    in_range,
    optional_seconds,
    seconds,
    whole,
)
from mirror_engine.plan.principals import check_principal_map
from mirror_engine.plan.times import StartPosition

# MirrorMaker 2's DefaultConfigPropertyFilter `config.properties.exclude`, as regexes.
MM2_CONFIG_EXCLUDES: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)

class NameSelection(StrictModel):
    """Include/exclude regex lists (full match), on top of MirrorMaker 2's default excludes."""

    include: list[str] = Field(default_factory=lambda: [".*"])
    exclude: list[str] = Field(default_factory=list)

    _check = field_validator("include", "exclude")(check_regexes)


class PolicySpec(StrictModel):
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


class SyncSpec(StrictModel):
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
    # The configs of the topics the target has are synced at the engine's first refresh, as the copy starts, then
    # every configs_interval_s (MM2's sync.topic.configs.interval.seconds and its default), at a refresh; null: at
    # every refresh (engine.refresh_interval_s). ACLs are synced at every refresh. An interval shorter than the
    # refresh's (MM2's sync.topic.acls.interval.seconds for ACLs) also syncs them that often beside the copy (`run`
    # and `worker`). A new topic gets its configs as it is created, at any refresh.
    configs_interval_s: optional_seconds(0.1, 86_400) = 600.0
    acls_interval_s: optional_seconds(0.1, 86_400) = None
    # A sync the plan asks for that the source principal's permissions do not allow (configs: DESCRIBE_CONFIGS on
    # each topic; ACLs: DESCRIBE on the cluster; group offsets: DESCRIBE on each group) is skipped with a warning
    # naming the missing operation and resource; with this set it is a problem, and nothing is prepared.
    require_source_permissions: bool = False

    _check = field_validator("config_exclude", "config_include")(check_regexes)

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


class EngineSpec(StrictModel):
    # earliest, latest, or an ISO-8601 time with its zone: where a new flow starts reading each partition.
    start_from: StartPosition = "earliest"
    batch_size: whole(1, 100_000, "records") = 5000
    linger_ms: whole(0, 60_000, "milliseconds") = 20
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "lz4"
    producer_batch_bytes: whole(1024, 64 * 1024 * 1024, "bytes") = 1_048_576
    refresh_interval_s: seconds(0.1, 86_400) = 30.0
    # MM2's emit.heartbeats.enabled: the flow's heartbeats written to the target every heartbeat_interval_s.
    emit_heartbeats: bool = True
    heartbeat_interval_s: seconds(0.1, 3600) = 1.0
    offset_sync_interval_s: seconds(0.1, 3600) = 5.0
    # MM2's offset.lag.max: every offset_sync_interval_s, a partition whose copy moved more than this many target
    # offsets past its last offset-sync gets a new one; MM2's readers of the syncs translate past the latest one to
    # its target offset + 1. This project's own translation needs none of them; 0: every partition that moved.
    offset_lag_max: whole(0, INT64_MAX, "offsets") = 100
    progress_interval_s: seconds(0.05, 3600) = 1.0
    log_interval_s: seconds(0.1, 86_400) = 30.0  # per-partition progress in the log
    # Copy the source's heartbeats topic (as MM2's heartbeats.replication.enabled), which makes the flow's
    # latency measurable end to end (`mirror-engine latency`). Off by default: two plans from the same source
    # alias to the same target would both write the one replica topic.
    replicate_heartbeats: bool = False
    # Records, offset-syncs and progress written in one transaction on the target: read_committed consumers
    # there see each source record once, through crashes and rebalances.
    exactly_once: bool = False
    # A transaction left open by a crashed worker hides later records from read_committed readers until
    # the target aborts it after this long; the engine commits far more often (every progress_interval_s).
    transaction_timeout_s: seconds(5, 900) = 30.0
    # Skip records the source deleted before they were copied, instead of stopping the partition.
    allow_gaps: bool = False
    # A cluster none of whose brokers answered for this long ends the engine, with a sentence (its progress up to
    # the outage is stored; a restart goes on from there). null: wait for it however long it takes.
    outage_timeout_s: optional_seconds(1, 7 * 86_400) = 1800.0
    # Workers (`mirror-engine worker`): how long a silent worker keeps its partitions before the others take them.
    session_timeout_s: seconds(6, 300) = 10.0
    status_interval_s: seconds(0.1, 3600) = 5.0  # status records and the HTTP status's refresh
    # The loopback HTTP port of /status and /metrics: 0 picks a free one (logged, and in the status records),
    # -1 serves none.
    status_port: whole(-1, 65535) = 0
    status_host: str = "127.0.0.1"  # 0.0.0.0 to let a scraper on another host (or container) reach it
    # `run` and `worker` also run the checkpoint loop beside the copy (checkpoints and group offset sync as the
    # `cutover` section sets them), as MM2's dedicated mode runs its checkpoint connector beside its source
    # connector; one process of the flow writes them at a time (`checkpoint_loop`). MM2 files: true.
    run_checkpoints: bool = False


class BackfillSpec(StrictModel):
    topics: list[str] = Field(default_factory=list)  # regexes of topics whose history Spark copies
    spark_master: str = "local[2]"
    # The JVM heaps of the Spark jobs the migration DAG submits (backfill and validation): spark-submit's
    # --driver-memory and --executor-memory. Spark's default, 1g, cost a 3,000,000-record backfill a quarter of
    # its tasks' time in garbage collection; 2g is what a local session gets too (`spark_jobs.session`).
    spark_driver_memory: str = "2g"
    spark_executor_memory: str = "2g"

    _check = field_validator("topics")(check_regexes)

    @field_validator("spark_driver_memory", "spark_executor_memory")
    @classmethod
    def _jvm_size(cls, value: str) -> str:
        if not re.fullmatch(r"[1-9][0-9]*[kmgtKMGT]?", value.strip()):
            raise ValueError(f"{value!r} is not a size Spark reads: give a whole number with a unit, such as 2g "
                             "or 4096m")
        return value.strip()


class ValidationSpec(StrictModel):
    mode: Literal["full", "sample"] = "full"
    sample_fraction: Annotated[float, BeforeValidator(in_range(0, 1, "", integer=False, low_excluded=True))] = 0.1
    report_dir: str = "reports"
    schedule: str | None = None
    # A copy of at most this many source records is compared in the Airflow task itself, without a Spark
    # application (whose start costs tens of seconds); 0 always submits to Spark.
    in_process_max_records: whole(0, INT64_MAX, "records") = 500_000

    _schedule = field_validator("schedule")(check_schedule)


# An argument left to the plan's value, where None means something of its own (max_lag_s: no time bound): a
# JSON-able sentinel, so that a trigger's arguments can carry it.
FROM_PLAN = "plan"


class CutoverSpec(StrictModel):
    groups: list[str] = Field(default_factory=list)
    # The source topics whose producers a migration run switches unless its form says otherwise (empty: none).
    producer_topics: list[str] = Field(default_factory=list)
    fence: bool = False
    # A person approves the switch before it runs (the migration DAG's human-in-the-loop gate); off by default,
    # so runs go on unattended; a run's form can ask for it too.
    approve_switch: bool = False
    # The catch_up gate (a live source never reaches lag 0): at most max_lag_records records or max_lag_s seconds
    # behind the source (the oldest record not copied yet; null: no time bound), held for catch_up_settle_s while
    # the engine keeps up; lag 0 passes at once. Group and producer switches still wait for their own records.
    max_lag_records: whole(0, INT64_MAX, "records") = 0
    max_lag_s: optional_seconds(0, 86_400) = 10.0
    catch_up_settle_s: seconds(0, 3600) = 10.0
    producer_idle_s: seconds(0, 86_400) = 30.0
    wait_timeout_s: seconds(0.1, 7 * 86_400) = 1800.0
    # Checkpoints (MM2's emit.checkpoints.enabled / emit.checkpoints.interval.seconds) and group offset sync
    # into groups idle on the target (sync.group.offsets.enabled / sync.group.offsets.interval.seconds; null:
    # with every checkpoint round), by `mirror-engine checkpoint` or, with engine.run_checkpoints, by `run`.
    emit_checkpoints: bool = True
    checkpoint_interval_s: seconds(0.1, 86_400) = 10.0
    sync_group_offsets: bool = True
    sync_group_offsets_interval_s: optional_seconds(0.1, 86_400) = None
    # The source's groups are listed again every refresh_groups_interval_s (MM2's refresh.groups.interval.seconds;
    # null: at every round); refresh_groups false (refresh.groups.enabled) lists them once, at start.
    refresh_groups: bool = True
    refresh_groups_interval_s: optional_seconds(0.1, 86_400) = None
    # The plan of the flow running the other way (target to source, as in an active/active pair), by name: a
    # group's offsets on that flow's copies on this source (a consumer that failed over) are translated back
    # through that flow's mapping, which it keeps on this source, and checkpointed (and synced) to the original
    # topics on this target. MM2's checkpoints skip such topics (they are cycles); null: none.
    return_flow: PlanName | None = None


