"""How a flow's numbers read (`mirror_engine.observe.readout`): the ETA from the net drain, the engine-less
state, durations, the waiting sentence and the partition pages."""

from __future__ import annotations

import time

from mirror_engine.observe import NO_ENGINE, Drain, DrainSample, duration, flow_state, partition_page, waiting_sentence


def test_the_eta_comes_from_the_net_drain_and_says_not_converging_when_the_lag_does_not_fall():
    # The source gets 200 records/s; the engine copies 250 records/s: the lag falls by 50 records/s.
    drain = Drain()
    for second in range(0, 31, 5):
        drain.add(DrainSample(1000.0 + second, 3000 - 50 * second, 100_000 + 200 * second))
    copy_rate, write_rate = drain.rates()
    assert round(copy_rate) == 250 and round(write_rate) == 200
    assert round(drain.eta_s()) == 1500 / 50 and drain.eta_text() == "30 s"

    # The lag moves up and down around 180 with the copy at the source's pace: no ETA, said so.
    steady = Drain()
    for second, lag in zip(range(0, 60, 5), [60, 260, 120, 180, 240, 100, 200, 150, 180, 220, 170, 190], strict=True):
        steady.add(DrainSample(2000.0 + second, lag, 50_000 + 200 * second))
    assert steady.eta_s() is None and steady.eta_text() == "not converging"
    assert Drain().eta_text() == "measuring"
    caught_up = Drain()
    caught_up.add(DrainSample(1.0, 0, 10))
    assert caught_up.eta_s() == 0 and caught_up.eta_text() == "caught up"


def test_the_drain_keeps_about_its_window_of_samples():
    drain = Drain(window_s=60)
    for second in range(0, 600, 5):
        drain.add(DrainSample(float(second), 0, second))
    assert 60 <= drain.samples[-1].at_s - drain.samples[0].at_s <= 65


def test_a_running_flow_without_a_live_engine_is_a_state_of_its_own():
    assert flow_state("running", 0, copying=True) == NO_ENGINE
    assert flow_state("running", 1, copying=True) == "running"
    assert flow_state("paused", 0, copying=True) == "paused"
    assert flow_state("running", 0, copying=False) == "running"


def test_durations_read_in_seconds_minutes_and_hours():
    assert duration(200.994) == "3 min 21 s" and duration(55.178) == "55 s" and duration(0.4) == "0.4 s"
    assert duration(725) == "12 min" and duration(3725) == "1 h 2 min" and duration(None) == ""


def test_the_waiting_sentence_names_the_wait_its_live_progress_the_time_waited_and_left():
    sentence = waiting_sentence("catch_up.wait_for_lag", "catch-up: waiting for lag 0; now 180 record(s)", 200, 3360)
    assert sentence == ("catch_up.wait_for_lag: catch-up: waiting for lag 0; now 180 record(s); waiting for "
                        "3 min 20 s; timeout in 56 min")


def test_partition_pages_put_stopped_then_most_behind_first_and_never_return_more_than_a_page():
    parts = [{"topic": f"t{i % 100}", "partition": i // 100, "lag": i % 37, "stopped": ""} for i in range(10_000)]
    parts[9_999]["stopped"] = "not authorized"
    rows, page, pages = partition_page(parts, 1)
    assert len(rows) == 50 and page == 1 and pages == 200
    assert rows[0]["stopped"] and all(rows[i]["lag"] >= rows[i + 1]["lag"] for i in range(1, 49))
    rows, page, pages = partition_page(parts, 999, contains="t7[")  # a page past the end: the last one
    assert (page, pages) == (2, 2) and {row["topic"] for row in rows} == {"t7"}


def test_a_switch_summary_of_1000_groups_names_the_ten_checkpointed_longest_ago_and_counts_the_rest():
    from mirror_engine.observe import switch_summary

    snapshot = {"at_ms": 10_000_000, "records_per_s": 1.0, "write_rate": 0.0, "lag": 0, "lag_ms": 0,
                "eta": "caught up", "flow_state": "running", "problems": [],
                "checkpoints": [{"group": f"g{i}", "partitions": 3, "newest_ms": 9_000_000 + i * 1000,
                                 "oldest_ms": 8_000_000} for i in range(1, 1000)]}
    summary = switch_summary(snapshot, [], [f"g{i}" for i in reversed(range(1000))], ["orders"])
    assert len(summary.splitlines()) == 15, summary
    assert "**Checkpoints of g0**: none written yet" in summary and "**Checkpoints of g9**" in summary
    assert "**Checkpoints of g10**" not in summary and "990 other groups" in summary
    assert "and 990 more groups; producers of orders" in summary


def test_a_switch_summary_says_moments_as_clock_times_and_lists_what_happens_to_each_group():
    from mirror_engine.observe import clock, switch_summary

    now_ms = time.time() * 1000
    snapshot = {"at_ms": now_ms, "records_per_s": 1.0, "write_rate": 0.0, "lag": 0, "lag_ms": 0,
                "eta": "caught up", "flow_state": "running", "problems": [],
                "checkpoints": [{"group": "billing", "partitions": 3, "newest_ms": now_ms - 8_500,
                                 "oldest_ms": now_ms - 60_000}]}
    validation = {"name": "validation-demo-1", "stored_ms": now_ms - 8_500, "report": {"clean": True, "totals": {}}}
    summary = switch_summary(snapshot, [validation], ["billing"], [],
                             ["1 group(s) skipped: shipping (nothing to switch)"])
    assert " ago" not in summary, summary  # an age is false as soon as the page is read later
    assert f"stored at {clock(now_ms - 8_500)}" in summary and f"newest at {clock(now_ms - 8_500)}" in summary
    assert "- **Groups**: 1 group(s) skipped: shipping (nothing to switch)" in summary
    assert clock(now_ms).endswith(" UTC") and len(clock(now_ms)) == len("08:10:05 UTC")
    assert clock(0) == "1970-01-01 00:00:00 UTC"
