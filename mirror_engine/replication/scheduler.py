"""A small scheduler of the engine's periodic work, run between consumed batches (one thread, no timers).

Each task runs when its interval has passed since it last ran, one at a time in the order added; a task
whose interval is 0 or less never runs (a feature turned off).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class PeriodicTask:
    name: str
    interval_s: float
    action: Callable[[], None]
    last_run: float


class Scheduler:
    def __init__(self) -> None:
        self.tasks: list[PeriodicTask] = []

    def every(self, name: str, interval_s: float, action: Callable[[], None], *, at_once: bool = False) -> None:
        """Run `action` every `interval_s` seconds, the first time at once or after one interval."""
        if interval_s > 0:
            self.tasks.append(PeriodicTask(name, interval_s, action, float("-inf") if at_once else time.monotonic()))

    def run_due(self, now: float) -> None:
        for task in self.tasks:
            if now - task.last_run >= task.interval_s:
                task.action()
                task.last_run = now
