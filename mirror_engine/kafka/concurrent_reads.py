"""Reads of the clusters made at the same time instead of one after another.

Start-up asks both clusters for thousands of partitions' metadata, configs and offsets: each request waits on a
broker, not on this process, so independent ones overlap. A broker answers the requests of one connection in
order, one at a time, so reads meant to overlap on the same cluster go through admin clients of their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from confluent_kafka import KafkaException

T = TypeVar("T")


def at_once(*reads: Callable[[], Any]) -> list[Any]:
    """The results of `reads`, each run in a thread of its own, in their order. When some raise, every read is still
    waited for (none is left running), then the first one's error is raised."""
    if len(reads) <= 1:
        return [read() for read in reads]
    with ThreadPoolExecutor(max_workers=len(reads), thread_name_prefix="read") as pool:
        futures = [pool.submit(read) for read in reads]
        errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]


def beside(read: Callable[[], T]) -> Future[T]:
    """`read` started in a thread of its own, for a caller with other work to do before it needs the answer: the
    future's `result()` then waits for it (and raises its error)."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(read())
        except BaseException as error:  # handed to whoever asks for the result
            future.set_exception(error)

    threading.Thread(target=run, name="read-beside", daemon=True).start()
    return future


def refusal(future: Future) -> KafkaException | None:
    """The error an admin client's future failed with, taken without raising it. A raised error keeps its traceback,
    whose frames hold every future of the request it came in and their errors: a reference cycle, which the engine,
    collecting garbage itself, frees only in a full collection (see `Replicator._collect_garbage`). At start-up on
    a busy cluster the retried ListOffsets of 2,000 partitions left about 40,000 failed futures, some 40 MiB, in
    such cycles."""
    error = future.exception()
    if error is not None and not isinstance(error, KafkaException):
        raise error
    return error
