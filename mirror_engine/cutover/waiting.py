"""How a switch waits: by polling the same readiness check a sensor defers on (`ready_to_switch`), so "ready to
switch" has one definition; and the error a switch that did not happen raises."""

from __future__ import annotations

import time

from mirror_engine.cutover.readiness_base import Readiness, ReadinessCheck

POLL_INTERVAL_S = 0.05  # the engine stores its progress every engine.progress_interval_s: look again soon


class SwitchError(RuntimeError):
    """The switch did not happen (or stopped before committing anything); the message says why."""


class NothingToSwitch(SwitchError):
    """The group has no position on the source to carry over (`outlook.SKIP`): nothing was switched, nothing
    needed to be."""


def wait_until_ready(check: ReadinessCheck, timeout_s: float, *, outcome: str, hint: str = "",
                     poll_interval_s: float = POLL_INTERVAL_S) -> Readiness:
    """Poll `check` until it is done; SwitchError with its reason when it fails, or with its last progress line
    when `timeout_s` passes. `outcome` ends either sentence (what did not happen, e.g. "nothing was committed on
    the target"); `hint` says, at a timeout, what a person can do."""
    started = time.monotonic()
    while True:
        readiness = check.check()
        if readiness.failed:
            raise SwitchError(f"{readiness.failed}: {outcome}")
        if readiness.done:
            return readiness
        if time.monotonic() - started > timeout_s:
            raise SwitchError(f"still waiting after {timeout_s:.0f} s: {readiness.progress}"
                              + (f" ({hint})" if hint else "") + f"; {outcome}")
        time.sleep(poll_interval_s)
