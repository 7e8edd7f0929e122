"""One writer of a flow's checkpoints and group offsets: the checkpoint lease on real clusters.

Workers of a flow that run the checkpoint loop (engine.run_checkpoints) run it in one of them; when that one is
killed outright, another takes it over and the group offsets keep following the source.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from mirror_engine.cutover import CheckpointLease, LeaseRefused, lease_holder
from mirror_engine.flow import InternalTopics, checkpoint_lease_group, ensure_internal_topics
from mirror_engine.kafka import GroupError, admin_client, commit_offsets, committed_offsets
from mirror_engine.plan import plan_from_dict
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration


def _commit(config: dict[str, str], group: str, offsets: dict[tuple[str, int], int]) -> None:
    commit_offsets(AdminClient(config), group, offsets)  # retried while a fresh cluster's coordinator loads


def test_a_standby_gets_the_lease_only_once_its_holder_leaves(kafka_pair, unique_name):
    source, target = kafka_pair
    plan = plan_from_dict({**plan_dict(source, target, unique_name), "name": unique_name})
    ensure_internal_topics(admin_client(target.client_config()), InternalTopics.for_plan(plan))
    first = CheckpointLease(plan, target.client_config(), "first")
    first.acquire(20)
    second = CheckpointLease(plan, target.client_config(), "second")
    try:
        with pytest.raises(LeaseRefused, match=re.escape("'first' on 127.0.0.1")):
            second.acquire(4)
        assert first.poll() and lease_holder(AdminClient(target.client_config()), plan) == "'first' on 127.0.0.1"
        first.close()
        started = time.monotonic()
        second.acquire(20)
        assert time.monotonic() - started < plan.engine.session_timeout_s, "the standby waited for a timeout"
        assert not first.held
    finally:
        first.close()
        second.close()


def _start_worker(plan_file: Path, worker_id: str, log: Path) -> subprocess.Popen[str]:
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "worker", "--plan", str(plan_file),
                                 "--worker-id", worker_id], stdout=subprocess.DEVNULL, stderr=out, text=True)


def _wait_for(what: str, check: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.3)


def test_workers_run_one_checkpoint_loop_and_another_takes_it_over_after_a_kill_9(kafka_pair, unique_name,
                                                                                   tmp_path):
    source, target = kafka_pair
    topic, group = f"{unique_name}-t", f"{unique_name}-g"
    create_topics(source, [NewTopic(topic, 2, 1)])
    now = int(time.time() * 1000)
    produce(source, topic, [(i % 2, f"k{i}".encode(), b"v", None, now) for i in range(200)])
    _commit(source.client_config(), group, {(topic, 0): 40, (topic, 1): 10})
    data = plan_dict(source, target, topic, groups={"include": [group]},
                     engine={"run_checkpoints": True, "session_timeout_s": 6},
                     cutover={"checkpoint_interval_s": 1})
    data["name"] = unique_name
    plan = plan_from_dict(data)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    workers = {name: _start_worker(plan_file, name, tmp_path / f"{name}.log") for name in ("w1", "w2")}
    target_admin = AdminClient(target.client_config())

    def on_target() -> dict[tuple[str, int], int]:
        try:
            return committed_offsets(target_admin, group)
        except GroupError:  # a fresh cluster's group coordinator still loading: ask again
            return {}

    try:
        _wait_for("the group synced on the target", lambda: on_target() == {(topic, 0): 40, (topic, 1): 10}, 90)
        lease_group = checkpoint_lease_group(plan)
        _wait_for("both workers in the lease group", lambda: len(target_admin.describe_consumer_groups(
            [lease_group])[lease_group].result().members) == 2, 30)
        holder = lease_holder(target_admin, plan)
        assert holder is not None and holder.count("mirror-engine-worker-") == 1, holder
        killed = "w1" if "mirror-engine-worker-w1'" in holder else "w2"
        survivor = "w2" if killed == "w1" else "w1"
        assert "checkpoint lease of plan" not in (tmp_path / f"{survivor}.log").read_text()

        workers[killed].send_signal(signal.SIGKILL)
        workers[killed].wait(10)
        _commit(source.client_config(), group, {(topic, 0): 70, (topic, 1): 90})
        _wait_for("the survivor to sync the group's new offsets", lambda: on_target()
                  == {(topic, 0): 70, (topic, 1): 90}, plan.engine.session_timeout_s + 30)
        assert f"taken by mirror-engine-worker-{survivor}" in (tmp_path / f"{survivor}.log").read_text()
    except AssertionError as failed:
        logs = "\n".join(f"--- {name}:\n" + (tmp_path / f"{name}.log").read_text()[-2500:] for name in workers)
        raise AssertionError(f"{failed}\n{logs}") from None
    finally:
        for process in workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in workers.values():
            process.wait(60)
    assert workers[survivor].returncode == 0, (tmp_path / f"{survivor}.log").read_text()[-3000:]


def test_the_airflow_checkpoint_check_only_reads_while_a_process_holds_the_lease(kafka_pair, unique_name):
    from mirror_engine.cutover import CheckpointsCurrent
    from mirror_engine.kafka import list_offsets
    from mirror_engine.replication import Replicator

    source, target = kafka_pair
    topic, group = f"{unique_name}-t", f"{unique_name}-g"
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, [(0, f"k{i}".encode(), b"v", None, int(time.time() * 1000)) for i in range(50)])
    _commit(source.client_config(), group, {(topic, 0): 30})
    data = plan_dict(source, target, topic, groups={"include": [group]})
    data["name"] = unique_name
    plan = plan_from_dict(data)
    assert Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=60,
                                                                                until_caught_up=True).ok
    target_admin = AdminClient(target.client_config())
    checkpoints = TopicPartition(InternalTopics.for_plan(plan).checkpoints, 0)
    holder = CheckpointLease(plan, target.client_config(), "the-holder")
    check = CheckpointsCurrent(plan, source.client_config(), target.client_config())
    try:
        holder.acquire(20)
        written = list_offsets(target_admin, [checkpoints], OffsetSpec.latest())
        waiting = check.check()
        assert not waiting.done and "not at their translation" in waiting.progress, waiting
        assert "written by the flow's checkpoint loop in 'the-holder'" in waiting.progress
        assert committed_offsets(target_admin, group) == {}
        assert list_offsets(target_admin, [checkpoints], OffsetSpec.latest()) == written
        holder.close()
        done = check.check()  # no holder: the check writes, as before
        assert done.done, done
        assert committed_offsets(target_admin, group) == {(topic, 0): 30}
    finally:
        holder.close()
        check.close()
