"""A detached engine process, supervised by its identity rather than by a pid alone.

A pid file outlives its process, and the pid is soon given to another one: after a worker restart, a check
by pid would report an unrelated process as the engine (and start none), and a stop would signal it. So
the state file records the process's identity, pid plus its create time and command line (through psutil),
and the host it runs on; a process is the engine only if all of them match. Invariant: this module signals
no process whose identity it has not just matched, and never one on another host.

`DetachedWorker` is what a scheduler's task (the Airflow operator) uses: one engine worker of a plan per host,
its state file and log in one folder, its command line `mirror-engine worker` (which calls `run_flow`).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: `run` never supervises, and its start should not pay for psutil
    import psutil

    from mirror_engine.mm2 import PlanReference

__all__ = ["DetachedWorker", "EngineIdentity", "SupervisionError", "find_engine", "start_detached", "stop_engine"]


class SupervisionError(RuntimeError):
    """The engine cannot be found, started or stopped from here; the message says why and what to do."""


@dataclass(frozen=True)
class EngineIdentity:
    pid: int
    create_time: float  # psutil's, seconds since the epoch: a reused pid has a later one
    cmdline: list[str]
    host: str
    log: str = ""

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def _read(state_file: Path) -> EngineIdentity | None:
    try:
        text = state_file.read_text()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
        return EngineIdentity(int(data["pid"]), float(data["create_time"]), [str(a) for a in data["cmdline"]],
                              str(data["host"]), str(data.get("log", "")))
    except (ValueError, TypeError, KeyError):
        raise SupervisionError(
            f"{state_file} does not record an engine's identity (pid, create time, command line and host; an "
            "older version wrote a bare pid): whether that pid is still the engine cannot be told. Stop the "
            "engine with `mirror-engine flows stop` (every engine of the flow) or by hand, then delete the file"
        ) from None


def _matching(identity: EngineIdentity) -> psutil.Process | None:
    """The live process with this identity, or None (gone, a zombie, or the pid now belongs to another process)."""
    import psutil

    try:
        process = psutil.Process(identity.pid)
        if process.create_time() == identity.create_time and process.cmdline() == identity.cmdline \
                and process.status() != psutil.STATUS_ZOMBIE:
            return process
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
    return None


def _check_host(identity: EngineIdentity, state_file: Path) -> None:
    here = socket.gethostname()
    if identity.host != here:
        raise SupervisionError(
            f"the engine in {state_file} runs on {identity.host}, not on this host ({here}): its processes cannot "
            "be seen or signalled from here. Run this task on that worker (a queue or pool pinned to it), or stop "
            "every engine of the flow with `mirror-engine flows stop` (the flow_control DAG)")


def find_engine(state_file: Path) -> EngineIdentity | None:
    """The engine recorded in `state_file` if it still runs as recorded, else None.

    Raises SupervisionError when the file records an engine on another host, or no identity at all."""
    identity = _read(state_file)
    if identity is None:
        return None
    _check_host(identity, state_file)
    return identity if _matching(identity) is not None else None


def start_detached(command: Sequence[str], env: Mapping[str, str], log_file: Path, state_file: Path,
                   settle_s: float = 2.0) -> EngineIdentity:
    """Start `command` detached (its own session, stdin from /dev/null, output to `log_file`, no descriptor of
    this process), record its identity in `state_file`, and return it once it has run `settle_s` without exiting.
    """
    import psutil

    with log_file.open("a") as log:
        process = subprocess.Popen(list(command), env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   close_fds=True, start_new_session=True)
    # The command line recorded is the one given (the process's argv): read from /proc right after the start it
    # can still be empty while the exec settles.
    identity = EngineIdentity(process.pid, psutil.Process(process.pid).create_time(), list(command),
                              socket.gethostname(), str(log_file))
    state_file.write_text(json.dumps(asdict(identity)))
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=settle_s)  # only an engine that cannot start at all exits this soon
    if process.poll() is not None:
        state_file.unlink(missing_ok=True)
        raise SupervisionError(f"the engine exited at once (status {process.returncode}): "
                               f"{log_file.read_text(errors='replace')[-3000:]}")
    return identity


def stop_engine(state_file: Path, timeout_s: float = 120.0,
                kill_timeout_s: float = 10.0) -> tuple[EngineIdentity, bool]:
    """Stop the engine recorded in `state_file`: SIGTERM (it flushes and stores its progress), and SIGKILL if it
    has not exited within `timeout_s` (a restart re-sends nothing either way). Returns what was stopped, and
    whether it had to be killed.

    Raises SupervisionError, with a sentence, when no engine is recorded here, when the recorded one no longer
    runs (its pid may belong to another process now, which is left alone), or when it runs on another host."""
    import psutil

    identity = _read(state_file)
    if identity is None:
        raise SupervisionError(
            f"no engine was started on this host ({socket.gethostname()}): {state_file} does not exist. If the "
            "start task ran on another worker, stop the engine there, or stop every engine of the flow with "
            "`mirror-engine flows stop` (the flow_control DAG)")
    _check_host(identity, state_file)
    process = _matching(identity)
    if process is None:
        state_file.unlink(missing_ok=True)
        raise SupervisionError(
            f"the engine recorded in {state_file} ({identity.describe()}) no longer runs: it exited on its own "
            f"(see its log {identity.log or 'beside the state file'}); pid {identity.pid} was not signalled, as it "
            "may belong to another process now")
    process.terminate()
    killed = False
    try:
        process.wait(timeout=timeout_s)
    except psutil.TimeoutExpired:
        killed = True
        process.kill()
        try:
            process.wait(timeout=kill_timeout_s)
        except psutil.TimeoutExpired:
            raise SupervisionError(f"the engine ({identity.describe()}) survived SIGTERM for {timeout_s:.0f} s and "
                                   f"SIGKILL for {kill_timeout_s:.0f} s; see {identity.log}") from None
    state_file.unlink(missing_ok=True)
    return identity, killed


@dataclass(frozen=True)
class DetachedWorker:
    """The engine worker of plan `plan_name` detached on this host, its files under `home` (`home/mirror-engine/`:
    `<plan>.pid`, its identity, and `<plan>.log`)."""

    plan_name: str
    home: Path

    @property
    def state_file(self) -> Path:
        return self.home / "mirror-engine" / f"{self.plan_name}.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "mirror-engine" / f"{self.plan_name}.log"

    def started_here(self) -> bool:
        """Whether a worker was started here and not stopped since (its state file is there)."""
        return self.state_file.exists()

    def command(self, plan: PlanReference, worker_prefix: str) -> list[str]:
        """`mirror-engine worker` for the plan, with a worker id stable on this host (`<prefix>-<host>`): a restarted
        worker fences what its predecessor left open (exactly-once)."""
        return [sys.executable, "-m", "mirror_engine.cli", "worker", *plan.cli_arguments(),
                "--worker-id", f"{worker_prefix}-{socket.gethostname()}"]

    def ensure_running(self, plan: PlanReference, env: Mapping[str, str],
                       worker_prefix: str) -> tuple[EngineIdentity, bool]:
        """The worker running here, started if none runs; and whether it was started now. Raises SupervisionError
        with a sentence when it cannot be found or started from here."""
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        running = find_engine(self.state_file)
        if running is not None:
            return running, False
        return start_detached(self.command(plan, worker_prefix), env, self.log_file, self.state_file), True

    def stop(self, timeout_s: float = 120.0) -> tuple[EngineIdentity, bool]:
        """`stop_engine` on this worker: what was stopped, and whether it had to be killed."""
        return stop_engine(self.state_file, timeout_s=timeout_s)
