"""The engine's heap trim: once per idle spell in place, and every interval in the background while records are
copied."""

from mirror_engine.replication import IdleTrim


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_trims_once_per_idle_spell_in_place():
    clock, copied, calls = Clock(), [0], []
    trim = IdleTrim(lambda: copied[0], after_s=2.0, clock=clock, trim=lambda pad: calls.append(pad) or 1,
                    in_background=lambda call: None)  # the trims while copying: the next test
    for second in range(1, 6):  # nothing copied yet: nothing to give back
        clock.now = second
        trim.check()
    assert calls == []
    for second in range(6, 12):  # copying: the count moves at every check
        clock.now, copied[0] = second, copied[0] + 1000
        trim.check()
    assert calls == []
    clock.now = 12.5
    trim.check()
    assert calls == []  # idle 1.5 s only
    clock.now = 13.0
    trim.check()
    assert calls == [0]
    for second in range(14, 30):  # still idle: once is enough
        clock.now = second
        trim.check()
    assert calls == [0]
    clock.now, copied[0] = 30, copied[0] + 1
    trim.check()
    clock.now = 32
    trim.check()
    assert calls == [0, 0] and trim.trims == 2


def test_the_real_trim_is_found_on_this_system():
    trim = IdleTrim(lambda: 0, clock=Clock())
    assert trim.trim is not None and trim.trim(0) in (0, 1)


def test_while_copying_the_heap_is_trimmed_every_interval_in_the_background():
    clock, copied, calls, background = Clock(), [0], [], []
    trim = IdleTrim(lambda: copied[0], after_s=2.0, busy_every_s=10.0, clock=clock,
                    trim=lambda pad: calls.append(pad) or 1, in_background=lambda call: background.append(call))
    for second in range(1, 31):  # copying all along: at 10, 20 and 30 s
        clock.now, copied[0] = second, copied[0] + 1000
        trim.check()
    assert len(background) == 3 and calls == [] and trim.busy_trims == 3
    for call in background:  # what the background thread runs
        call()
    assert calls == [0, 0, 0]
    clock.now = 33.0  # then idle: the idle trim, in place
    trim.check()
    assert calls == [0, 0, 0, 0] and trim.trims == 1
