"""Where a partition the engine takes starts copying (the partition assigner's positions, `assigner`).

Without stored progress, a partition starts at the plan's start if it was there when the engine started, else at
its beginning (`StartPositions.fresh`). With stored progress it starts there, unless the source lost records
before it (`gap`), and after the records on the target past it that are counted as copied (`reconcile`,
`go_on_after`; the tails are read and checked in `mirror_engine.replication.reconcile`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.flow import PartitionProgress
from mirror_engine.kafka import TopicPartitionKey, last_timestamp, list_offsets
from mirror_engine.plan import HEARTBEATS_TOPIC, MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.delivery import DeliveryMode
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.replication.reconcile import Reconciled, TargetTail, reconcile_tails
from mirror_engine.replication.side_records import SideRecordWriter
from mirror_engine.replication.target_topics import TargetTopics
from mirror_engine.schemas import RecordRewrite

log = logging.getLogger("mirror_engine.replication.engine")

SHOWN_FALLBACKS = 5  # partitions whose target tail could not be counted as copied, named one per log line


class StartPositions:
    """The start positions of the partitions `PartitionAssigner` takes: read of the source and the target as it
    asks, never stored here (the assigner holds the stored progress and the partitions' states)."""

    def __init__(self, plan: MigrationPlan, clients: EngineClients, targets: TargetTopics, side: SideRecordWriter,
                 delivery: DeliveryMode, rewrite_of: Callable[[str], RecordRewrite | None]) -> None:
        self.plan = plan
        self.rewrite_of = rewrite_of
        self.clients = clients
        self.targets = targets
        self.side = side
        self.delivery = delivery

    def fresh(self, fresh: list[TopicPartitionKey], initial_partitions: set[TopicPartitionKey],
              earliest: dict[TopicPartitionKey, int], latest: dict[TopicPartitionKey, int],
              target_ends: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """Partitions without stored progress start at the plan's start, or at their beginning when they
        appeared after this engine started (a new topic or added partitions: all their records are new). The
        source's `earliest` and `latest` offsets of the partitions are known already: only a start at a time asks
        the source again, once for all of them. `initial_partitions`: those there when this engine started.

        A heartbeats partition whose replica holds beats already starts after the last beat there
        (`_after_copied_beats`): every flow from this source alias copies the same heartbeats topic into the same
        replica (`src.heartbeats`), so those beats are an earlier flow's copies, and copying from the beginning
        again would double them."""
        beats_copied = {key for key in fresh if key[0] == HEARTBEATS_TOPIC
                        and target_ends.get((self.targets.name(key[0]), key[1]), 0) > 0}
        fresh = [key for key in fresh if key not in beats_copied]
        start = self.plan.engine.start_from
        at_plan_start = [key for key in fresh if key in initial_partitions]
        starts = self._after_copied_beats(beats_copied, target_ends, latest)
        starts.update((key, earliest[key]) for key in fresh if key not in initial_partitions)
        if start == "earliest":
            starts.update((key, earliest[key]) for key in at_plan_start)
        elif start == "latest":
            starts.update((key, latest[key]) for key in at_plan_start)
        elif at_plan_start:
            millis = int(start.timestamp() * 1000)  # aware: the plan refuses a time without its zone
            offsets = list_offsets(self.clients.source_admin, [TopicPartition(*key) for key in at_plan_start],
                                   OffsetSpec.for_timestamp(millis))
            starts.update((key, offset if offset >= 0 else latest[key]) for key, offset in offsets.items())
        return starts

    def _after_copied_beats(self, keys: set[TopicPartitionKey], target_ends: dict[TopicPartitionKey, int],
                            latest: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """Where these heartbeats partitions go on: at the first source beat written after the last one their
        replica holds (a beat is written once, by one writer, at its time), so the beats no flow copied yet (those
        written since, or after an earlier flow stopped) arrive once. The source's end when the replica's last beat
        is not found."""
        starts = {key: latest[key] for key in keys}
        for topic, partition in sorted(keys):  # one partition, as MM2 creates the topic
            replica = self.targets.name(topic)
            last_ms = last_timestamp(self.clients.target_config, replica, partition, target_ends[(replica, partition)])
            if last_ms is None:
                continue
            [offset] = list_offsets(self.clients.source_admin, [TopicPartition(topic, partition)],
                                    OffsetSpec.for_timestamp(last_ms + 1)).values()
            if offset >= 0:  # else no beat was written since: the source's end
                starts[(topic, partition)] = offset
        return starts

    def reconcile(self, keys: list[TopicPartitionKey], stored: dict[TopicPartitionKey, PartitionProgress],
                  target_ends: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, Reconciled | str]:
        """The target's tails past the `stored` progress of these partitions, counted as copied where they are."""
        if not self.delivery.reconciles_target:
            return {}
        tails = []
        for topic, partition in keys:
            progress = stored.get((topic, partition))
            target_end = target_ends[(self.targets.name(topic), partition)]
            if progress is not None and 0 <= progress.target_position < target_end:
                tails.append(TargetTail(topic, partition, self.targets.name(topic), progress.position,
                                        progress.target_position, target_end))
        if not tails:
            return {}
        started = time.monotonic()
        results = reconcile_tails(self.clients.source_config, self.clients.target_config, tails,
                                  rewrite_of=self.rewrite_of)
        counted = sum(r.records for r in results.values() if isinstance(r, Reconciled))
        log.info("%d record(s) on the target past the stored progress of %d partition(s) counted as copied in "
                 "%.2f s", counted, len(tails), time.monotonic() - started)
        fallbacks = [(key, outcome) for key, outcome in sorted(results.items()) if isinstance(outcome, str)]
        for (topic, partition), outcome in fallbacks[:SHOWN_FALLBACKS]:
            log.warning("%s[%d]: %s: copying on from the stored progress at %d (the target gets those records "
                        "again)", topic, partition, outcome, stored[(topic, partition)].position)
        if len(fallbacks) > SHOWN_FALLBACKS:  # each one stays in the status (reconcile_fallback)
            log.warning("... and %d more partition(s) copied on from their stored progress (see `mirror-engine "
                        "status`)", len(fallbacks) - SHOWN_FALLBACKS)
        return results

    def go_on_after(self, state: PartitionState, reconciled: Reconciled) -> int:
        """Count a reconciled tail as copied: copying goes on after its last record, its offset-syncs written."""
        state.start_position = state.produced_next = state.acked_next = reconciled.position
        state.target_position = reconciled.target_position
        state.acked_source, state.acked_target = reconciled.last_source, reconciled.target_position - 1
        state.reconciled_records = reconciled.records
        self.side.offset_syncs.continue_after(state, state.acked_target - state.acked_source, reconciled.syncs)
        return reconciled.position


def gap(progress: PartitionProgress | None, topic_id: str, earliest: int, latest: int) -> str:
    """Why copying cannot go on from the stored progress without losing records ("" when it can)."""
    if progress is None:
        return ""
    if progress.topic_id and topic_id and progress.topic_id != topic_id:
        return (f"the source topic was deleted and recreated (topic id {progress.topic_id} -> {topic_id}): "
                "its old records were not all copied and the new ones would mix with them")
    if latest < progress.position:
        return (f"the source partition ends at {latest}, before the copied position {progress.position}: "
                "it was truncated or recreated")
    if earliest > progress.position:
        return (f"records {progress.position}..{earliest - 1} were deleted on the source (retention) before "
                "they were copied")
    return ""

