"""The Airflow tasks that start and stop the detached engine call `mirror_engine.replication.supervision`: a pid
that now belongs to another process is neither taken for the engine nor signalled."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator

import pytest
import yaml

PLAN = {"name": "supervised", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
        "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}}


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen]:
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def plan_file(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    path = tmp_path / "supervised.yaml"
    path.write_text(yaml.safe_dump(PLAN))
    return path


def _state_of_an_engine_long_gone(tmp_path, pid: int) -> None:
    (tmp_path / "mirror-engine").mkdir(exist_ok=True)
    (tmp_path / "mirror-engine" / "supervised.pid").write_text(json.dumps({
        "pid": pid, "create_time": 1.0, "cmdline": ["python", "-m", "mirror_engine.cli", "worker"],
        "host": socket.gethostname(), "log": ""}))


def test_the_stop_task_fails_with_a_sentence_and_leaves_a_reused_pid_alone(plan_file, tmp_path, stranger):
    from airflow.sdk.exceptions import AirflowFailException
    from kafka_migration.operators.migration import StopReplicationOperator

    _state_of_an_engine_long_gone(tmp_path, stranger.pid)
    task = StopReplicationOperator(task_id="stop_engine", plan_path=str(plan_file))
    with pytest.raises(AirflowFailException, match="no longer runs"):
        task.run({"params": {}})
    assert stranger.poll() is None, "the stop task signalled an unrelated process"


def test_the_stop_task_on_a_host_that_started_no_engine_fails(plan_file):
    from airflow.sdk.exceptions import AirflowFailException
    from kafka_migration.operators.migration import StopReplicationOperator

    task = StopReplicationOperator(task_id="stop_engine", plan_path=str(plan_file))
    with pytest.raises(AirflowFailException, match="no engine was started on this host"):
        task.run({"params": {}})


def test_the_stop_task_skips_when_the_run_starts_no_engine_and_none_was_started_here(plan_file):
    from airflow.sdk.exceptions import AirflowSkipException
    from kafka_migration.operators.migration import StopReplicationOperator

    task = StopReplicationOperator(task_id="stop_engine", plan_path=str(plan_file))
    with pytest.raises(AirflowSkipException, match="engines run as their own service"):
        task.run({"params": {"stages": ["catch_up", "switch_groups", "finish"]}})
