"""The engine while its target is down: one line of its own when the outage begins and one when it ends, and
"copied" counts only what the target acknowledged."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka.admin import NewTopic

from kafka_local.cluster import restart_cluster, start_cluster
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import create_topics, make_plan

pytestmark = pytest.mark.integration


def _records(start: int, stop: int) -> list[tuple]:
    now = int(time.time() * 1000)
    return [(0, f"k{i}".encode(), f"v{i}".encode(), [], now) for i in range(start, stop)]


def _wait(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


def test_a_target_outage_is_logged_once_each_way_and_copied_counts_only_acknowledged(kafka_pair, unique_name,
                                                                                        tmp_path, caplog):
    source, _ = kafka_pair
    target = start_cluster("outage-target", tmp_path / "outage-target")
    try:
        create_topics(source, [NewTopic(unique_name, 1, 1)])
        produce(source, unique_name, _records(0, 100))
        plan = make_plan(source, target, unique_name, engine={"status_interval_s": 0.5, "progress_interval_s": 0.2})
        replicator = Replicator(plan, source.client_config(), target.client_config())
        caplog.set_level(logging.INFO, logger="mirror_engine")
        runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 180}, daemon=True)
        runner.start()
        _wait(lambda: replicator.states and replicator.caught_up(), 60, "the first 100 records copied")

        target.stop()
        produce(source, unique_name, _records(100, 150))
        _wait(lambda: any("does not answer since" in r.getMessage() for r in caplog.records), 60,
              "the engine's own outage line")
        _wait(lambda: sum(s.produced_next for s in replicator.states.values()) >= 150, 30,
              "the new records handed to the producer")
        time.sleep(3)
        state = next(iter(replicator.states.values()))
        # Handed to the producer, never acknowledged: not copied.
        assert state.records_produced == 150 and state.records_copied == 100
        assert replicator.build_status()["records_copied"] == 100

        restart_cluster(target)
        _wait(lambda: replicator.caught_up() and state.records_copied == 150, 90, "the rest copied after the outage")
        # The outage's end is noticed by the engine's once-a-second look at the cluster, which may come a moment
        # after the copy resumed: the line is awaited, not assumed already there.
        _wait(lambda: any("answers again" in r.getMessage() for r in caplog.records), 15,
              "the engine's answers-again line")
        replicator.stop()
        runner.join(60)
        assert [r.value for r in read_partition(target, unique_name, 0)][:150] == [f"v{i}".encode() for i in range(150)]
        began = [r.getMessage() for r in caplog.records if "does not answer since" in r.getMessage()]
        ended = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
        assert len(began) == 1 and "'tgt'" in began[0], began
        assert len(ended) == 1 and "'tgt'" in ended[0], ended
    finally:
        target.stop()


def test_an_engine_whose_target_stays_gone_ends_by_itself_after_the_plans_outage_timeout(kafka_pair, unique_name,
                                                                                        tmp_path):
    from mirror_engine.replication import EngineError

    source, _ = kafka_pair
    target = start_cluster("gone-target", tmp_path / "gone-target")
    try:
        create_topics(source, [NewTopic(unique_name, 1, 1)])
        produce(source, unique_name, _records(0, 50))
        plan = make_plan(source, target, unique_name, engine={"outage_timeout_s": 5, "progress_interval_s": 0.2})
        replicator = Replicator(plan, source.client_config(), target.client_config())
        ended: dict = {}

        def run() -> None:
            try:
                replicator.run(max_seconds=240)
            except EngineError as error:
                ended["error"] = str(error)
            ended["at"] = time.monotonic()

        runner = threading.Thread(target=run, daemon=True)
        runner.start()
        _wait(lambda: replicator.states and replicator.caught_up(), 60, "the first 50 records copied")
        target.stop()
        stopped_at = time.monotonic()
        runner.join(90)
        assert not runner.is_alive(), "the engine still runs 90 s after its target went away"
        assert "cluster 'tgt' has not answered since" in ended.get("error", ""), ended
        assert "engine.outage_timeout_s of 5 s" in ended["error"], ended
        assert ended["at"] - stopped_at >= 5, ended  # not before the bound
    finally:
        target.stop()
