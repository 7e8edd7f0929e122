"""What went wrong in a running engine, shared by its parts."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

log = logging.getLogger("mirror_engine.replication.engine")


class EngineError(RuntimeError):
    """The engine cannot go on; the message says what to do."""


@dataclass
class Faults:
    """`fatal` stops the engine (its loop ends and `run` raises it); `last_error` is shown in the status;
    `blocked_topics` are source topics not copied because the target refused their topic, with the reason."""

    fatal: str = ""
    last_error: str = ""
    blocked_topics: dict[str, str] = field(default_factory=dict)


@dataclass
class OutageWatch:
    """One line of its own when every broker of a cluster is down, and one when it answers again
    (librdkafka's own lines repeat every few seconds and say neither)."""

    outages: dict[str, tuple[float, str]] = field(default_factory=dict)  # alias -> (since, as a time of day)

    def began(self, alias: str, bootstrap: str | None) -> None:
        if alias in self.outages:
            return
        self.outages[alias] = (time.monotonic(), datetime.now().astimezone().strftime("%H:%M:%S"))
        log.warning("cluster '%s' (%s) does not answer since %s: all its brokers are down; copying waits and goes "
                    "on by itself when it answers", alias, bootstrap, self.outages[alias][1])

    def ended(self, alias: str) -> None:
        began, since = self.outages.pop(alias)
        log.warning("cluster '%s' answers again (it did not from %s, %.0f s)", alias, since,
                    time.monotonic() - began)
