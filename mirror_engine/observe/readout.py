"""How a flow's numbers read to a person, defined once for every page that shows them.

Pure functions over plain values (no clients), so the cockpit's cards, charts and tables, the run's status strip
and the overview say the same thing from the same numbers:
- `Drain` turns the view's own samples (total lag, sum of the source's end offsets) into the copy rate, the
  source's write rate and the ETA from the net drain, "not converging" when the lag does not fall;
- `flow_state` names an engine-less flow as a state of its own;
- `duration` writes seconds as s / min / h;
- `waiting_sentence` is the status strip's sentence for a deferred wait;
- `partition_page` orders partitions (stopped, then most behind) and cuts one page, so no page renders
  10,000 rows.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["NO_ENGINE", "Drain", "DrainSample", "clock", "duration", "flow_state", "partition_page", "switch_summary",
           "waiting_sentence"]

NO_ENGINE = "no engine running"
DRAIN_WINDOW_S = 60.0  # the rates and the ETA are measured over about this long
PAGE_SIZE = 50
SUMMARY_GROUPS = 10  # groups named one by one in a switch's summary; the rest are counted


def duration(seconds: float | None) -> str:
    """E.g. '42 s', '3 min 20 s', '1 h 5 min'; '' for None."""
    if seconds is None or math.isnan(seconds):
        return ""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min" + (f" {rest} s" if rest and minutes < 10 else "")
    hours, rest = divmod(whole, 3600)
    return f"{hours} h" + (f" {rest // 60} min" if rest // 60 else "")


def flow_state(stored_state: str, live_engines: int, copying: bool) -> str:
    """The flow's state as shown: the stored control state, or `NO_ENGINE` when a running flow with partitions
    to copy has no live engine (a stopped engine must not read as a running flow)."""
    if stored_state == "running" and copying and live_engines == 0:
        return NO_ENGINE
    return stored_state


@dataclass(frozen=True)
class DrainSample:
    at_s: float  # wall-clock seconds
    lag: int  # records not copied yet, all partitions
    source_end: int  # sum of the source's end offsets: what the source got so far


class Drain:
    """The lag's trend from samples taken each time the view is read; rates over the last `DRAIN_WINDOW_S`.

    Invariant: `samples` is in time order and spans at most the window plus one sample before it, so the rates
    are measured over at least the window once it has been watched that long."""

    def __init__(self, window_s: float = DRAIN_WINDOW_S) -> None:
        self.window_s = window_s
        self.samples: deque[DrainSample] = deque()

    def add(self, sample: DrainSample) -> None:
        if self.samples and sample.at_s <= self.samples[-1].at_s:
            return
        self.samples.append(sample)
        while len(self.samples) > 2 and sample.at_s - self.samples[1].at_s >= self.window_s:
            self.samples.popleft()

    def rates(self) -> tuple[float | None, float | None]:
        """(records copied per second, records written to the source per second); None before two samples."""
        if len(self.samples) < 2:
            return None, None
        first, last = self.samples[0], self.samples[-1]
        elapsed = last.at_s - first.at_s
        written = last.source_end - first.source_end
        copied = written - (last.lag - first.lag)
        return max(0.0, copied / elapsed), max(0.0, written / elapsed)

    def eta_s(self) -> float | None:
        """Seconds to lag 0 at the net drain (copy rate minus write rate); 0 at lag 0; None when not converging
        or not measured yet."""
        if not self.samples:
            return None
        lag = self.samples[-1].lag
        if lag <= 0:
            return 0.0
        copy_rate, write_rate = self.rates()
        if copy_rate is None or write_rate is None or copy_rate - write_rate <= 0:
            return None
        return lag / (copy_rate - write_rate)

    def eta_text(self) -> str:
        eta = self.eta_s()
        if eta is not None:
            return "caught up" if eta == 0 else duration(eta)
        return "measuring" if len(self.samples) < 2 else "not converging"


def waiting_sentence(task: str, progress: str, waited_s: float, left_s: float | None) -> str:
    """The status strip of a deferred wait: which task waits, the check's own progress line (the sentence its
    trigger logs), how long it has waited and the time left before its timeout."""
    timeout = "" if left_s is None else (f"; timeout in {duration(left_s)}" if left_s > 0 else "; timed out")
    return f"{task}: {progress or 'waiting for the first poll'}; waiting for {duration(waited_s)}{timeout}"


def partition_page(partitions: Iterable[dict[str, Any]], page: int = 1, size: int = PAGE_SIZE,
                   contains: str = "") -> tuple[list[dict[str, Any]], int, int]:
    """One page of partitions (stopped first, then most behind, then by name), those whose name contains
    `contains`: (rows, the page shown, pages in all)."""
    chosen = [p for p in partitions if contains.lower() in f"{p['topic']}[{p['partition']}]".lower()]
    chosen.sort(key=lambda p: (not p.get("stopped"), -(p.get("lag") or 0), p["topic"], p["partition"]))
    pages = max(1, math.ceil(len(chosen) / size))
    page = min(max(1, page), pages)
    return chosen[(page - 1) * size:page * size], page, pages


def clock(ms: float) -> str:
    """A moment as the UTC time of day (its date too when not today), e.g. '08:10:05 UTC': a text that stays
    true however long after it was written it is read (an age would not)."""
    moment = time.gmtime(ms / 1000)
    day = "" if time.strftime("%Y-%m-%d", moment) == time.strftime("%Y-%m-%d", time.gmtime()) else \
        time.strftime("%Y-%m-%d ", moment)
    return day + time.strftime("%H:%M:%S UTC", moment)


def switch_summary(snapshot: dict[str, Any], validations: list[dict[str, Any]], groups: list[str],
                   topics: list[str], outlook: list[str] | None = None) -> str:
    """What a person decides a switch on, as Markdown lines: the lag and its trend, the newest validation, the
    checkpoints' freshness, the groups and topics to switch, and `outlook` (what the switch will do with the
    groups, a line per verdict), from a `FlowView` snapshot and its reports. Moments are clock times, not ages:
    the text is read long after it was made."""
    now_ms = snapshot["at_ms"]
    rate = snapshot["records_per_s"]
    trend = (f"copied at {rate:,.0f} records/s, the source written at {snapshot['write_rate']:,.0f} records/s"
             if rate is not None else "rates not measured yet")
    lines = [f"- **Lag**: {snapshot['lag']:,} records, behind by {duration((snapshot['lag_ms'] or 0) / 1000)}; "
             f"{trend}; ETA to lag 0: {snapshot['eta']}; flow {snapshot['flow_state']}"]
    if snapshot["problems"]:
        lines.append("- **Problems**: " + "; ".join(snapshot["problems"][:5]))
    if validations:
        newest = validations[0]
        report = newest["report"]
        problems = sum(report["totals"].get(k, 0) for k in ("missing", "extra", "duplicates", "changed",
                                                             "out_of_order"))
        verdict = "clean" if report["clean"] else f"NOT CLEAN ({problems:,} problems)"
        lines.append(f"- **Validation**: {verdict}, report {newest['name']} stored at {clock(newest['stored_ms'])}")
    else:
        lines.append("- **Validation**: no validation report stored")
    checkpoints = {c["group"]: c for c in snapshot["checkpoints"]}
    # The groups checkpointed longest ago (none at all first), SUMMARY_GROUPS of them; the rest counted.
    stalest = sorted(groups, key=lambda g: (g in checkpoints, checkpoints[g]["newest_ms"] if g in checkpoints else 0))
    for group in stalest[:SUMMARY_GROUPS]:
        c = checkpoints.get(group)
        lines.append(f"- **Checkpoints of {group}**: " + (
            f"newest at {clock(c['newest_ms'])}, oldest partition's at {clock(c['oldest_ms'])}" if c
            else "none written yet"))
    if len(groups) > SUMMARY_GROUPS:
        missing = sum(1 for g in groups if g not in checkpoints)
        lines.append(f"- **Checkpoints of the {len(groups) - SUMMARY_GROUPS:,} other groups**: checkpointed more "
                     f"recently than those above ({missing:,} of all {len(groups):,} groups have none)")
    lines.append(f"- **To switch**: {_named(groups, 'groups')}; producers of {_named(topics, 'topics')}")
    lines += [f"- **Groups**: {line}" for line in outlook or []]
    lines.append(f"- **Read at** {clock(now_ms)}")
    return "\n".join(lines)


def _named(names: list[str], what: str) -> str:
    """'none', the names, or the first SUMMARY_GROUPS of them and how many more."""
    if not names:
        return f"{what} none" if what == "groups" else "none"
    more = len(names) - SUMMARY_GROUPS
    head = ", ".join(names[:SUMMARY_GROUPS])
    return (f"{what} {head}" if what == "groups" else head) + (f" and {more:,} more {what}" if more > 0 else "")
