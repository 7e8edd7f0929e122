"""The engine process's heap given back to the system, when the copy goes idle and while it copies.

While it copies, librdkafka allocates and frees the prefetched records and the producer's queue by the
hundred thousand from several threads. glibc's malloc keeps what they free in its arenas for reuse, so
after a backlog the resident set would stay at its peak with nothing left to copy. `malloc_trim(0)` gives
every arena's free pages back; it runs once per idle spell (nothing copied for `IDLE_TRIM_AFTER_S`), from
the engine's periodic work, never in the copy loop. Elsewhere than glibc it does nothing.

With thousands of partitions (a producer per hundred topics, each with its threads and arenas) the free pages
kept while copying grow to tens of MiB: at 10,000 partitions a trim in the middle of the copy gave back 5 to 44
MiB of 190 to 260. So while records are copied the heap is trimmed too, every `BUSY_TRIM_EVERY_S`, in a thread of
its own: a trim took 2 to 235 ms there (the machine loaded), and ctypes lets the copy's thread run meanwhile.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

__all__ = ["BUSY_TRIM_EVERY_S", "IDLE_TRIM_AFTER_S", "IdleTrim"]

IDLE_TRIM_AFTER_S = 2.0
BUSY_TRIM_EVERY_S = 10.0


def _malloc_trim() -> Callable[[int], int] | None:
    # The C library already loaded in this process (ctypes.util.find_library would run ldconfig at start-up).
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


class IdleTrim:
    """Called periodically with the records copied so far: trims the heap once when that count has not
    moved for `after_s` seconds, then not again until records are copied again; while it moves, every
    `busy_every_s` in a thread of its own (`in_background`; a test runs it in place)."""

    def __init__(self, copied: Callable[[], int], *, after_s: float = IDLE_TRIM_AFTER_S,
                 busy_every_s: float = BUSY_TRIM_EVERY_S, clock: Callable[[], float],
                 trim: Callable[[int], int] | None = None,
                 in_background: Callable[[Callable[[], object]], None] | None = None) -> None:
        self.copied = copied
        self.after_s = after_s
        self.busy_every_s = busy_every_s
        self.clock = clock
        self.trim = trim if trim is not None else _malloc_trim()
        self.in_background = in_background or _in_a_thread()
        self._last_count = copied()
        self._moved_at = self._busy_trimmed_at = clock()
        self._trimmed = True  # nothing to give back before the first records
        self.trims = self.busy_trims = 0

    def check(self) -> None:
        count, now = self.copied(), self.clock()
        if count != self._last_count:
            self._last_count, self._moved_at, self._trimmed = count, now, False
            if now - self._busy_trimmed_at >= self.busy_every_s:
                self._busy_trimmed_at = now
                self.busy_trims += 1
                if self.trim is not None:
                    trim = self.trim
                    self.in_background(lambda: trim(0))
        elif not self._trimmed and now - self._moved_at >= self.after_s:
            self._trimmed = True
            self.trims += 1
            if self.trim is not None:
                self.trim(0)


def _in_a_thread() -> Callable[[Callable[[], object]], None]:
    """Runs a call in a thread of its own, unless the previous one is still running (then it is skipped)."""
    running: list[threading.Thread] = []

    def start(call: Callable[[], object]) -> None:
        if running and running[0].is_alive():
            return
        running[:] = [threading.Thread(target=call, name="heap-trim", daemon=True)]
        running[0].start()

    return start
