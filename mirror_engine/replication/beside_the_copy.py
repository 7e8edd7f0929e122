"""What `mirror-engine run` and `worker` run beside the copy, as MirrorMaker 2's dedicated mode runs its
checkpoint connector and its source connector's timers beside the replication itself.

The Replicator copies, writes heartbeats (`engine.emit_heartbeats`, every `engine.heartbeat_interval_s`) and
refreshes topics, partitions and ACLs (every `engine.refresh_interval_s`) and configs (at a refresh, every
`sync.configs_interval_s`). Beside it, each in a
background thread of its own:
- the checkpoint loop (`checkpoint_loop`), when `engine.run_checkpoints`: checkpoints, group offset sync and
  group refresh, written by one process of the flow at a time;
- config and ACL sync at their own intervals (`metadata_sync`), when shorter than the engine's refresh.
`close()` stops them once the Replicator has stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial

from mirror_engine.cutover import CheckpointLoop
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.metadata_sync import metadata_sync_tasks
from mirror_engine.scheduler import Scheduler

log = logging.getLogger(__name__)

__all__ = ["BesideTheCopy", "periodic_work"]


def periodic_work(plan: MigrationPlan) -> list[str]:
    """Each periodic task of `run` for this plan, with its interval, or "off"; one line each."""
    engine, sync, cutover = plan.engine, plan.sync, plan.cutover
    lines = [f"heartbeats: every {engine.heartbeat_interval_s:g} s" if engine.emit_heartbeats else "heartbeats: off",
             f"topic refresh (new topics and partitions): every {engine.refresh_interval_s:g} s"]
    for name, enabled, interval in (("config sync", sync.configs, sync.configs_interval_s),
                                    ("ACL sync", sync.acls, sync.acls_interval_s)):
        if not enabled:
            lines.append(f"{name}: off")
        elif interval is not None and interval < engine.refresh_interval_s:
            lines.append(f"{name}: every {interval:g} s and at each topic refresh")
        elif interval is not None and name == "config sync":  # `TargetUpkeep.configs_due`
            lines.append(f"{name}: at the first topic refresh, then every {interval:g} s")
        else:
            lines.append(f"{name}: at each topic refresh")
    sync_interval = cutover.sync_group_offsets_interval_s or cutover.checkpoint_interval_s
    for name, enabled, interval in (("checkpoints", cutover.emit_checkpoints, cutover.checkpoint_interval_s),
                                    ("group offset sync", cutover.sync_group_offsets, sync_interval)):
        if not enabled:
            lines.append(f"{name}: off")
        elif engine.run_checkpoints:
            lines.append(f"{name}: every {interval:g} s (by the flow's checkpoint lease holder)")
        else:
            lines.append(f"{name}: not in this process (engine.run_checkpoints is false: `mirror-engine checkpoint`)")
    if engine.run_checkpoints:
        lines.append("group refresh: " + ("once, at start" if not cutover.refresh_groups else
                                          "at every round" if cutover.refresh_groups_interval_s is None
                                          else f"every {cutover.refresh_groups_interval_s:g} s"))
    return lines


class BesideTheCopy:
    """The background tasks of `run`/`worker` for one plan; `holder` names this process in the checkpoint lease.

    The checkpoint loop is built in a thread of its own (its clients, the flow's internal topics checked, the lease
    group joined: round trips to both clusters, and then its first round), once `copying` is set: the copy's
    start-up neither waits for what only the checkpoints need nor shares the process with it. When the loop cannot
    be built, `on_failure` gets the reason (the engine stops)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str], *,
                 holder: str, on_failure: Callable[[str], None] | None = None,
                 copying: threading.Event | None = None) -> None:
        self.plan = plan
        self.checkpoints: CheckpointLoop | None = None
        self._build_checkpoints = (partial(CheckpointLoop, plan, source_config, target_config, holder=holder)
                                   if plan.engine.run_checkpoints else None)
        self._on_failure = on_failure
        self._copying = copying
        self._builder: threading.Thread | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # the loop is started, or stopped, never both at once
        tasks = metadata_sync_tasks(plan, source_config, target_config)
        self.metadata = Scheduler(tasks, name=f"metadata-sync-{plan.name}") if tasks else None

    def start(self) -> None:
        log.info("plan '%s', beside the copy as MirrorMaker 2's dedicated mode: %s", self.plan.name,
                 "; ".join(periodic_work(self.plan)))
        if self._build_checkpoints is not None:
            self._builder = threading.Thread(target=self._start_checkpoints, name=f"checkpoints-start-{self.plan.name}",
                                             daemon=True)
            self._builder.start()
        if self.metadata is not None:
            self.metadata.start()

    def _start_checkpoints(self) -> None:
        assert self._build_checkpoints is not None
        while self._copying is not None and not self._copying.wait(0.2):
            if self._stopped.is_set():
                return
        try:
            loop = self._build_checkpoints()
        except Exception as error:  # any failure stops the engine, with its reason
            reason = (f"the checkpoint loop of plan '{self.plan.name}' could not start: {error} (set "
                      "engine.run_checkpoints: false to copy without it, and run `mirror-engine checkpoint` apart)")
            log.error("%s", reason)
            if self._on_failure is not None:
                self._on_failure(reason)
            return
        with self._lock:
            self.checkpoints = loop
            if not self._stopped.is_set():
                loop.start()

    def stop(self) -> None:
        """No task starts after this (callable from a signal handler)."""
        self._stopped.set()
        if self.checkpoints is not None:
            self.checkpoints.stop()
        if self.metadata is not None:
            self.metadata.stop(timeout_s=0)

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop every task, wait for the running ones, and close their clients."""
        if self.metadata is not None and not self.metadata.stop(timeout_s):
            log.error("config/ACL sync of plan '%s' did not finish within %.0f s", self.plan.name, timeout_s)
        with self._lock:
            self._stopped.set()
        if self._builder is not None:
            self._builder.join(timeout_s)
            if self._builder.is_alive():
                log.error("the checkpoint loop of plan '%s' was still being built after %.0f s; leaving it",
                          self.plan.name, timeout_s)
                return
        if self.checkpoints is not None:
            self.checkpoints.close(timeout_s)
