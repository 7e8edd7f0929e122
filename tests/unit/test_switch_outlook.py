"""The one rule of what a switch does with a group (`group_verdict`): switch it, skip it, or nothing but fail."""

from __future__ import annotations

from mirror_engine.cutover import BLOCKED, SKIP, SWITCH, GroupOutlook, group_verdict, outlook_lines


def test_a_group_with_nothing_committed_and_no_consumers_is_skipped_with_why():
    outlook = group_verdict("billing", committed={}, not_replicated=[])
    assert outlook.verdict == SKIP
    assert "nothing committed on the source and no consumers there" in outlook.sentence()


def test_a_group_consuming_on_the_source_switches_once_stopped_even_before_its_first_commit():
    assert group_verdict("billing", committed={}, not_replicated=[], active_on_source=True).verdict == SWITCH
    stopped = group_verdict("billing", committed={("orders", 0): 5}, not_replicated=[])
    assert stopped.verdict == SWITCH and "1 partition(s)" in stopped.reason


def test_a_group_that_can_only_fail_is_blocked_with_its_reason():
    reads_other = group_verdict("billing", committed={("orders", 0): 5, ("audit", 0): 1}, not_replicated=["audit"],
                                active_on_source=True)
    assert reads_other.verdict == BLOCKED and "does not copy: audit" in reads_other.reason
    on_target = group_verdict("billing", committed={("orders", 0): 5}, not_replicated=[], active_on_target=True)
    assert on_target.verdict == BLOCKED and "active members on the target" in on_target.reason
    engine = group_verdict("mirror-engine.demo", committed={}, not_replicated=[])
    assert engine.verdict == BLOCKED and "engine's own group" in engine.reason


def test_a_group_switched_before_and_consumed_on_the_target_since_is_not_blocked():
    outlook = group_verdict("billing", committed={("orders", 0): 5}, not_replicated=[], active_on_target=True,
                            switched_before=True)
    assert outlook.verdict == SWITCH and "already switched" in outlook.reason


def test_the_outlook_lines_put_blocked_groups_first_and_count_past_the_shown_ones():
    outlooks = [GroupOutlook(f"g{i}", SWITCH, "stopped") for i in range(12)] + [
        GroupOutlook("bad", BLOCKED, "reads audit"), GroupOutlook("empty", SKIP, "nothing")]
    lines = outlook_lines(outlooks)
    assert lines[0] == "1 group(s) blocked, the switch would fail: bad (reads audit)"
    assert lines[1] == "1 group(s) skipped: empty (nothing)"
    assert lines[2].startswith("12 group(s) to switch: g0 (stopped)") and lines[2].endswith("and 2 more")
