"""A checkpoint round's log: a summary, then only the groups whose outcome is news, however many groups."""

from __future__ import annotations

import logging

from mirror_engine.cutover.testing import LOG_GROUPS, GroupSyncResult, log_round


def _lines(caplog, results, previous):
    caplog.clear()
    outcomes = log_round(results, previous)
    return [r.getMessage() for r in caplog.records if r.name == "mirror_engine.cutover.checkpoints"], outcomes


def test_a_round_of_a_thousand_groups_logs_a_dozen_lines_and_then_only_what_changed(caplog):
    caplog.set_level(logging.INFO, logger="mirror_engine")
    waiting = [GroupSyncResult(f"g{i}", checkpoints=3, pending=2) for i in range(1000)]
    lines, outcomes = _lines(caplog, waiting, {})
    assert len(lines) == 1 + LOG_GROUPS + 1, lines  # summary, the first groups, "and N more"
    assert "1000 group(s)" in lines[0] and "1000 waiting" in lines[0] and "990 more" in lines[-1]

    lines, outcomes = _lines(caplog, waiting, outcomes)  # nothing changed: the summary alone
    assert len(lines) == 1, lines

    changed = [*waiting[:999], GroupSyncResult("g999", checkpoints=3, committed={("t", 0): 5})]
    lines, _ = _lines(caplog, changed, outcomes)
    assert len(lines) == 2 and "group g999: 3 checkpoint(s) changed, 1 offset(s) committed" in lines[1], lines


def test_a_round_where_every_group_fails_logs_a_dozen_lines_with_the_errors_first(caplog):
    """A coordinator that does not answer fails every group of a round: a line per group was 1,000 error lines a
    round (bench/scale.py, brokers pausing in GC)."""
    caplog.set_level(logging.INFO, logger="mirror_engine")
    error = "describing group 'g' failed: no answer from the group's coordinator within 15 s"
    results = [GroupSyncResult(f"g{i}", pending=2) for i in range(500)]
    results += [GroupSyncResult(f"f{i}", skipped=error, failed=True) for i in range(500)]
    caplog.clear()
    outcomes = log_round(results, {})
    records = [r for r in caplog.records if r.name == "mirror_engine.cutover.checkpoints"]
    assert len(records) == 1 + LOG_GROUPS + 1, [r.getMessage() for r in records]
    assert "500 not synced (500 failed)" in records[0].getMessage()
    assert all(r.levelno == logging.ERROR and error in r.getMessage() for r in records[1:-1])
    assert "990 more" in records[-1].getMessage()

    lines, _ = _lines(caplog, results, outcomes)  # the same errors again: the summary alone
    assert len(lines) == 1, lines
