"""A cutover step run again (an Airflow task retried after a kill, or cleared after the migration finished) repeats
nothing: a switched group is not moved back to where it was switched, a switched topic is proven, not switched
again, and where the clusters moved on in a way no retry can mend, the step says so in a sentence."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.cutover import GroupSwitcher, SwitchError, build_check, switch_producers
from mirror_engine.kafka import committed_offsets
from mirror_engine.observe import ReportStore
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)


def _read_and_commit(config: dict, group: str, topic: str, records: int, leave: bool = True) -> Consumer:
    """Read `records` records as `group`, commit them, and leave the group (or stay in it)."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read, deadline = 0, time.monotonic() + 60
    while read < records:
        assert time.monotonic() < deadline, f"{group} read only {read} of {records} records"
        read += sum(1 for m in consumer.consume(min(100, records - read), timeout=0.5) if m.error() is None)
    consumer.commit(asynchronous=False)
    if leave:
        consumer.close()
    return consumer


def test_a_switch_run_again_changes_nothing_and_gives_the_same_proof(kafka_pair, unique_name):
    source, target = kafka_pair
    topic, group = f"{unique_name}-orders", f"{unique_name}-app"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, NOW + i) for i in range(400)])
    plan = make_plan(source, target, topic)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120}, daemon=True)
    runner.start()
    try:
        _read_and_commit(source.client_config(), group, topic, 100)
        switcher = GroupSwitcher(plan, source.client_config(), target.client_config())
        first = switcher.switch(group, timeout_s=60)
        assert first.ok and not first.repeated, first.render()
        stored_ms = ReportStore(plan, target.client_config()).read("group-switch")[f"group-switch:{group}"][
            "stored_ms"]

        # The application moved: it reads on the target and stays there. The switch run again (a cleared
        # task) and its sensor's check pass, and leave the group where the application put it.
        member = _read_and_commit(target.client_config(), group, topic, 60, leave=False)
        try:
            moved = committed_offsets(AdminClient(target.client_config()), group)
            again = switcher.switch(group, timeout_s=5)
            check = build_check("group_ready_to_switch", plan, source.client_config(), target.client_config(),
                                {"group": group})
            try:
                assert check.check().done
            finally:
                check.close()
        finally:
            member.close()
        assert again.repeated and again.partitions == first.partitions, again.render()
        assert "was already switched" in again.render()
        # With the application gone from the target too: still nothing moved back (no record read twice).
        assert switcher.switch(group, timeout_s=5).partitions == first.partitions
        assert committed_offsets(AdminClient(target.client_config()), group) == moved
        assert ReportStore(plan, target.client_config()).read("group-switch")[f"group-switch:{group}"][
            "stored_ms"] == stored_ms

        # Once the group commits on the source again (rolled back and read there), a switch is a new switch.
        _read_and_commit(source.client_config(), group, topic, 20)
        third = switcher.switch(group, timeout_s=60)
        assert third.ok and not third.repeated
        assert {(p.topic, p.partition): p.source_offset for p in third.partitions} == committed_offsets(
            AdminClient(source.client_config()), group)

        # A producer switch run again proves the topic copied to its end and changes nothing...
        report = switch_producers(plan, source.client_config(), target.client_config(), topic, idle_s=0,
                                  timeout_s=60)
        assert switch_producers(plan, source.client_config(), target.client_config(), topic, idle_s=0,
                                timeout_s=60).end_offsets == report.end_offsets == {0: 200, 1: 200}
        # ...and says at once what the source holds that was written after the copy stopped (the engine stops
        # at its next look at the control topic, up to a second after the switch).
        deadline = time.monotonic() + 30
        while any(t == topic for t, _ in list(replicator.states)) and time.monotonic() < deadline:
            time.sleep(0.1)
        produce(source, topic, [(1, b"k", b"late", None, NOW)])
        started = time.monotonic()
        with pytest.raises(SwitchError, match=rf"topic {topic} was switched to the target before .* holds 1 "
                                              rf"record\(s\) .*{topic}\[1\] copied to 200 of 201"):
            switch_producers(plan, source.client_config(), target.client_config(), topic, idle_s=0, timeout_s=30)
        assert time.monotonic() - started < 15
    finally:
        replicator.stop()
        runner.join(60)
