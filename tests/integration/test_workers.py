"""Several `mirror-engine worker` processes on one flow: sharing, kill -9, exactly-once, control and status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from kafka_local.cluster import KafkaCluster
from mirror_engine.flow import FlowMapping, engine_group_id, work_unit, work_units_topic
from mirror_engine.observe import read_worker_statuses, replication_lag
from mirror_engine.plan import MigrationPlan, plan_from_dict
from tests.integration.kafka_data import end_offsets, produce, read_partition
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

PARTITIONS = 8


class Flow:
    """A topic on the source, a plan for it, and the worker processes running the plan."""

    def __init__(self, source: KafkaCluster, target: KafkaCluster, topic: str, workdir: Path, **engine: object) -> None:
        self.source, self.target, self.topic, self.workdir = source, target, topic, workdir
        create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
        data = plan_dict(source, target, topic, engine={
            "session_timeout_s": 6, "status_interval_s": 1, "log_interval_s": 2, "batch_size": 500,
            "transaction_timeout_s": 10, **engine})
        data["name"] = topic[-40:].strip("-_") or "workers"
        self.plan: MigrationPlan = plan_from_dict(data)
        self.plan_file = workdir / "plan.yaml"
        self.plan_file.write_text(yaml.safe_dump(data))
        self.workers: dict[str, subprocess.Popen] = {}
        self.sent = 0

    def start_worker(self, worker_id: str) -> None:
        log = (self.workdir / f"{worker_id}.log").open("w")
        self.workers[worker_id] = subprocess.Popen(
            [sys.executable, "-m", "mirror_engine.cli", "worker", "--plan", str(self.plan_file),
             "--worker-id", worker_id, "--status-port", "0"],
            stdout=log, stderr=subprocess.STDOUT)

    def log(self, worker_id: str) -> str:
        return (self.workdir / f"{worker_id}.log").read_text()

    def produce(self, count: int) -> None:
        now = int(time.time() * 1000)
        produce(self.source, self.topic, [
            (i % PARTITIONS, f"k{i}".encode(), f"value-{i}".encode() * 4, [("seq", str(i).encode())], now + i)
            for i in range(self.sent, self.sent + count)])
        self.sent += count

    def statuses(self) -> dict[str, dict]:
        return {s["worker"]: s for s in read_worker_statuses(self.plan, self.target.client_config(), window_s=30)}

    def wait(self, condition: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            for worker_id, process in self.workers.items():
                assert process.poll() is None or process.returncode in (0, -9), \
                    f"worker {worker_id} exited with {process.returncode}:\n{self.log(worker_id)[-3000:]}"
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.5)

    def caught_up(self) -> bool:
        lag = replication_lag(self.plan, self.source.client_config(), self.target.client_config())
        return bool(lag) and sum(lag.values()) == 0

    def stop_all(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for worker_id, process in self.workers.items():
            process.wait(timeout=90)
            assert process.returncode in (0, -9), f"{worker_id}:\n{self.log(worker_id)[-3000:]}"

    def compare(self, translate: bool = False) -> None:
        """Every source record is on the target once, in order, by content; with `translate`, every source offset
        also translates through the flow's offset-syncs to its own record's target offset."""
        with FlowMapping(self.plan, self.target.client_config()) as mapping:
            mapping.refresh()
            for partition in range(PARTITIONS):
                source = read_partition(self.source, self.topic, partition)
                target = read_partition(self.target, self.topic, partition)
                assert [r.content() for r in target] == [r.content() for r in source], \
                    f"partition {partition}: {len(target)} records on the target, {len(source)} on the source"
                wrong = [(s.offset, t.offset) for s, t in zip(source, target, strict=True)
                         if translate and mapping.translate(self.topic, partition, s.offset) != t.offset]
                assert not wrong, f"partition {partition}: {len(wrong)} offsets mistranslated, e.g. {wrong[:3]}"


def group_state(cluster: KafkaCluster, group: str) -> tuple[str, int]:
    """(state, members) of a consumer group."""
    admin = AdminClient(cluster.client_config())
    description = admin.describe_consumer_groups([group])[group].result(timeout=15)
    return description.state.name, len(description.members)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_two_workers_share_the_flow_and_survive_kill_9_of_one(kafka_pair, unique_name, tmp_path, exactly_once):
    source, target = kafka_pair
    flow = Flow(source, target, f"{unique_name}-share", tmp_path, exactly_once=exactly_once)
    flow.produce(20_000)
    flow.start_worker("w1")
    flow.start_worker("w2")

    # Both take a share of the partitions through the group, and both copy.
    def both_copying() -> bool:
        statuses = flow.statuses()
        return all(w in statuses and statuses[w]["partitions"] and statuses[w]["records_copied"] > 0
                   for w in ("w1", "w2"))
    stop_producing = threading.Event()

    def keep_producing() -> None:
        while not stop_producing.is_set():
            flow.produce(400)
            time.sleep(0.1)
    producer = threading.Thread(target=keep_producing)
    producer.start()
    try:
        flow.wait(both_copying, "both workers to own partitions and copy")
        shares = {w: {(p["topic"], p["partition"]) for p in s["partitions"]} for w, s in flow.statuses().items()}
        assert not shares["w1"] & shares["w2"], f"a partition owned twice: {shares}"
        # The group hands out the flow's work units, on the target (one per partition for a flow this small), not
        # the source partitions themselves; each worker copies the partitions of the units it holds.
        admin, group = AdminClient(target.client_config()), engine_group_id(flow.plan)
        units = {member.client_id: {tp.partition for tp in member.assignment.topic_partitions
                                    if tp.topic == work_units_topic(flow.plan)}
                 for member in admin.describe_consumer_groups([group])[group].result(timeout=15).members}
        assert sorted(units) == ["w1", "w2"] and sorted(units["w1"] | units["w2"]) == list(range(PARTITIONS)), units
        assert {w: {work_unit(*key, PARTITIONS) for key in shares[w]} for w in units} == units

        # kill -9 mid-copy: no flush, no progress stored, an open transaction left behind in exactly-once mode.
        os.kill(flow.workers["w1"].pid, signal.SIGKILL)
        flow.workers["w1"].wait()
        time.sleep(3)
    finally:
        stop_producing.set()
        producer.join()

    # The survivor takes every partition up from the stored progress and copies to the end.
    flow.wait(lambda: len(flow.statuses().get("w2", {}).get("partitions", [])) == PARTITIONS,
              "w2 to take w1's partitions")
    flow.wait(flow.caught_up, "the copy to catch up", timeout_s=180)
    assert "took" in flow.log("w2") and "partition(s) from the group" in flow.log("w2")
    flow.stop_all()
    assert sum(end_offsets(source, flow.topic, PARTITIONS)) == flow.sent
    # Exactly once in both modes: at-least-once reconciles what w1 left on the target past its stored progress.
    flow.compare()


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_kill_9_during_a_rebalance_copies_each_record_once(kafka_pair, unique_name, tmp_path, exactly_once):
    """w1 is killed at its first records and started again; it copies alone; w2 joins, and w1 is killed while the
    group moves partitions from it to w2, and comes back with its --worker-id. In exactly-once mode each restart
    fences the transaction the kill left open at once, not at its timeout (set far beyond the test here: until
    then read_committed readers, the copy's own lag included, would stop before that transaction)."""
    source, target = kafka_pair
    engine: dict[str, object] = {"progress_interval_s": 1, "exactly_once": exactly_once}
    if exactly_once:
        engine["transaction_timeout_s"] = 600
    flow = Flow(source, target, f"{unique_name}-rebalance", tmp_path, **engine)
    flow.produce(100_000)
    flow.start_worker("w1")
    # Killed at its first records: before its first commit (exactly-once) or its first stored progress.
    flow.wait(lambda: sum(end_offsets(target, flow.topic, PARTITIONS)) > 0, "w1's first records", timeout_s=60)
    os.kill(flow.workers["w1"].pid, signal.SIGKILL)
    flow.workers["w1"].wait()
    flow.start_worker("w1")
    stop_producing = threading.Event()

    def keep_producing() -> None:  # records keep coming: w1 always has copied some past its stored progress
        while not stop_producing.is_set():
            flow.produce(400)
            time.sleep(0.05)
    producer = threading.Thread(target=keep_producing)
    producer.start()
    try:
        flow.wait(lambda: flow.statuses().get("w1", {}).get("records_copied", 0) > 10_000, "w1 to copy")
        flow.start_worker("w2")
        # The rebalance starts once w2 joined the group: w1 then gives partitions up (storing their progress)
        # while still copying the others.
        flow.wait(lambda: "subscribed" in flow.log("w2"), "w2 to join", timeout_s=60)
        time.sleep(0.3)
        os.kill(flow.workers["w1"].pid, signal.SIGKILL)
        flow.workers["w1"].wait()
        time.sleep(2)
        flow.start_worker("w1")  # back with the same id: the group shares the partitions again
    finally:
        stop_producing.set()
        producer.join()
    flow.wait(flow.caught_up, "the copy to catch up", timeout_s=180)
    flow.stop_all()
    # Whether w1 left a tail past its stored progress depends on the moment of the kill (the crash test asserts
    # the reconciliation itself); whatever it left, each record is on the target once.
    flow.compare(translate=True)


def test_partitions_given_up_while_paused_are_copied_when_they_come_back(kafka_pair, unique_name, tmp_path):
    """librdkafka keeps a partition's pause across its unassignment. A worker paused with the flow gives half its
    partitions to a worker joining then; the flow resumes, the second worker leaves, and the first gets them back:
    it must copy them, not hold them paused for good (which `test_pause_resume_and_stop_reach_every_worker` met now
    and then, whenever the group happened to hand a worker back partitions it had given up while paused)."""
    from mirror_engine.flow import ControlChannel
    from mirror_engine.observe import partition_count

    source, target = kafka_pair
    flow = Flow(source, target, f"{unique_name}-back", tmp_path)
    control = ControlChannel(flow.plan, target.client_config())
    flow.produce(800)
    flow.start_worker("w1")
    flow.wait(flow.caught_up, "the first copy")
    control.set_flow_state("paused")
    flow.wait(lambda: flow.statuses().get("w1", {}).get("state") == "paused", "w1 paused", 30)

    def counts() -> dict[str, int]:
        return {worker: partition_count(status) for worker, status in flow.statuses().items()}

    flow.start_worker("w2")
    flow.wait(lambda: counts().get("w1") == counts().get("w2") == PARTITIONS // 2, "the partitions shared", 60)
    control.set_flow_state("running")
    flow.wait(lambda: all(s["state"] == "running" for s in flow.statuses().values()), "both workers running", 30)
    flow.workers["w2"].send_signal(signal.SIGTERM)
    assert flow.workers["w2"].wait(timeout=60) == 0, flow.log("w2")[-3000:]
    flow.wait(lambda: counts().get("w1") == PARTITIONS, "w1 to hold every partition again", 60)
    flow.produce(800)
    flow.wait(flow.caught_up, "the copy of the partitions w1 gave up while paused", 60)
    flow.stop_all()
    flow.compare()


def test_pause_resume_and_stop_reach_every_worker(kafka_pair, unique_name, tmp_path):
    from mirror_engine.flow import ControlChannel

    source, target = kafka_pair
    flow = Flow(source, target, f"{unique_name}-ctl", tmp_path)
    control = ControlChannel(flow.plan, target.client_config())
    flow.produce(4_000)
    flow.start_worker("w1")
    flow.start_worker("w2")
    flow.wait(flow.caught_up, "the first copy")

    def target_total() -> int:
        return sum(end_offsets(target, flow.topic, PARTITIONS))

    # Pause: within seconds nothing more reaches the target while the source grows.
    control.set_flow_state("paused")
    flow.wait(lambda: all(s["state"] == "paused" for s in flow.statuses().values()), "both workers paused", 30)
    paused_at = target_total()
    flow.produce(2_000)
    time.sleep(4)
    assert target_total() == paused_at, "records were copied while the flow was paused"
    assert not flow.caught_up()

    # Resume: the copy goes on from where it stopped.
    control.set_flow_state("running")
    flow.wait(flow.caught_up, "the copy after resume", 60)

    # Stop (through the CLI, as an operator would): the workers store their progress and leave the group.
    flows = [sys.executable, "-m", "mirror_engine.cli", "flows"]
    stopped = subprocess.run([*flows, "stop", "--plan", str(flow.plan_file)], capture_output=True, text=True,
                             timeout=60)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    group = f"mirror-engine.{flow.plan.name}"
    flow.wait(lambda: group_state(target, group)[1] == 0, "the workers to leave the group", 60)
    flow.wait(lambda: all(s["state"] == "stopped" and not s["partitions"] for s in flow.statuses().values()),
              "both workers to report stopped with no partitions", 30)
    stopped_at = target_total()
    flow.produce(2_000)
    time.sleep(4)
    assert target_total() == stopped_at, "records were copied while the flow was stopped"

    # Start: they join again and copy on from the stored progress.
    started = subprocess.run([*flows, "start", "--plan", str(flow.plan_file)], capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 0, started.stderr
    flow.wait(flow.caught_up, "the copy after start", 90)
    flow.stop_all()
    flow.compare()  # clean pauses and stops re-send nothing


def test_status_topic_cli_and_prometheus_metrics(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    flow = Flow(source, target, f"{unique_name}-stat", tmp_path)
    flow.produce(30_000)
    flow.start_worker("w1")
    try:
        flow.wait(lambda: "w1" in flow.statuses(), "a status record")
        url = flow.statuses()["w1"]["http"]

        # A single engine beside the workers would copy their partitions twice: it refuses to start.
        single = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(flow.plan_file),
                                 "--max-seconds", "5"], capture_output=True, text=True, timeout=120)
        assert single.returncode == 1 and "worker(s) of this flow run" in single.stderr, single.stderr[-2000:]
        assert url and url.startswith("http://127.0.0.1:")

        def metrics() -> dict[str, dict[tuple, float]]:
            text = urllib.request.urlopen(f"{url}/metrics", timeout=5).read().decode()
            families = {}
            for family in text_string_to_metric_families(text):  # raises on malformed text
                families[family.name] = {tuple(sorted(s.labels.items())): s.value for s in family.samples}
            return families

        def lag_metric() -> float:
            return sum(metrics().get("mirror_engine_lag_records", {}).values())

        flow.wait(flow.caught_up, "the copy")
        flow.wait(lambda: lag_metric() == 0 and len(metrics()["mirror_engine_lag_records"]) == PARTITIONS,
                  "the lag metric to reach 0 on every partition", 30)
        families = metrics()
        assert sum(families["mirror_source_record_count"].values()) == flow.sent
        assert sum(families["mirror_source_byte_count"].values()) > 0
        assert all(v >= 0 for v in families["mirror_source_replication_latency_ms"].values())
        labels = dict(next(iter(families["mirror_source_record_count"])))
        assert labels == {**labels, "source": "src", "target": "tgt", "topic": flow.topic}

        status = json.loads(urllib.request.urlopen(f"{url}/status", timeout=5).read())
        assert status["worker"] == "w1" and status["lag"] == 0 and len(status["partitions"]) == PARTITIONS

        # The lag shows while records wait to be copied, and falls back to 0.
        from mirror_engine.flow import ControlChannel

        ControlChannel(flow.plan, target.client_config()).set_flow_state("paused")
        flow.wait(lambda: flow.statuses()["w1"]["state"] == "paused", "the pause", 30)
        flow.produce(1_000)
        flow.wait(lambda: lag_metric() == 1_000, "the lag metric to show 1,000 records", 30)
        cli = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "status", "--plan", str(flow.plan_file)],
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stderr
        row = next(line for line in cli.stdout.splitlines() if line.startswith(flow.topic[:40]))
        assert row.split()[1:3] == [str(PARTITIONS), "1,000"], cli.stdout
        ControlChannel(flow.plan, target.client_config()).set_flow_state("running")
        flow.wait(lambda: lag_metric() == 0, "the lag metric to fall to 0", 30)
    finally:
        flow.stop_all()
    assert flow.statuses()["w1"]["state"] == "exited"


def test_a_worker_refuses_to_start_beside_a_single_engine_of_the_flow(kafka_pair, unique_name, tmp_path):
    from mirror_engine.replication import Replicator

    source, target = kafka_pair
    flow = Flow(source, target, f"{unique_name}-single", tmp_path)
    flow.produce(100)
    single = Replicator(flow.plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=single.run, kwargs={"max_seconds": 120}, daemon=True)
    runner.start()
    try:
        flow.wait(lambda: flow.statuses().get(single.worker_id, {}).get("mode") == "single", "the engine's status")
        worker = subprocess.run([sys.executable, "-m", "mirror_engine.cli", "worker", "--plan", str(flow.plan_file),
                                 "--max-seconds", "5"], capture_output=True, text=True, timeout=120)
    finally:
        single.stop()
        runner.join(60)
    assert worker.returncode == 1 and "a single engine of this flow runs" in worker.stderr, worker.stderr[-2000:]
