"""`run_flow`: a run is one call; SIGTERM stops it cleanly and the previous signal handlers come back."""

from __future__ import annotations

import os
import signal

from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import RunSummary, run_flow
from mirror_engine.replication.testing import flow_run

PLAN = plan_from_dict({
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
    "topics": {"include": ["orders.*"]},
})


class StubFlow:
    """A flow that gets SIGTERM while it runs, and says whether it was stopped."""

    made: list[StubFlow] = []

    def __init__(self, plan, source_config, target_config, *, worker_id=None, clusters=None) -> None:
        self.worker_id, self.clusters, self.stopped = worker_id, clusters, False
        StubFlow.made.append(self)

    def stop(self) -> None:
        self.stopped = True

    def run(self, max_seconds=None, until_caught_up=False) -> RunSummary:
        os.kill(os.getpid(), signal.SIGTERM)
        return RunSummary(records=7)


def test_sigterm_stops_the_run_and_the_previous_handlers_come_back(monkeypatch):
    monkeypatch.setattr(flow_run, "FlowRun", StubFlow)
    before = signal.getsignal(signal.SIGTERM)
    summary = run_flow(PLAN, {}, {}, worker_id="w1", clusters=None)
    assert summary.records == 7
    assert StubFlow.made[-1].stopped and StubFlow.made[-1].worker_id == "w1"
    assert signal.getsignal(signal.SIGTERM) is before and signal.getsignal(signal.SIGINT) is not None

