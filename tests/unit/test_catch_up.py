"""The catch-up gate decided from samples: a live source the engine keeps up with passes; a copy that falls
behind never does; the sentence says which bound, the live lag and whether it converges."""

from __future__ import annotations

from mirror_engine.cutover import CatchUpBounds, CatchUpGate, LagSample, catch_up_sentence
from mirror_engine.plan import plan_from_dict

PLAN = {"name": "p", "source": {"alias": "a", "bootstrap_servers": "a:9092"},
        "target": {"alias": "b", "bootstrap_servers": "b:9092"}}


def _run(gate: CatchUpGate, samples: list[LagSample]) -> list[bool]:
    return [gate.observe(sample) for sample in samples]


def _live(seconds: int, copy_share: float, start_behind: int = 100, rate: int = 200) -> list[LagSample]:
    """A source getting `rate` records/s, polled every 2 s, copied at `copy_share` of that rate."""
    samples = []
    for i in range(0, seconds + 1, 2):
        written = rate * i
        lag = start_behind + int(written * (1 - copy_share)) + (i % 4) * 25  # stored progress moves in steps
        samples.append(LagSample(at=float(i), records=lag, behind_s=0.5 + lag / rate, source_end=10_000 + written))
    return samples


def test_the_plan_defaults_a_migration_needs():
    plan = plan_from_dict(PLAN)
    bounds = CatchUpBounds.from_plan(plan)
    assert (bounds.max_lag_records, bounds.max_lag_s, bounds.settle_s) == (0, 10.0, 10.0)
    assert bounds.describe() == "at most 10 s behind the source, held for 10 s"
    custom = CatchUpBounds.from_plan(plan, max_lag_records=1000, max_lag_s=None, settle_s=0)
    assert custom.describe() == "at most 1,000 record(s) behind"
    assert CatchUpBounds.from_plan(plan, max_lag_records=0, max_lag_s=None).describe() == "lag 0 (every record copied)"


def test_a_live_source_the_engine_keeps_up_with_passes_after_the_settle_period():
    gate = CatchUpGate(CatchUpBounds(0, 10.0, 10.0))
    results = _run(gate, _live(30, copy_share=1.0))
    assert not any(results[:5]), results  # 0..8 s: held less than 10 s
    assert results[5], results  # at 10 s: held 10 s, keeping up
    assert gate.trend().converges


def test_a_copy_that_falls_behind_never_passes_though_it_starts_within_the_bound():
    for share in (0.0, 0.5):
        gate = CatchUpGate(CatchUpBounds(0, 10.0, 10.0))
        samples = _live(60, copy_share=share)
        results = _run(gate, samples)
        assert not any(results), (share, results)
        assert gate.trend().converges is False
        sentence = catch_up_sentence(gate.bounds, samples[-1], gate.trend(), gate.held_s())
        assert "does not converge" in sentence and "is an engine of the flow running?" in sentence, sentence


def test_lag_0_passes_at_once_and_a_sample_outside_the_bounds_restarts_the_hold():
    gate = CatchUpGate(CatchUpBounds(0, 10.0, 10.0))
    assert gate.observe(LagSample(0.0, 0, 0.0, 100))
    gate = CatchUpGate(CatchUpBounds(0, 10.0, 10.0))
    assert not gate.observe(LagSample(0.0, 50, 1.0, 1000))
    assert not gate.observe(LagSample(8.0, 60, 12.0, 2600))  # out of bounds: the hold starts again
    assert gate.held_s() == 0.0
    assert not gate.observe(LagSample(10.0, 50, 1.0, 3000))
    assert not gate.observe(LagSample(18.0, 50, 1.0, 4600))
    assert gate.observe(LagSample(20.0, 50, 1.0, 5000))


def test_records_bound_alone():
    gate = CatchUpGate(CatchUpBounds(500, None, 0.0))
    assert not gate.observe(LagSample(0.0, 900, None, 1000))
    assert gate.observe(LagSample(2.0, 400, None, 1400))


def test_the_sentence_names_the_bound_the_live_lag_the_hold_and_the_trend():
    bounds = CatchUpBounds(0, 10.0, 10.0)
    gate = CatchUpGate(bounds)
    samples = _live(6, copy_share=1.0)
    _run(gate, samples)
    waiting = catch_up_sentence(bounds, samples[-1], gate.trend(), gate.held_s())
    assert waiting.startswith("catch-up: waiting for at most 10 s behind the source, held for 10 s; now ")
    assert f"{samples[-1].records:,} record(s) and" in waiting and "s behind (within the bound for 6 s of 10 s)" \
        in waiting
    assert "the lag converges: the engine copies" in waiting and "the source gets 200/s" in waiting
    done = catch_up_sentence(bounds, samples[-1], gate.trend(), 10.0, passed=True)
    assert done.startswith("caught up: ") and "within at most 10 s behind the source" in done
    first = CatchUpGate(bounds)
    first.observe(samples[0])
    assert "shows at the next poll" in catch_up_sentence(bounds, samples[0], first.trend(), 0.0)
