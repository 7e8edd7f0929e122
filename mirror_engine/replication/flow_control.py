"""A running flow's control, followed every second on the copy's thread: what the control topic says (run,
pause or stop the flow; topics whose producers switched; backfills done), and clusters back from an outage."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException

from mirror_engine.flow import ControlChannel
from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.faults import Faults, OutageWatch
from mirror_engine.replication.membership import Membership
from mirror_engine.replication.partition_state import PartitionState

log = logging.getLogger("mirror_engine.replication.engine")


class FlowControl:
    """`state`: the flow's state, "running", "paused" or "stopped", as the control topic last said it (read at the
    start by the engine, then followed here); the copy's loop consumes only while it is not paused."""

    def __init__(self, plan: MigrationPlan, control: ControlChannel, membership: Membership, outages: OutageWatch,
                 faults: Faults, clients: EngineClients, states: dict[TopicPartitionKey, PartitionState]) -> None:
        self.plan = plan
        self.control = control
        self.membership = membership
        self.outages, self.faults = outages, faults
        self.clients = clients
        self.states = states
        self.state = "running"

    def follow(self) -> None:
        """Every second: clusters back from an outage (or one out for longer than engine.outage_timeout_s, which
        ends the engine), and what the control topic says."""
        for alias in list(self.outages.outages):
            client = self.clients.producer if alias == self.plan.target.alias else self.clients.consumer
            try:
                client.list_topics(timeout=0.5)
            except KafkaException:
                continue
            self.outages.ended(alias)
        gone, why = self.outages.overdue(self.plan.engine.outage_timeout_s)
        if gone:  # not retried forever: the engine ends, with the sentence
            self.faults.target_gone = gone == self.plan.target.alias
            self.faults.stop_with(why)
            return
        changes = self.control.poll()
        if changes.flow_state:
            self.apply(changes.flow_state)
        if changes.switched:
            self.membership.stop_topics(changes.switched)
            log.info("stopped copying %s: producers switched to the target", ", ".join(sorted(changes.switched)))
        self.membership.resume_backfilled(changes.backfilled, stopped=self.state == "stopped")

    def apply(self, state: str) -> None:
        previous, self.state = self.state, state
        if state == "stopped":
            self.membership.release_all()
            log.info("flow stopped: progress stored, partitions released")
        elif previous == "stopped":
            self.membership.acquire()
            log.info("flow started%s", " (paused)" if state == "paused" else "")
        else:  # the copy's loop consumes or not (`held`); progress and assignment are kept
            log.info("flow %s: %d partition(s)", "paused" if state == "paused" else "resumed", len(self.states))

    @staticmethod
    def held() -> list:
        """The copy's turn while the flow is paused: nothing consumed (the producers are still served by the
        copier's `copy`).

        The consumer's prefetch, bounded, then stops fetching. Its partitions are not paused: librdkafka's pause()
        and resume() look each partition's topic up in a list of the client's topics and wait for its main thread,
        with the GIL held throughout; 10,000 partitions over 1,000 topics held the whole engine about 4 s each way
        (heartbeats, status, the checkpoint loop)."""
        time.sleep(0.2)
        return []
