"""A switch waits by polling a readiness check: done when the check is, refused with the check's own reason, and at
its timeout with the check's last progress line."""

from __future__ import annotations

import pytest

from mirror_engine.cutover import Readiness, SwitchError, wait_until_ready


class Answers:
    """A readiness check answering from a list, one answer a poll (the last one repeated)."""

    def __init__(self, *answers: Readiness) -> None:
        self.answers, self.polls = list(answers), 0

    def check(self) -> Readiness:
        self.polls += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_polls_until_the_check_is_done():
    check = Answers(Readiness(False, "waiting for 1 member(s)"), Readiness(False, "copying"),
                    Readiness(True, "ready", detail={"partitions": 3}))
    assert wait_until_ready(check, 10, outcome="nothing committed", poll_interval_s=0).detail == {"partitions": 3}
    assert check.polls == 3


def test_a_failed_check_refuses_with_its_reason_at_once():
    check = Answers(Readiness(False, "", failed="group 'g' already has active members on the target"))
    with pytest.raises(SwitchError, match=r"^group 'g' already has active members on the target: nothing committed$"):
        wait_until_ready(check, 10, outcome="nothing committed", poll_interval_s=0)
    assert check.polls == 1


def test_a_timeout_says_what_was_still_waited_for():
    check = Answers(Readiness(False, "group g: waiting for its 2 member(s) on the source to stop"))
    with pytest.raises(SwitchError) as refused:
        wait_until_ready(check, 0.05, outcome="nothing committed", hint="stop its consumers", poll_interval_s=0.01)
    assert str(refused.value) == ("still waiting after 0 s: group g: waiting for its 2 member(s) on the source to "
                                  "stop (stop its consumers); nothing committed")
