"""The one name for a partition as a plain value: `TopicPartitionKey`, a `(topic, partition)` tuple.

Every package uses it as a dict key and set member (positions, progress, offset-syncs, assignments). It is
called `TopicPartitionKey`, not `TopicPartition`, so it never shadows confluent_kafka's `TopicPartition` (the
client's mutable object with an offset), which many of the same modules import beside it. It lives in
`mirror_engine.kafka`, the lowest concern package whose modules use it, so every package above may import it
from that face."""

from __future__ import annotations

TopicPartitionKey = tuple[str, int]

__all__ = ["TopicPartitionKey"]
