"""Periodic work run one named task at a time, as MirrorMaker 2's `Scheduler` runs its connectors' timers.

Invariant: a task runs at most once per `interval_s` (its next run is due `interval_s` after the start of the
previous one, or later when an earlier task was still running), and never two at once. A task that raises is
logged with its name and runs again at its next time: one failing task never stops the others.

Hand-written (90 lines) rather than APScheduler or `sched`: APScheduler runs jobs on its own executor threads,
while the engine runs its due tasks on the copy thread between batches (`run_due`); `sched` has one-off events
only, and an action that raises ends its `run()`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

__all__ = ["PeriodicTask", "Scheduler"]


@dataclass(frozen=True)
class PeriodicTask:
    """A named piece of periodic work: first run `first_after_s` after the start, then every `interval_s`."""

    name: str
    interval_s: float
    run: Callable[[], None]
    first_after_s: float = 0.0


class Scheduler:
    """Runs its tasks when due, in its own thread (`start`) or in the caller's (`run`), until `stop()`."""

    def __init__(self, tasks: list[PeriodicTask], *, clock: Callable[[], float] = time.monotonic,
                 name: str = "periodic") -> None:
        self.tasks = tasks
        self.clock = clock
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._due: dict[str, float] = {}

    def run_due(self) -> float:
        """Run every task that is due now, in order; return the seconds until the next one is."""
        now = self.clock()
        for task in self.tasks:
            due = self._due.setdefault(task.name, now + task.first_after_s)
            if self._stop.is_set() or due > now:
                continue
            try:
                task.run()
            except Exception as error:  # the next run may succeed; the other tasks go on meanwhile
                log.error("%s: %s failed (retried in %.0f s): %s", self.name, task.name, task.interval_s, error,
                          exc_info=True)
            self._due[task.name] = now + task.interval_s
            now = self.clock()
        return max(0.0, min(self._due.values(), default=now + 1.0) - now)

    def run_soon(self, name: str) -> None:
        """Make the named task due now (called from a task of this scheduler: it runs within this pass)."""
        self._due[name] = self.clock()

    def run(self, max_seconds: float | None = None) -> None:
        """Run the tasks in this thread until `stop()` (or for `max_seconds`)."""
        started = self.clock()
        while not self._stop.is_set():
            wait = self.run_due()
            if max_seconds is not None:
                left = started + max_seconds - self.clock()
                if left <= 0:
                    return
                wait = min(wait, left)
            self._stop.wait(wait)

    def start(self) -> None:
        """Run the tasks in a background thread of their own."""
        self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float | None = None) -> bool:
        """No task starts after this; wait up to `timeout_s` for the running one. True once the thread ended."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()
