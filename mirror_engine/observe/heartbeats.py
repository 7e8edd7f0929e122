"""Liveness and latency of a flow, read from MirrorMaker 2-format heartbeats.

Two signals, as with MM2:
- the flow's own heartbeats, written by the engine to the target's `heartbeats` topic at the plan's
  interval: their age says whether the engine is alive and writing;
- a heartbeat written into the source's `heartbeats` topic travels through the flow to its replica
  on the target (`<source alias>.heartbeats`): the time it takes is the flow's replication latency,
  end to end. The engine copies that topic when the plan sets `engine.replicate_heartbeats`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec

from mirror_engine.kafka import (
    InternalTopicReader,
    admin_client,
    decoded,
    existing_topics,
    list_offsets,
    read_to_end,
    wait_until_served,
)
from mirror_engine.mm2 import Heartbeat
from mirror_engine.plan import MigrationPlan


class LatencyError(RuntimeError):
    """The latency could not be measured; the message says why."""


@dataclass(frozen=True)
class Latency:
    source_topic: str
    replica_topic: str
    latency_ms: float


def last_heartbeat(target_config: dict[str, str], plan: MigrationPlan) -> Heartbeat | None:
    """The newest heartbeat the plan's flow wrote to the target, or None if it never wrote one."""
    topic = plan.policy().heartbeats_topic()
    flow = (plan.source.alias, plan.target.alias)
    beats = [beat for _m, beat in decoded(read_to_end(target_config, topic),
                                          lambda m: Heartbeat.from_record(m.key(), m.value()))]
    return max((b for b in beats if (b.source_alias, b.target_alias) == flow), key=lambda b: b.timestamp_ms,
               default=None)


def _ensure_source_topic(source_config: dict[str, str], topic: str) -> None:
    admin = admin_client(source_config)
    if existing_topics(admin, [topic]):
        return
    # As MM2 creates it: one partition, compacted.
    future = admin.create_topics([NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})])[topic]
    try:
        future.result()
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise LatencyError(f"cannot create {topic} on the source (it needs CREATE, or create it once by "
                               f"hand): {error.args[0].str()}") from None
    wait_until_served(admin, [topic])


def measure_latency(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                    timeout_s: float = 60.0) -> Latency:
    """Write one heartbeat into the source and time its arrival in the replica on the target.

    Needs the engine running with `engine.replicate_heartbeats`, and WRITE on the source's
    heartbeats topic for whoever measures. The heartbeat is keyed as the reverse flow's, as MM2's
    heartbeat connector of a target->source flow would write it.
    """
    if not plan.engine.replicate_heartbeats:
        raise LatencyError("the plan does not copy heartbeats: set engine.replicate_heartbeats: true and restart "
                           "the engine")
    policy = plan.policy()
    source_topic = policy.heartbeats_topic()
    replica = policy.format_remote_topic(plan.source.alias, source_topic)
    _ensure_source_topic(source_config, source_topic)

    target_admin = admin_client(target_config)
    deadline = time.monotonic() + timeout_s
    while not existing_topics(target_admin, [replica]):
        if time.monotonic() > deadline:
            raise LatencyError(f"{replica} does not exist on the target after {timeout_s:.0f} s: is the engine "
                               "running this plan (it creates the replica within its refresh interval)?")
        time.sleep(0.5)
    start = list_offsets(target_admin, [TopicPartition(replica, 0)], OffsetSpec.latest())[(replica, 0)]

    # Committed records only, as the flow's consumers on the target see them (an exactly-once engine's copy
    # arrives with its transaction's commit).
    with InternalTopicReader(target_config, replica, "mirror-engine-latency", start={replica: start}) as reader:
        reader.available()  # assigned, and its leader known, before the heartbeat leaves
        beat = Heartbeat(plan.target.alias, plan.source.alias, int(time.time() * 1000))
        producer = Producer(source_config)
        sent = time.monotonic()
        producer.produce(source_topic, beat.record_value(), beat.record_key(), 0, timestamp=beat.timestamp_ms)
        if producer.flush(timeout_s):
            raise LatencyError(f"the source did not accept the heartbeat on {source_topic} (does this principal "
                               "have WRITE on it?)")
        while time.monotonic() < deadline:
            arrived = decoded(reader.available(), lambda m: Heartbeat.from_record(m.key(), m.value()))
            if any(copy == beat for _message, copy in arrived):
                return Latency(source_topic, replica, (time.monotonic() - sent) * 1000)
            time.sleep(0.005)
        raise LatencyError(f"the heartbeat written to {source_topic} at {beat.timestamp_ms} did not reach {replica} "
                           f"within {timeout_s:.0f} s: the flow is stalled or far behind")
