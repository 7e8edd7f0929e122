"""What went wrong in a running engine, shared by its parts."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from confluent_kafka import KafkaError, KafkaException

log = logging.getLogger("mirror_engine.replication.engine")


class EngineError(RuntimeError):
    """The engine cannot go on; the message says what to do."""


# A producer whose transactional id another one took over: what a run of the same flow started elsewhere causes.
FENCED = frozenset({KafkaError.PRODUCER_FENCED, KafkaError._FENCED})
FENCED_BY_ANOTHER = ("another engine of this flow started with the same transactional id (a second `run` of the plan, "
                     "or a worker with the same --worker-id) and fenced this one: its open transaction is aborted; run "
                     "one engine per flow and unique worker ids")


@dataclass
class Faults:
    """`fatal` stops the engine (its loop ends and `run` raises it); `last_error` is shown in the status;
    `blocked_topics` are source topics not copied because the target refused their topic, with the reason."""

    fatal: str = ""
    last_error: str = ""
    blocked_topics: dict[str, str] = field(default_factory=dict)
    # The engine ends because the target has not answered for engine.outage_timeout_s: its shutdown does not wait
    # minutes for acknowledgements that cannot come (what is unacknowledged is copied again on the next start).
    target_gone: bool = False

    def stop_with(self, sentence: str) -> None:
        """Stop the engine for this reason, unless an earlier fatal error already does."""
        if not self.fatal:
            self.fatal = sentence

    def producer_raised(self, raised: Exception, sentence: str) -> bool:
        """`raised` came out of a target producer's call: True when it is the producer's fatal error, which stops the
        engine (`producer_failed`, `sentence` followed by the error), False for anything else (the caller raises it)."""
        error = kafka_error_raised(raised)
        # A produce() on a producer already failed for good is refused with the generic code _FATAL, not flagged
        # fatal itself: the real reason (a fence, say) is named by the transaction's abort at shutdown.
        if error is None or not (error.args[0].fatal() or error.args[0].code() == KafkaError._FATAL):
            return False
        self.producer_failed(error.args[0], f"{sentence}: {error.args[0].str()}")
        return True

    def producer_failed(self, error: KafkaError, sentence: str) -> None:
        """A fatal error of the target producer, wherever it surfaced (a callback, a commit, a status write):
        fencing is said as such whatever was seen first; otherwise the first fatal error says why."""
        if error.code() in FENCED:
            self.fatal = FENCED_BY_ANOTHER
        elif not self.fatal:
            self.fatal = sentence


def kafka_error_raised(raised: BaseException) -> KafkaException | None:
    """The KafkaException a client's poll() or flush() raised: itself, or the cause of a SystemError.

    confluent-kafka turns a producer's fatal error (fenced by another engine, say) into the exception of the call its
    error callback runs in, and lets the delivery callbacks of that same call run after it: the first of them that
    runs Python code fails with a SystemError whose cause is the fatal error."""
    error = raised if isinstance(raised, KafkaException) else raised.__cause__
    return error if isinstance(error, KafkaException) else None


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

    def overdue(self, bound_s: float | None) -> tuple[str, str]:
        """(the cluster, why the engine ends) when a cluster's outage has lasted longer than `bound_s` (None:
        never), else ("", "")."""
        now = time.monotonic()
        for alias, (began, since) in self.outages.items():
            if bound_s is not None and now - began > bound_s:
                return alias, (f"cluster '{alias}' has not answered since {since} ({now - began:.0f} s, over the "
                               f"plan's engine.outage_timeout_s of {bound_s:.0f} s): the engine ends; its progress is "
                               "stored, and a restart goes on from there once the cluster answers")
        return "", ""

    def ended(self, alias: str) -> None:
        began, since = self.outages.pop(alias)
        log.warning("cluster '%s' answers again (it did not from %s, %.0f s)", alias, since,
                    time.monotonic() - began)


class ClientErrors:
    """What an error a client reports (librdkafka's error callback) means to the engine: a fatal one stops it
    (`Faults`), every broker of a cluster down is an outage (`OutageWatch`), anything else is a debug line.

    `source` and `target`: each cluster's (alias, bootstrap servers)."""

    def __init__(self, faults: Faults, outages: OutageWatch, source: tuple[str, str | None],
                 target: tuple[str, str | None]) -> None:
        self.faults = faults
        self.outages = outages
        self.source = source
        self.target = target

    def on_target_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.faults.producer_failed(error, f"the target producer hit a fatal error (nothing after the last "
                                               f"acknowledged record counts as copied): {error.str()}")
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self.outages.began(*self.target)
        else:
            log.debug("target client: %s", error.str())

    def on_source_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.faults.fatal = f"source consumer: {error.str()}"
        elif error.code() == KafkaError._ALL_BROKERS_DOWN:
            self.outages.began(*self.source)
        else:
            log.debug("source client: %s", error.str())
