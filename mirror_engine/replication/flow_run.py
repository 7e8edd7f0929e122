"""A run of a plan's flow, as one domain call: the copy (`Replicator`) and what runs beside it (`BesideTheCopy`), as
MirrorMaker 2's dedicated mode runs its connectors in one process.

`mirror-engine run` and `worker` call `run_flow`, and so does an engine the Airflow operator detaches (it runs
`worker`, see `supervision`).
"""

from __future__ import annotations

import logging
import signal
from types import FrameType

from mirror_engine.kafka import ClusterInfo
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.beside_the_copy import BesideTheCopy
from mirror_engine.replication.engine import Replicator, RunSummary, default_worker_id

log = logging.getLogger("mirror_engine")

__all__ = ["FlowRun", "run_flow"]


class FlowRun:
    """The copy of one plan's flow and its background tasks, in this process: alone (no `worker_id`) or as one worker
    of the flow's group. `stop()` may be called from a signal handler or another thread."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 worker_id: str | None = None, clusters: tuple[ClusterInfo, ClusterInfo] | None = None) -> None:
        kind = "worker" if worker_id is not None else "run"
        self.replicator = Replicator(plan, source_config, target_config, worker_id=worker_id, clusters=clusters)
        # `holder` names this process in the flow's checkpoint lease.
        self.beside = BesideTheCopy(plan, source_config, target_config,
                                    holder=f"mirror-engine-{kind}-{worker_id or default_worker_id()}",
                                    on_failure=self.replicator.faults.stop_with, copying=self.replicator.copying)

    def stop(self) -> None:
        """No background task starts after this, and the copy stops after its in-flight records."""
        self.beside.stop()
        self.replicator.stop()

    def run(self, max_seconds: float | None = None, until_caught_up: bool = False) -> RunSummary:
        """Start the background tasks (the checkpoint loop once the copy runs: its start-up never waits for it), copy
        until stopped (`Replicator.run`), then stop and close the tasks."""
        self.beside.start()
        try:
            return self.replicator.run(max_seconds=max_seconds, until_caught_up=until_caught_up)
        finally:
            self.beside.close()


def run_flow(plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
             worker_id: str | None = None, clusters: tuple[ClusterInfo, ClusterInfo] | None = None,
             max_seconds: float | None = None, until_caught_up: bool = False,
             stop_on_signals: bool = True) -> RunSummary:
    """Run the plan's flow until stopped (or for `max_seconds`, or until caught up): the copy with heartbeats, topic,
    config and ACL sync and, with engine.run_checkpoints, checkpoints and group offset sync.

    `clusters`: both clusters as just described by the caller (`describe_plan_clusters`): not asked again.
    `stop_on_signals` (from the main thread): SIGTERM and SIGINT stop it cleanly, after the in-flight records; the
    previous handlers come back when it returns. Raises `EngineError` when the engine cannot go on.
    """
    flow = FlowRun(plan, source_config, target_config, worker_id=worker_id, clusters=clusters)

    def stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the in-flight records", signum)
        flow.stop()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)} if stop_on_signals else {}
    try:
        return flow.run(max_seconds=max_seconds, until_caught_up=until_caught_up)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
