"""The catch-up gate on real brokers with a producer writing throughout, as in a migration where producers move
last: it passes once the engine keeps up, while the producer still writes; without an engine it never passes
and says the lag does not converge."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import yaml
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from mirror_engine.cutover import LagAtMost
from mirror_engine.kafka import list_offsets
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)
PARTITIONS = 3


class Writer(threading.Thread):
    """Writes about 300 keyed records a second to a topic until stopped."""

    def __init__(self, config: dict, topic: str) -> None:
        super().__init__(daemon=True)
        self.config, self.topic = config, topic
        self.halt = threading.Event()
        self.written = 0

    def run(self) -> None:
        producer = Producer({**self.config, "linger.ms": 5})
        while not self.halt.is_set():
            for _ in range(30):
                producer.produce(self.topic, f"live-{self.written}".encode(), f"k{self.written % 11}".encode(),
                                 self.written % PARTITIONS)
                self.written += 1
            producer.poll(0)
            time.sleep(0.1)
        producer.flush(30)


def _source_end(admin: AdminClient, topic: str) -> int:
    ends = list_offsets(admin, [TopicPartition(topic, p) for p in range(PARTITIONS)], OffsetSpec.latest())
    return sum(ends.values())


def _setup(kafka_pair, unique_name: str) -> tuple[dict, str, Writer]:
    source, _target = kafka_pair
    topic = f"{unique_name}-live"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    # A backlog first, then live traffic for the whole test.
    produce(source, topic, [(i % PARTITIONS, f"k{i}".encode(), b"x" * 100, None, NOW + i) for i in range(20_000)])
    data = plan_dict(source, target=_target, prefix=topic, name=f"cu{unique_name[-8:]}")
    writer = Writer(source.client_config(), topic)
    writer.start()
    return data, topic, writer


async def _first_event(trigger) -> dict:
    async for event in trigger.run():
        await trigger.cleanup()
        return event.payload
    raise AssertionError("the trigger ended without an event")


@pytest.mark.airflow
def test_the_gate_passes_while_the_producer_keeps_writing(kafka_pair, unique_name, tmp_path, capsys):
    """The plan's defaults, through the sensor's trigger: it passes once the engine keeps up, and the producer
    is still writing then (the default of lag 0 waited until the producer stopped)."""
    from kafka_migration.triggers.readiness import ReadinessTrigger

    source, target = kafka_pair
    data, topic, writer = _setup(kafka_pair, unique_name)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    engine = Replicator(plan_from_dict(data), source.client_config(), target.client_config())
    runner = threading.Thread(target=engine.run, kwargs={"max_seconds": 240}, daemon=True)
    runner.start()
    admin = AdminClient(source.client_config())
    try:
        trigger = ReadinessTrigger(str(plan_file), "lag_at_most", {}, time.time() + 150, 1.0)
        event = asyncio.run(_first_event(trigger))
        end_at_pass = _source_end(admin, topic)
        time.sleep(2)
        assert _source_end(admin, topic) > end_at_pass, "the producer stopped: the test proves nothing"
        assert writer.is_alive() and not writer.halt.is_set()
    finally:
        writer.halt.set()
        engine.stop()
        runner.join(60)
        writer.join(60)
    assert event["status"] == "ok", event
    print(event["progress"])
    assert event["progress"].startswith("caught up: ") and "within at most 10 s behind the source" in \
        event["progress"] and "the lag converges" in event["progress"], event
    assert event["detail"]["behind_s"] <= 10, event
    logged = capsys.readouterr().out.splitlines()  # the trigger's log lines
    waiting = [line for line in logged if "catch-up: waiting for at most 10 s behind the source, held for 10 s; now "
               in line]
    assert waiting, logged[-20:]
    assert any("within the bound for" in line for line in waiting), waiting[-5:]


def test_without_an_engine_the_gate_never_passes_and_says_the_lag_does_not_converge(kafka_pair, unique_name):
    source, target = kafka_pair
    data, _topic, writer = _setup(kafka_pair, unique_name)
    check = LagAtMost(plan_from_dict(data), source.client_config(), target.client_config())
    progress = []
    try:
        started = time.monotonic()
        while time.monotonic() - started < 24:  # more than the settle period
            readiness = check.check()
            assert not readiness.done and not readiness.failed, readiness
            progress.append(readiness.progress)
            time.sleep(2)
    finally:
        check.close()
        writer.halt.set()
        writer.join(60)
    assert "the lag does not converge: the engine copies 0 record(s)/s" in progress[-1], progress[-1]
    assert "no live engine of the flow" in progress[-1]
