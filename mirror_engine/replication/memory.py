"""The engine process's heap given back to the system when the copy goes idle.

While it copies, librdkafka allocates and frees the prefetched records and the producer's queue by the
hundred thousand from several threads. glibc's malloc keeps what they free in its arenas for reuse, so
after a backlog the resident set would stay at its peak with nothing left to copy. `malloc_trim(0)` gives
every arena's free pages back; it runs once per idle spell (nothing copied for `IDLE_TRIM_AFTER_S`), from
the engine's periodic work, never in the copy loop. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["IDLE_TRIM_AFTER_S", "IdleTrim"]

IDLE_TRIM_AFTER_S = 2.0


def _malloc_trim() -> Callable[[int], int] | None:
    # The C library already loaded in this process (ctypes.util.find_library would run ldconfig at start-up).
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


class IdleTrim:
    """Called periodically with the records copied so far: trims the heap once when that count has not
    moved for `after_s` seconds, then not again until records are copied again."""

    def __init__(self, copied: Callable[[], int], *, after_s: float = IDLE_TRIM_AFTER_S,
                 clock: Callable[[], float], trim: Callable[[int], int] | None = None) -> None:
        self.copied = copied
        self.after_s = after_s
        self.clock = clock
        self.trim = trim if trim is not None else _malloc_trim()
        self._last_count = copied()
        self._moved_at = clock()
        self._trimmed = True  # nothing to give back before the first records
        self.trims = 0

    def check(self) -> None:
        count, now = self.copied(), self.clock()
        if count != self._last_count:
            self._last_count, self._moved_at, self._trimmed = count, now, False
        elif not self._trimmed and now - self._moved_at >= self.after_s:
            self._trimmed = True
            self.trims += 1
            if self.trim is not None:
                self.trim(0)
