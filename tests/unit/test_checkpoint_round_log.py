"""A checkpoint round's log: a summary, then only the groups whose outcome is news, however many groups."""

from __future__ import annotations

import logging

from mirror_engine.cutover.checkpoints import LOG_GROUPS, GroupSyncResult, log_round


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
