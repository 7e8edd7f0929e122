"""A flow's work units: the shares of its source partitions that its workers take through Kafka's group protocol.

The group hands out the partitions of the topics its members subscribe to, and its assignment runs in one
member's client, in librdkafka's main thread, with no heartbeat meanwhile. Subscribed to 10,000 source partitions
over two workers, it never settled on this project's test machine: the sticky assignor alone took 2.4 s, sessions
timed out, the broker ran out of heap (bench/README.md, "Two workers at 10,000 partitions"). MirrorMaker 2 does not
hand out partitions either: its Connect group assigns tasks, each a fixed share of the partitions. So here: the
workers of a flow form the group `engine_group_id` on the target, subscribed to the flow's units topic, whose
partitions are the units; each worker copies the source partitions of the units it holds. The topic holds no
records.

A source partition's unit is a fact of the partition alone, `(crc32(topic) + partition) mod units`: every worker
agrees on it whatever topics it has seen so far, and partitions added later fall into units already held. The
number of units is fixed when the first worker creates the topic: one per partition of the plan then, up to
`MAX_WORK_UNITS` (a small flow splits partition by partition, as a group over the partitions would), and at most
that many workers share a flow.
"""

from __future__ import annotations

import logging
import time
import zlib

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.kafka import wait_until_served
from mirror_engine.plan import MigrationPlan

log = logging.getLogger(__name__)

MAX_WORK_UNITS = 64


def work_units_topic(plan: MigrationPlan) -> str:
    # Ends in ".internal", as the engine's other topics: no plan replicates it.
    return f"mirror-engine-units.{plan.source.alias}.{plan.name}.internal"


def work_unit(topic: str, partition: int, units: int) -> int:
    """The unit a source partition belongs to (crc32: the same in every process, unlike `hash`)."""
    return (zlib.crc32(topic.encode()) + partition) % units


def ensure_work_units(admin: AdminClient, plan: MigrationPlan, partitions: int, timeout_s: float = 30.0) -> int:
    """The flow's number of units: its units topic's partitions, the topic created when missing with one unit per
    partition of the plan (`partitions`, as this worker counts them now) up to `MAX_WORK_UNITS`."""
    topic = work_units_topic(plan)
    units = _partition_count(admin, topic)
    if units:
        return units
    wanted = max(1, min(MAX_WORK_UNITS, partitions))
    try:
        admin.create_topics([NewTopic(topic, wanted, -1)], request_timeout=timeout_s)[topic].result()
        log.info("created the flow's work units topic %s on the target: %d unit(s)", topic, wanted)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
        # Another worker of the flow was faster: its count holds.
    wait_until_served(admin, [topic], timeout_s)
    deadline = time.monotonic() + timeout_s
    while not (units := _partition_count(admin, topic)):
        if time.monotonic() > deadline:
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART,
                                            f"the work units topic {topic} is not served by the target"))
        time.sleep(0.2)
    return units


def _partition_count(admin: AdminClient, topic: str) -> int:
    """The topic's partitions (0: not there, or not served yet). DescribeTopics, which never creates a topic."""
    try:
        description = admin.describe_topics(TopicCollection([topic]), request_timeout=15)[topic].result()
    except KafkaException as error:
        if error.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE):
            return 0
        raise
    return len(description.partitions)
