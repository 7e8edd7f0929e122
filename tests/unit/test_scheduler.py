"""The scheduler of periodic work: each task at its interval, one at a time, a failing one retried."""

from __future__ import annotations

import threading

from mirror_engine.scheduler import PeriodicTask, Scheduler


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tasks_run_at_their_own_intervals_from_their_first_time():
    clock, ran = Clock(), []
    scheduler = Scheduler([PeriodicTask("fast", 1, lambda: ran.append("fast")),
                           PeriodicTask("slow", 5, lambda: ran.append("slow"), first_after_s=5)], clock=clock)
    for _ in range(11):
        scheduler.run_due()
        clock.now += 1
    assert ran.count("fast") == 11
    assert ran.count("slow") == 2  # at 105 and 110, not at the start


def test_the_wait_returned_is_until_the_next_due_task():
    clock = Clock()
    scheduler = Scheduler([PeriodicTask("a", 3, lambda: None), PeriodicTask("b", 7, lambda: None)], clock=clock)
    assert scheduler.run_due() == 3
    clock.now += 3
    assert scheduler.run_due() == 3  # b is due at 107, a again at 106


def test_a_failing_task_is_retried_and_never_stops_the_others(caplog):
    clock, ran = Clock(), []

    def broken() -> None:
        raise RuntimeError("cluster away")

    scheduler = Scheduler([PeriodicTask("broken", 1, broken), PeriodicTask("ok", 1, lambda: ran.append(1))],
                          clock=clock)
    for _ in range(3):
        scheduler.run_due()
        clock.now += 1
    assert len(ran) == 3
    assert caplog.text.count("broken failed") == 3 and "cluster away" in caplog.text


def test_run_soon_makes_a_task_due_within_the_same_pass():
    clock, ran = Clock(), []
    scheduler = Scheduler([], clock=clock)
    scheduler.tasks = [PeriodicTask("trigger", 1, lambda: scheduler.run_soon("work")),
                       PeriodicTask("work", 60, lambda: ran.append(clock.now), first_after_s=60)]
    scheduler.run_due()
    assert ran == [100.0]


def test_stop_ends_the_background_thread_and_no_task_starts_after_it():
    started, release = threading.Event(), threading.Event()
    runs = []

    def slow() -> None:
        runs.append(1)
        started.set()
        release.wait(5)

    scheduler = Scheduler([PeriodicTask("slow", 0.01, slow)])
    scheduler.start()
    assert started.wait(5)
    assert scheduler.stop(timeout_s=0.05) is False  # the running task is waited for, not interrupted
    release.set()
    assert scheduler.stop(timeout_s=5) is True
    assert len(runs) == 1
