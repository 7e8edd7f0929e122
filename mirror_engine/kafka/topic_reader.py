"""Consumer helpers for readers that stop at a partition's end: `consume_available` returns what has arrived without
waiting out a consume timeout; `assign_known` assigns after asking for the topics' leaders. They serve the readers
of data topics (the switch's proofs, the catch-up gate, the in-process validation) and the one reader of the flow's
small internal topics, `mirror_engine.kafka.internal_reader`, through which every internal topic is read."""

from __future__ import annotations

from confluent_kafka import Consumer, Message, TopicPartition

# For readers of small topics that stop at the end: the broker answers a fetch at the end of the log after this
# long instead of its default 500 ms, so the end-of-partition event (or the next record) comes at once.
SHORT_FETCH_WAIT = {"fetch.wait.max.ms": 10}

# For readers that may meet a long topic (a fresh read of a flow's offset-syncs, a checkpoint round's refresh of
# 100,000 progress records at 10,000 partitions): what the client fetches ahead of the reads stays a few MiB. Its
# defaults queue up to 100,000 records and 64 MiB, each record also holding a few hundred bytes of the client's own:
# a round's refresh held 50 MiB more than the engine's copy. A full queue is looked at again after 10 ms, not the
# client's 1 s, so a long read does not stall at each refill.
SMALL_PREFETCH = {"queued.min.messages": 10_000, "queued.max.messages.kbytes": 4096, "fetch.queue.backoff.ms": 10}


def consume_available(consumer: Consumer, wait_s: float, max_messages: int = 10_000) -> list[Message]:
    """The messages (records and events) that have arrived, waiting at most `wait_s` for the first one.

    `Consumer.consume(n, timeout)` returns only once it holds n messages or the timeout passed, even when the
    last record or the end-of-partition event is already there: a reader that knows when to stop would wait out
    the whole timeout on every call.
    """
    batch = consumer.consume(max_messages, timeout=0)
    if batch:
        return batch
    first = consumer.poll(wait_s)
    if first is None:
        return []
    return [first, *consumer.consume(max_messages - 1, timeout=0)]


def assign_known(consumer: Consumer, partitions: list[TopicPartition], timeout_s: float = 15.0) -> None:
    """Assign partitions after asking the consumer for their topics' metadata.

    A consumer learns the leaders of a topic it has not asked about only at its next periodic scan of unknown
    topics, once a second: its first fetch (or its lookup of a logical offset such as the beginning) waited 0.5
    to 1 s for that, measured, against 5 to 50 ms after this. (Asking creates no topic: a consumer's requests
    never do, unless its settings say `allow.auto.create.topics`; assigning a missing topic asks the same.)
    """
    for topic in sorted({tp.topic for tp in partitions}):
        consumer.list_topics(topic, timeout=timeout_s)
    consumer.assign(partitions)
