"""A detached engine is found and stopped by its identity (pid, create time, command line, host), never by pid alone."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from mirror_engine.mm2 import PlanReference
from mirror_engine.replication import DetachedWorker, SupervisionError, find_engine, start_detached, stop_engine


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen]:
    """An unrelated process: what a reused pid belongs to after a worker restart."""
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def _record(state_file, pid: int, **changes) -> None:
    identity = {"pid": pid, "create_time": 1.0, "cmdline": [sys.executable, "-m", "mirror_engine.cli", "worker"],
                "host": socket.gethostname(), "log": "engine.log", **changes}
    state_file.write_text(json.dumps(identity))


def test_a_reused_pid_is_neither_reported_as_the_engine_nor_signalled(tmp_path, stranger):
    state = tmp_path / "plan.pid"
    _record(state, stranger.pid)
    assert find_engine(state) is None
    with pytest.raises(SupervisionError, match=f"no longer runs.*pid {stranger.pid} was not signalled"):
        stop_engine(state, timeout_s=1)
    assert stranger.poll() is None, "the unrelated process was signalled"
    # Same pid and command line, but started at another time: still not the engine.
    process = psutil.Process(stranger.pid)
    _record(state, stranger.pid, cmdline=process.cmdline())
    assert find_engine(state) is None


def test_the_engine_is_found_and_stopped_by_its_identity(tmp_path):
    state, log = tmp_path / "plan.pid", tmp_path / "plan.log"
    identity = start_detached(["sleep", "300"], {"PATH": "/usr/bin:/bin"}, log, state, settle_s=0.2)
    assert find_engine(state) == identity
    stopped, killed = stop_engine(state, timeout_s=10)
    assert stopped == identity and not killed
    assert not psutil.pid_exists(identity.pid) or psutil.Process(identity.pid).status() == psutil.STATUS_ZOMBIE
    assert not state.exists()


def test_an_engine_deaf_to_sigterm_is_killed(tmp_path):
    state, log = tmp_path / "plan.pid", tmp_path / "plan.log"
    ignoring = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                      "print('ready', flush=True); time.sleep(300)"]
    identity = start_detached(ignoring, {}, log, state, settle_s=0.5)
    _stopped, killed = stop_engine(state, timeout_s=0.5)
    assert killed
    assert not psutil.pid_exists(identity.pid) or psutil.Process(identity.pid).status() == psutil.STATUS_ZOMBIE


def test_an_engine_of_another_host_or_none_at_all_fails_with_a_sentence(tmp_path, stranger):
    state = tmp_path / "plan.pid"
    with pytest.raises(SupervisionError, match="no engine was started on this host"):
        stop_engine(state)
    _record(state, stranger.pid, host="worker-7")
    with pytest.raises(SupervisionError, match="runs on worker-7, not on this host"):
        find_engine(state)
    with pytest.raises(SupervisionError, match="runs on worker-7"):
        stop_engine(state)
    state.write_text(str(stranger.pid))  # a bare pid, as older versions wrote
    with pytest.raises(SupervisionError, match="does not record an engine's identity"):
        stop_engine(state)
    assert stranger.poll() is None


def test_an_engine_that_exits_at_once_says_why(tmp_path):
    state, log = tmp_path / "plan.pid", tmp_path / "plan.log"
    with pytest.raises(SupervisionError, match=r"exited at once.*bad plan"):
        start_detached([sys.executable, "-c", "import sys; print('bad plan'); sys.exit(2)"], {}, log, state)
    assert not state.exists()


def test_a_detached_worker_runs_mirror_engine_worker_with_an_id_stable_on_its_host(tmp_path):
    worker = DetachedWorker("shop", tmp_path)
    assert (worker.state_file, worker.log_file) == (tmp_path / "mirror-engine" / "shop.pid",
                                                    tmp_path / "mirror-engine" / "shop.log")
    plan = PlanReference(tmp_path / "plans" / ".." / "shop.yaml")
    assert worker.command(plan, "airflow") == [
        sys.executable, "-m", "mirror_engine.cli", "worker", "--plan", str((tmp_path / "shop.yaml").resolve()),
        "--worker-id", f"airflow-{socket.gethostname()}"]
    flow = PlanReference.parse(f"{tmp_path}/mm2.properties#a->b")
    assert worker.command(flow, "airflow")[4:-2] == [
        "--mm2-config", str((tmp_path / "mm2.properties").resolve()), "--flow", "a->b"]


def test_a_detached_worker_is_started_once_and_stopped_by_its_identity(tmp_path, monkeypatch):
    worker = DetachedWorker("shop", tmp_path)
    monkeypatch.setattr(DetachedWorker, "command", lambda self, plan, prefix: ["sleep", "300"])
    assert not worker.started_here()
    plan, env = PlanReference(tmp_path / "shop.yaml"), {"PATH": "/usr/bin:/bin"}
    first, started = worker.ensure_running(plan, env, "airflow")
    try:
        assert started and worker.started_here()
        again, started_again = worker.ensure_running(plan, env, "airflow")
        assert again == first and not started_again
    finally:
        stopped, killed = worker.stop(timeout_s=10)
    assert stopped == first and not killed and not worker.started_here()
