"""Every enabled flow of one MirrorMaker 2 file, run from one command as MM2's dedicated mode runs them: one child
process per flow (`mirror-engine run --mm2-config FILE --flow a->b`), watched by this one.

A process per flow rather than a thread: the copy's thread owns the process's garbage collection (disabled, and
collected between batches: `Replicator.run`) and its signals, each flow's copy gets an interpreter and a core of its
own, and a flow that fails (a fatal client error, a cluster gone) ends alone while the others go on. Each child keeps
its flow's own progress, control, status, heartbeats and checkpoints topics and worker group, exactly as when it
runs alone.

Every line a child prints comes out here prefixed with its flow (`[a->b] ...`); its closing JSON summary comes out on
stdout with a `flow` field. SIGTERM or SIGINT here stops every child cleanly; a child outlives nothing: killed with
this process (kill -9 included), it is sent SIGTERM by the kernel (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import IO

log = logging.getLogger("mirror_engine")

__all__ = ["FlowProcess", "FlowSetRun"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it exits, however it exits."""
    import ctypes  # here: a single flow's start does not load it

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class FlowProcess:
    flow: str  # "a->b"
    process: subprocess.Popen[str]
    relays: list[threading.Thread]


class FlowSetRun:
    """`flows` ("a->b"), each in a child process running `command_of(flow)`."""

    def __init__(self, flows: Sequence[str], command_of: Callable[[str], list[str]],
                 stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> None:
        self.flows = list(flows)
        self.command_of = command_of
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.children: list[FlowProcess] = []
        self._printing = threading.Lock()
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Every child stops after its in-flight records (SIGTERM, as a single `run`); none starts after this."""
        self._stopping.set()
        for child in self.children:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)

    def run(self, stop_on_signals: bool = True) -> dict[str, int]:
        """Start every flow, relay their output until each has ended; each flow's exit status. From the main
        thread, `stop_on_signals`: SIGTERM and SIGINT stop them all (the previous handlers come back after)."""

        def stop(signum: int, _frame: FrameType | None) -> None:
            log.info("signal %d: stopping every flow after its in-flight records", signum)
            self.stop()

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)} \
            if stop_on_signals else {}
        try:
            # All started before any relay thread: the children's pre-exec step runs in a process with one thread.
            for flow in self.flows:
                if self._stopping.is_set():  # stopped while starting them: the rest are not started
                    break
                process = subprocess.Popen(self.command_of(flow), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                           stdin=subprocess.DEVNULL, text=True, errors="replace",
                                           start_new_session=True, preexec_fn=_die_with_parent)
                self.children.append(FlowProcess(flow, process, []))
            log.info("running %d flows, one process each: %s", len(self.flows),
                     ", ".join(f"{child.flow} (pid {child.process.pid})" for child in self.children))
            for child in self.children:
                assert child.process.stdout is not None and child.process.stderr is not None
                child.relays = [
                    threading.Thread(target=self._relay, args=(child.flow, child.process.stdout, True), daemon=True),
                    threading.Thread(target=self._relay, args=(child.flow, child.process.stderr, False), daemon=True),
                ]
                for relay in child.relays:
                    relay.start()
            return self._wait()
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _wait(self) -> dict[str, int]:
        """Each flow's exit status, in the order they end; one that fails is said at once, the others go on."""
        statuses: dict[str, int] = {}
        while len(statuses) < len(self.children):
            for child in self.children:
                if child.flow in statuses:
                    continue
                try:
                    code = child.process.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    continue
                for relay in child.relays:
                    relay.join()
                statuses[child.flow] = code
                running = [other.flow for other in self.children if other.flow not in statuses]
                if code != 0:
                    self._print(self.stderr, f"error: flow {child.flow} ended with status {code} (its log above, "
                                             f"[{child.flow}]); " + (f"still running: {', '.join(running)}"
                                                                     if running else "no flow is left"))
        return statuses

    def _relay(self, flow: str, stream: IO[str], is_stdout: bool) -> None:
        for line in stream:
            line = line.rstrip("\n")
            if is_stdout:
                self._print(self.stdout, _with_flow(flow, line))
            else:
                self._print(self.stderr, f"[{flow}] {line}")

    def _print(self, out: IO[str], line: str) -> None:
        with self._printing:
            print(line, file=out, flush=True)


def _with_flow(flow: str, line: str) -> str:
    """A child's JSON summary with its flow named; any other line prefixed with it."""
    try:
        summary = json.loads(line)
    except ValueError:
        return f"[{flow}] {line}"
    return json.dumps({"flow": flow, **summary}) if isinstance(summary, dict) else f"[{flow}] {line}"
