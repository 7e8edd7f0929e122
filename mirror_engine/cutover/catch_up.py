"""The catch-up gate: when the copy is close enough to a live source to go on with a migration.

A live source never reaches lag 0 (producers move last, and the engine stores its progress every
`engine.progress_interval_s`), so the gate asks for the lag under a bound instead, in records
(`cutover.max_lag_records`) or in time behind the source (`cutover.max_lag_s`: the age of the oldest record not
copied yet), held for `cutover.catch_up_settle_s` while the engine keeps up with what the source gets. Lag 0
passes at once. The strict waits stay where they belong: a group switch waits until its offsets are copied, a
producer switch until its topic is drained.

`CatchUpGate` decides from samples (pure, so tested without clusters); `catch_up_sentence` says in one line
which bound the gate waits for, where the lag is and whether it converges: the sensor's log and the cockpit
show the same sentence; `TimeBehind` reads on the source the timestamps of the oldest records not copied yet.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from mirror_engine.kafka import SHORT_FETCH_WAIT, TopicPartitionKey, assign_known, consume_available
from mirror_engine.plan import FROM_PLAN, MigrationPlan

__all__ = ["FROM_PLAN", "CatchUpBounds", "CatchUpGate", "LagSample", "TimeBehind", "Trend", "catch_up_sentence"]

TREND_WINDOW_S = 10.0  # the shortest window the copy and write rates are measured over
KEEPS_UP = 0.8  # the engine keeps up when it copies at least this share of what the source gets
MAX_TIMED_PARTITIONS = 1000  # partitions whose oldest uncopied record is read, most behind first


@dataclass(frozen=True)
class CatchUpBounds:
    """Caught up: at most `max_lag_records` records or `max_lag_s` seconds behind (None: no time bound), held
    for `settle_s`; lag 0 at once."""

    max_lag_records: int
    max_lag_s: float | None
    settle_s: float

    @classmethod
    def from_plan(cls, plan: MigrationPlan, max_lag_records: Any = None, max_lag_s: Any = FROM_PLAN,
                  settle_s: Any = None) -> CatchUpBounds:
        cutover = plan.cutover
        return cls(cutover.max_lag_records if max_lag_records is None else int(max_lag_records),
                   cutover.max_lag_s if max_lag_s == FROM_PLAN else (None if max_lag_s is None else float(max_lag_s)),
                   cutover.catch_up_settle_s if settle_s is None else float(settle_s))

    def describe(self) -> str:
        """E.g. 'at most 10 s behind the source or at most 1,000 records, held for 10 s'."""
        bounds = []
        if self.max_lag_s is not None:
            bounds.append(f"at most {self.max_lag_s:g} s behind the source")
        if self.max_lag_records > 0:
            bounds.append(f"at most {self.max_lag_records:,} record(s) behind")
        if not bounds:
            return "lag 0 (every record copied)"
        return " or ".join(bounds) + (f", held for {self.settle_s:g} s" if self.settle_s > 0 else "")

    def within(self, sample: LagSample) -> bool:
        return sample.records <= self.max_lag_records or (
            self.max_lag_s is not None and sample.behind_s is not None and sample.behind_s <= self.max_lag_s)


@dataclass(frozen=True)
class LagSample:
    """The flow at one poll: records not copied, how far behind in time (None: not measured), and the sum of the
    source's end offsets (what the source got so far)."""

    at: float  # monotonic seconds
    records: int
    behind_s: float | None
    source_end: int


@dataclass(frozen=True)
class Trend:
    """Copy and write rates over the last window; `converges` None until two samples a second apart."""

    copy_rate: float
    write_rate: float
    window_s: float

    @property
    def converges(self) -> bool | None:
        if self.window_s < 1.0:
            return None
        # One record of slack: a stored position moves in steps.
        return (self.copy_rate * self.window_s + 1) >= KEEPS_UP * self.write_rate * self.window_s


class CatchUpGate:
    """Fed one `LagSample` per poll, says whether the flow is caught up (see `CatchUpBounds`).

    Invariant: `within_since` is the time of the first sample of the current unbroken run of samples within
    the bounds, None when the last sample was outside them; the gate passes at lag 0, or once that run lasted
    `settle_s` while the engine keeps up (copies at least KEEPS_UP of what the source gets).
    """

    def __init__(self, bounds: CatchUpBounds) -> None:
        self.bounds = bounds
        self.samples: deque[LagSample] = deque()
        self.within_since: float | None = None

    def observe(self, sample: LagSample) -> bool:
        self.samples.append(sample)
        window = max(TREND_WINDOW_S, self.bounds.settle_s)
        while len(self.samples) > 2 and sample.at - self.samples[1].at >= window:
            self.samples.popleft()
        if not self.bounds.within(sample):
            self.within_since = None
        elif self.within_since is None:
            self.within_since = sample.at
        return self.passed()

    def held_s(self) -> float:
        if self.within_since is None or not self.samples:
            return 0.0
        return self.samples[-1].at - self.within_since

    def trend(self) -> Trend:
        first, last = self.samples[0], self.samples[-1]
        elapsed = last.at - first.at
        if elapsed <= 0:
            return Trend(0.0, 0.0, 0.0)
        written = last.source_end - first.source_end
        copied = (last.source_end - last.records) - (first.source_end - first.records)
        return Trend(max(0.0, copied / elapsed), max(0.0, written / elapsed), elapsed)

    def passed(self) -> bool:
        if not self.samples:
            return False
        if self.samples[-1].records == 0:
            return True
        return (self.within_since is not None and self.held_s() >= self.bounds.settle_s
                and self.trend().converges is not False)


def _behind(sample: LagSample) -> str:
    shown = f"{sample.records:,} record(s)"
    return shown if sample.behind_s is None else f"{shown} and {sample.behind_s:,.1f} s behind"


def catch_up_sentence(bounds: CatchUpBounds, sample: LagSample, trend: Trend, held_s: float,
                      passed: bool = False) -> str:
    """One line: which bound the gate waits for, the live lag, how long it held, and whether it converges."""
    rates = f"the engine copies {trend.copy_rate:,.0f} record(s)/s, the source gets {trend.write_rate:,.0f}/s"
    if trend.converges is None:
        verdict = "whether it converges shows at the next poll"
    elif trend.converges:
        to_go = ""
        if trend.copy_rate > trend.write_rate and not bounds.within(sample):
            seconds = (sample.records - bounds.max_lag_records) / (trend.copy_rate - trend.write_rate)
            to_go = f", about {seconds:,.0f} s to go"
        verdict = f"the lag converges: {rates}{to_go}"
    else:
        verdict = (f"the lag does not converge: {rates}; it will not catch up at this rate (is an engine of the "
                   "flow running? more workers copy faster)")
    if passed:
        return f"caught up: {_behind(sample)}, within {bounds.describe()}; {verdict}"
    if bounds.within(sample) and bounds.settle_s > 0:
        held = f" (within the bound for {min(held_s, bounds.settle_s):.0f} s of {bounds.settle_s:g} s)"
    else:
        held = ""
    return f"catch-up: waiting for {bounds.describe()}; now {_behind(sample)}{held}; {verdict}"


class TimeBehind:
    """How far behind the source the copy is in time: the age of the oldest record not copied yet, read on the
    source at each lagging partition's copied position (one consumer, kept open between polls)."""

    def __init__(self, source_config: dict[str, str]) -> None:
        self._consumer = Consumer({**source_config, "group.id": "mirror-engine-catch-up", "enable.auto.commit": False,
                                   "isolation.level": "read_committed", "enable.partition.eof": True,
                                   "auto.offset.reset": "earliest", **SHORT_FETCH_WAIT})
        self._known: set[str] = set()

    def behind_s(self, positions: dict[TopicPartitionKey, int], lag: dict[TopicPartitionKey, int],
                 timeout_s: float = 5.0) -> float:
        """Seconds since the oldest record at or after `positions` (lagging partitions, most behind first) was
        written; 0 when none is readable (only transaction markers or open transactions left)."""
        lagging = sorted((key for key in positions if lag.get(key, 0) > 0), key=lambda key: -lag[key])
        partitions = [TopicPartition(t, p, positions[(t, p)]) for t, p in lagging[:MAX_TIMED_PARTITIONS]]
        if not partitions:
            return 0.0
        topics = {tp.topic for tp in partitions}
        if topics - self._known:
            assign_known(self._consumer, partitions)
            self._known |= topics
        else:
            self._consumer.assign(partitions)
        pending = {(tp.topic, tp.partition) for tp in partitions}
        oldest_ms: int | None = None
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for message in consume_available(self._consumer, 0.2):
                key = (message.topic(), message.partition())
                if key not in pending:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(key)
                    continue
                pending.discard(key)
                _kind, stamp = message.timestamp()
                if stamp > 0:
                    oldest_ms = stamp if oldest_ms is None else min(oldest_ms, stamp)
        self._consumer.assign([])
        if oldest_ms is None:
            return 0.0
        return max(0.0, time.time() - oldest_ms / 1000)

    def close(self) -> None:
        self._consumer.close()
