"""Discovery beside the copy: new matching topics and added partitions are prepared on the target and copied,
configs re-synced, every refresh interval of a running flow."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from mirror_engine.kafka import ClusterInfo
from mirror_engine.replication.assigner import PartitionAssigner
from mirror_engine.replication.faults import Faults
from mirror_engine.replication.membership import Membership
from mirror_engine.replication.target_upkeep import TargetUpkeep

log = logging.getLogger("mirror_engine.replication.engine")


class TopicRefresh:
    """The refreshes of one engine: `start` one (a periodic task), `follow` its outcome (another), `close`.

    The preparation describes every topic, config and ACL of the plan on both clusters (a thousand topics:
    seconds of requests): it runs in a thread of its own, with clients of its own, so the copy never waits
    for it; `follow` takes its outcome up on the copy's thread. The first one, as the copy starts, takes both
    clusters as the start described them (`clusters`); later ones ask again."""

    def __init__(self, name: str, upkeep: TargetUpkeep, assigner: PartitionAssigner, membership: Membership,
                 faults: Faults, flow_state: Callable[[], str],
                 clusters: tuple[ClusterInfo, ClusterInfo] | None) -> None:
        self.name = name
        self.upkeep = upkeep
        self.assigner = assigner
        self.membership = membership
        self.faults = faults
        self.flow_state = flow_state
        self.clusters = clusters
        self._refresher: ThreadPoolExecutor | None = None
        self._refreshing: Future[list[str] | None] | None = None

    def start(self) -> None:
        """Discovery: new matching topics and added partitions are prepared and copied; configs re-synced."""
        if self._refreshing is not None:  # the previous one is still at work
            return
        first = self._refresher is None
        if first:
            self._refresher = ThreadPoolExecutor(1, thread_name_prefix=f"refresh-{self.name}")
        # The first, as the copy starts, takes both clusters as the start described them; later ones ask again.
        self._refreshing = self._refresher.submit(self.upkeep.prepare, self.assigner.managed_topics(), initial=False,
                                                  clusters=self.clusters if first else None)

    def follow(self) -> None:
        """Every second: copy what a finished refresh prepared (new topics, added partitions)."""
        refreshing = self._refreshing
        if refreshing is None or not refreshing.done():
            return
        self._refreshing = None
        try:
            topics = refreshing.result()
            if topics is not None:
                self.assigner.follow(topics)
            if self.flow_state() != "stopped":
                self.membership.acquire()  # workers: added partitions reach the group through the consumer
        except Exception as error:  # a failed refresh must not stop copying what is assigned
            self.faults.last_error = f"refresh failed: {error}"
            log.error("refresh failed (copying goes on, retried next interval): %s", error, exc_info=True)

    def close(self) -> None:
        """A refresh at work is left to end by itself (nothing waits for it); none starts any more."""
        if self._refresher is not None:
            self._refresher.shutdown(wait=False, cancel_futures=True)
