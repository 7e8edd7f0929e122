"""Which producer writes each target topic's copied records.

librdkafka finds the topic of every record it is given by walking the list of the topics its producer has written
to, so a producer's cost per record grows with its topics: measured on loopback, 2 us a record with 10 topics and
20 to 36 us with 1,000 (one producer wrote 28,000 records a second into 1,000 topics of 10 partitions, ten
producers of 100 topics each 125,000 to 137,000). A flow of many topics therefore spreads them over several
producers, each topic always on the same one, so the records of a partition keep one writer and their order.

Invariant: a target topic, once given a producer, is written by that producer alone until the producers are
rebuilt, which happens only once every producer is drained (`rebuild`).

The first producer (`main`) also writes the side records (offset-syncs, progress, heartbeats, status). With one
producer in all (a flow of few topics, or exactly-once, whose transaction must hold the records with the progress
they reach) it writes the records too, as before any spreading: then nothing changes. With several, the records go
to the others and `main` keeps its queue for the side records; the record producers share the copy contract's
queue bound between them, so the process holds no more records than with one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer

from mirror_engine.replication.copy_contract import QUEUE_MAX_KBYTES, QUEUE_MAX_MESSAGES

# The copy contract's bounds of a producer's queue, shared out between the record producers.
QUEUE_BOUNDS = {"queue.buffering.max.messages": QUEUE_MAX_MESSAGES, "queue.buffering.max.kbytes": QUEUE_MAX_KBYTES}

# Topics per producer beyond which a flow gets another one, and the most producers a flow spreads its records over
# (each holds threads and connections of its own).
TOPICS_PER_PRODUCER = 100
MOST_PRODUCERS = 8


class RecordProducers:
    def __init__(self, main: Producer, settings: dict[str, Any], most: int = MOST_PRODUCERS,
                 make: Callable[[dict[str, Any]], Producer] = Producer) -> None:
        """`main`: the engine's producer, built with `settings`; `most`: how many producers records may be spread over
        (1: every record goes through `main`); `make` builds a producer from settings (a unit test's stand-in)."""
        self.main = main
        self.settings = settings
        self.most = most
        self.make = make
        self.spread_over: list[Producer] = []  # the record producers, once `spread` decided there are several
        self._of: dict[str, Producer] = {}  # target topic -> its producer
        self._topics: dict[int, int] = {}  # id of a record producer -> how many topics it writes

    def spread(self, flow_topics: int, targets: list[str]) -> None:
        """Give each of `targets` (target topics about to be written) its producer. The first call decides how many
        producers the flow has, from the number of its topics (`flow_topics`); later topics join the least busy."""
        if self.most > 1 and not self.spread_over and not self._of:
            count = min(self.most, math.ceil(flow_topics / TOPICS_PER_PRODUCER))
            if count > 1:
                self.spread_over = self._build(count)
        for target in targets:
            if target not in self._of:
                self._of[target] = self._least_busy()
                self._topics[id(self._of[target])] = self._topics.get(id(self._of[target]), 0) + 1

    def of(self, target: str) -> Producer:
        """The producer of a target topic's records (`main` for a topic not spread yet)."""
        return self._of.get(target, self.main)

    def all(self) -> list[Producer]:
        """Every producer of the engine, `main` first."""
        return [self.main, *self.spread_over]

    def poll(self) -> None:
        """Serve the delivery reports of every producer (the copy's callbacks run here, on the calling thread)."""
        for producer in self.all():
            producer.poll(0)

    def flush(self, timeout_s: float) -> int:
        """Wait until every record of every producer is acknowledged, `timeout_s` in all; the records still waiting."""
        deadline = time.monotonic() + timeout_s
        return sum(producer.flush(max(0.0, deadline - time.monotonic())) for producer in self.all())

    def rebuild(self, main: Producer, settings: dict[str, Any]) -> None:
        """New producers in place of the drained ones (smaller batches): each topic keeps its place among them."""
        self.main, self.settings = main, settings
        if not self.spread_over:
            self._of = {target: main for target in self._of}
            return
        places = {id(old): index for index, old in enumerate(self.spread_over)}
        self.spread_over = self._build(len(self.spread_over))
        self._of = {target: self.spread_over[places[id(old)]] for target, old in self._of.items()}
        self._topics = {id(producer): sum(1 for p in self._of.values() if p is producer)
                        for producer in self.spread_over}

    def _least_busy(self) -> Producer:
        if not self.spread_over:
            return self.main
        return min(self.spread_over, key=lambda producer: self._topics.get(id(producer), 0))

    def _build(self, count: int) -> list[Producer]:
        """`count` record producers sharing the queue bound. (Their callers have them learn their topics' partitions
        before the first record: `TargetTopics.producers_know`.)"""
        settings = {**self.settings, **{bound: max(1, int(self.settings.get(bound, default)) // count)
                                        for bound, default in QUEUE_BOUNDS.items()}}
        return [self.make(settings) for _ in range(count)]
