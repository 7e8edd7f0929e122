"""The engine's Kafka clients, built complete in one place.

The source consumer reads committed records only, never resets a position silently, and keeps a small
prefetch (bounded in messages and bytes, so a flow far behind the source does not make the process
grow). The target producer follows the copy contract (`mirror_engine.replication.copy_contract`); its batches are
capped at the smallest `max.message.bytes` of the topics it writes, and it is rebuilt when a topic with
a lower limit joins the flow.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from mirror_engine.flow import InternalTopics, ensure_internal_topics
from mirror_engine.kafka import admin_client, describe_topic_configs, record_limit
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.copy_contract import target_producer_settings
from mirror_engine.replication.record_producers import MOST_PRODUCERS, RecordProducers

log = logging.getLogger("mirror_engine.replication.engine")

# The consumer's prefetch per partition and in all: enough to keep the copy busy, little enough that
# a backlog of small records (where librdkafka's per-message overhead dwarfs the payload) stays small.
# Measured by bench/soak_memory.py (its table is in bench/README.md).
PREFETCH_MIN_MESSAGES = 10_000
PREFETCH_MAX_KBYTES = 8 * 1024


@dataclass
class ClientCallbacks:
    """Where the clients report: errors of each side."""

    on_source_error: Callable[[KafkaError], None]
    on_target_error: Callable[[KafkaError], None]


@dataclass
class EngineClients:
    plan: MigrationPlan
    source_config: dict[str, str]
    target_config: dict[str, str]
    source_admin: AdminClient
    target_admin: AdminClient
    consumer: Consumer
    producer: Producer  # the side records' (and, where the records are not spread, the records')
    producer_settings: dict[str, Any]
    batch_cap: int  # the producers' batch.size
    records: RecordProducers  # which producer writes each target topic's records
    record_limits: dict[str, int] = field(default_factory=dict)  # target topic -> its max.message.bytes

    @classmethod
    def connect(cls, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                group_id: str, transactional_id: str | None,
                callbacks: ClientCallbacks) -> EngineClients:
        """Make sure the flow's internal topics exist and build every client (both clusters answered the caller).
        With a transaction, every record goes through the one producer that holds it (see `RecordProducers`)."""
        source_admin, target_admin = admin_client(source_config), admin_client(target_config)
        topics = InternalTopics.for_plan(plan)
        ensure_internal_topics(target_admin, topics)
        engine = plan.engine
        # The internal topics' limits bound the batches of offset-syncs, progress and status records.
        internal = [topics.offset_syncs, topics.progress, topics.status, topics.heartbeats]
        batch_cap = min([engine.producer_batch_bytes, *topic_limits(target_admin, internal).values()])
        producer_settings = {
            **target_producer_settings(target_config, linger_ms=engine.linger_ms, compression=engine.compression,
                                       batch_bytes=batch_cap, transactional_id=transactional_id,
                                       transaction_timeout_s=engine.transaction_timeout_s),
            # Records above a topic's own limit never reach produce() (the copier checks): this only bounds
            # requests.
            "message.max.bytes": 1_000_000_000,
            "error_cb": callbacks.on_target_error,
        }
        consumer = Consumer({
            **source_config,
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            # A position that fell behind the log start is an error to report, never a silent reset.
            "auto.offset.reset": "error",
            # Small fetches: each response holds its buffer until its last record is copied, so big ones pin the
            # memory.
            # The prefetch bounds are looked at before a fetch, and a fetch's bytes are compressed ones: one
            # answer of 1 MiB per broker held 100,000 small records each (10,000 partitions, three brokers: 150 MiB
            # of fetched records and their decompressed batches at the peak); 256 KiB copied as fast (8 partitions
            # of 100 B and 1 KiB records, `bench/soak_memory.py`). A record larger than these is still fetched
            # whole, alone. librdkafka wants `message.max.bytes` no larger than `fetch.max.bytes`: a consumer sends
            # no records, and only its first guess of an LZ4 batch's decompressed size is capped by it (the buffer
            # grows as needed).
            "fetch.max.bytes": 256 * 1024,
            "message.max.bytes": 256 * 1024,
            "max.partition.fetch.bytes": 128 * 1024,
            "queued.min.messages": PREFETCH_MIN_MESSAGES,
            "queued.max.messages.kbytes": PREFETCH_MAX_KBYTES,
            # Once the prefetch is full, each partition is looked at again after this long. At every look, each
            # broker's thread of the consumer decides for every partition it leads whether to fetch it, under that
            # partition's lock: at 10,000 partitions, looks every 10 ms took about half the engine's CPU while it
            # copied (perf); every 50 ms the copy of 1,000,000 records took 22-26 CPU s against 26-44. Longer
            # starves a fast copy: the prefetch's 10,000 records last about 45 ms at 220,000 records a second
            # (100 ms copied a third slower there; librdkafka's default is 1 s). Figures in `bench/README.md`.
            "fetch.queue.backoff.ms": 50,
            # No statistics (librdkafka's default): their JSON names every partition, about 1.5 KB each, built
            # by the client and parsed here at each interval (15 MB at 10,000 partitions). The status counts the
            # bytes it copies itself (`PartitionState.bytes_read`).
            "error_cb": callbacks.on_source_error,
        })
        producer = Producer(producer_settings)
        records = RecordProducers(producer, producer_settings, most=1 if transactional_id else MOST_PRODUCERS)
        return cls(plan, source_config, target_config, source_admin, target_admin, consumer, producer,
                   producer_settings, batch_cap, records)

    def rebuild_producer(self, batch_cap: int) -> Producer:
        """New producers with smaller batches (the caller drained the old ones)."""
        self.batch_cap = batch_cap
        self.producer_settings["batch.size"] = max(1, batch_cap)
        self.producer = Producer(self.producer_settings)
        self.records.rebuild(self.producer, self.producer_settings)
        return self.producer


def topic_limits(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    """Each target topic's `max.message.bytes` (its override, or the target broker's default)."""
    return {topic: record_limit(entries) for topic, entries in describe_topic_configs(admin, topics).items()}
