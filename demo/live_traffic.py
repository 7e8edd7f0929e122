"""The demo shop's applications on the source cluster: a producer still writing orders and payments, and the
consumer groups billing and shipping reading them, slower than they are written (so they stay behind).

Each part runs until it is told to stop, as a team's applications run until the team stops them at its cutover:
`stop_consumers()` when the switch of the groups begins, `stop_producer()` when the switch of the producers does.
"""

from __future__ import annotations

import json
import threading
import time

from confluent_kafka import Consumer, Producer

from kafka_local.cluster import KafkaCluster

GROUPS = {"billing": ["orders", "payments"], "shipping": ["orders"]}
PRODUCED_TOPICS = ["orders", "payments"]


class LiveTraffic:
    """Start with `start()`; `stop_consumers()`, `stop_producer()` and `stop()` each wait for what they stop."""

    def __init__(self, source: KafkaCluster) -> None:
        self.source = source
        self.consumers_stop, self.producer_stop = threading.Event(), threading.Event()
        self.produced = 0
        self._producer = threading.Thread(target=self._produce, name="demo-producer", daemon=True)
        self._consumers = [threading.Thread(target=self._consume, args=(group, topics), name=f"demo-{group}",
                                            daemon=True) for group, topics in GROUPS.items()]

    def start(self) -> LiveTraffic:
        for thread in [self._producer, *self._consumers]:
            thread.start()
        return self

    def _produce(self) -> None:
        producer = Producer({**self.source.client_config(), "linger.ms": 5})
        while not self.producer_stop.is_set():
            producer.produce(PRODUCED_TOPICS[self.produced % 2], key=f"customer-{self.produced % 997}",
                             value=json.dumps({"live": self.produced}), headers=[("source", b"live")])
            self.produced += 1
            if self.produced % 20 == 0:
                producer.poll(0)
                time.sleep(0.1)
        producer.flush(30)

    def _consume(self, group: str, topics: list[str]) -> None:
        consumer = Consumer({**self.source.client_config(), "group.id": group, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(topics)
        try:
            while not self.consumers_stop.is_set():
                if consumer.consume(200, timeout=0.5):
                    consumer.commit(asynchronous=False)
                self.consumers_stop.wait(0.3)  # slower than the producer: the groups stay behind
        finally:
            consumer.close()  # leaves the group: it has no members on the source from now on

    def stop_consumers(self) -> None:
        self.consumers_stop.set()
        for thread in self._consumers:
            thread.join(60)

    def stop_producer(self) -> None:
        self.producer_stop.set()
        self._producer.join(60)

    def stop(self) -> None:
        self.stop_consumers()
        self.stop_producer()

    @property
    def consuming(self) -> bool:
        return not self.consumers_stop.is_set()

    @property
    def producing(self) -> bool:
        return not self.producer_stop.is_set()
