"""The processes of a local cluster's nodes: a broker-only node's record, whether a node runs, stopping one."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass
class BrokerNode:
    """A broker-only node (2..N) of a cluster of several brokers: its own folder, client port and process."""

    node_id: int
    home: str
    port: int
    pid: int = 0

    @property
    def log_file(self) -> Path:
        return Path(self.home) / "broker.log"

    def is_running(self) -> bool:
        return process_running(self.pid, self.home)


def process_running(pid: int, home: str) -> bool:
    """The process `pid` is alive and is the one started for `home` (a reused pid would not have `home` on its
    command line)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
        return home.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except (ProcessLookupError, OSError):
        return False


def stop_process(name: str, pid: int, home: str, timeout_s: float) -> None:
    """SIGTERM a broker and wait; SIGKILL it if it does not stop in time."""
    if not process_running(pid, home):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not process_running(pid, home):
            reap(pid)
            return
        reap(pid)
        time.sleep(0.2)
    log.warning("cluster %s did not stop in %.0f s; killing pid %d", name, timeout_s, pid)
    os.kill(pid, signal.SIGKILL)
    reap(pid)


def reap(pid: int) -> None:
    """Collect a finished child so it does not linger as a zombie (no-op for non-children)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
