"""What the engine knows of one source partition while it copies it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirror_engine.kafka import raw_size_budget
from mirror_engine.replication.offset_syncs import PartitionSyncs

if TYPE_CHECKING:
    from mirror_engine.replication.offset_syncs import OffsetSyncWriter

FAR = 1 << 62


@dataclass(eq=False, slots=True)
class PartitionState:
    """Bookkeeping of one copied partition.

    Invariant: every source record with offset < `copied_position()` has been acknowledged by the
    target, and so has the offset-sync of every discontinuity of (target - source) below it.

    Only some records carry a delivery callback: the first of each run of one partition in a
    consumed batch, every record after a source gap, and the last of each run. The producer is
    idempotent with the gapless guarantee, so an acknowledged record means every earlier record
    of the partition was written (any failure is fatal to the producer instead); and within a
    run without source gaps the target offsets advance one by one, so (target - source) can only
    change at a record that carries a callback, where the `OffsetSyncWriter` decides on a sync. In exactly-once
    mode the producer is transactional instead: a failed record fails the transaction's commit, and
    the commit markers between transactions fall between consumed batches, so again only at a run's
    first record, which carries a callback.
    """

    topic: str
    partition: int
    target_topic: str
    start_position: int
    topic_id: str = ""
    max_batch_bytes: int = FAR  # the target topic's max.message.bytes
    produced_next: int = -1  # source offset after the last record produced
    acked_next: int = -1  # source offset after the last record acknowledged
    callbacks_pending: int = 0
    acked_source: int = -1  # source offset of the last acknowledged record with a callback
    acked_target: int = -1  # its target offset
    end_seen: int = -1  # the source end offset at the last end-of-partition event
    end_known: int = -1  # the source end offset listed when the partition was assigned (the status's lag only)
    target_position: int = 0  # target offset after the last acknowledged record
    # The partition's offset-syncs (their delta, those in flight), kept by `offset_syncs`.
    syncs: PartitionSyncs = field(default_factory=PartitionSyncs)
    stored_position: int = -1  # the position last written to the progress topic
    records_produced: int = 0  # records handed to the producer (counted per run)
    records_copied: int = 0  # records the target acknowledged: what logs, status and summary report
    bytes_read: int = 0  # bytes of the records handed to the producer (keys, values, a bound of their headers)
    latency_ms: int = -1  # at the last acknowledged callback record: its acknowledgement time minus its timestamp
    record_age_ms: int = -1  # at the same record: the time it was handed to the producer minus its timestamp
    last_timestamp_ms: int = -1  # the timestamp of that record
    raw_budget: int = field(init=False, default=0)  # set from max_batch_bytes (see __post_init__)
    failed: str = ""  # why copying this partition stopped, if it did
    failed_at: int = FAR  # the source offset of the record that could not be copied
    reconciled_records: int = 0  # records found on the target past the stored progress, counted as copied
    reconcile_fallback: str = ""  # why those records were not counted (copying went on from the stored progress)
    # The status's figures as of its last interval, kept here by the status reporter so that an interval builds
    # no structure per partition: records behind the source's end, rates since the interval before, and the
    # counts those rates are taken from (-1: not yet, the first rate is 0).
    lag: int = 0
    records_per_s: float = 0.0
    bytes_per_s: float = 0.0
    rated_records: int = -1
    rated_bytes: int = 0
    # The flow's offset-sync writer, told of every acknowledged record that carries a callback; and what
    # stops the partition, called with (state, reason, offset).
    offset_syncs: OffsetSyncWriter | None = None
    on_failure: Callable[[PartitionState, str, int], None] | None = None
    # The plan's schema-id rewrite of the topic's records, (key, value) -> (key, value), or None
    # (`mirror_engine.schemas.RecordRewrites`).
    rewrite: Callable[[bytes | None, bytes | None], tuple[bytes | None, bytes | None]] | None = None

    def __post_init__(self) -> None:
        self.produced_next = self.acked_next = self.start_position
        self.fit_to(self.max_batch_bytes)

    def fit_to(self, max_batch_bytes: int) -> None:
        """The target topic takes batches of at most this size (its max.message.bytes)."""
        self.max_batch_bytes = max_batch_bytes
        # Records within this raw size (key + value + a bound of the headers) fit the target topic for sure.
        self.raw_budget = raw_size_budget(max_batch_bytes)

    def callback(self, source: int, boundary: bool, produced: int) -> Callable[[Any, Any], None]:
        """The delivery callback of a record that carries one (see the class docstring); `produced` counts the
        partition's records handed to the producer up to this one: once it is acknowledged, so are they."""
        self.callbacks_pending += 1
        handed_ms = int(time.time() * 1000)

        def delivered(error: Any, message: Any) -> None:
            self.callbacks_pending -= 1
            if error is not None:
                assert self.on_failure is not None
                self.on_failure(self, f"the target rejected the record at source offset {source}: {error.str()}",
                                source)
                return
            target = message.offset()
            timestamp = message.timestamp()[1]
            self.latency_ms = int(time.time() * 1000) - timestamp
            self.record_age_ms = handed_ms - timestamp
            self.last_timestamp_ms = timestamp
            self.acked_next = source + 1
            self.records_copied = max(self.records_copied, produced)
            self.acked_source, self.acked_target = source, target
            self.target_position = target + 1
            assert self.offset_syncs is not None
            if not self.offset_syncs.acknowledged(self, source, target, boundary):
                assert self.on_failure is not None
                self.on_failure(self, f"the target partition {self.target_topic}[{self.partition}] received "
                                      "records from another producer while this one copied into it: offsets can "
                                      "no longer be translated exactly", source)

        return delivered

    def acknowledged_position(self) -> int:
        """The next source offset to copy, as far as the target acknowledged the copies: what the status's lag counts
        from. `copied_position`, the bound of the stored progress, is lower while an offset-sync is in flight."""
        if self.acked_next == self.produced_next and not self.callbacks_pending:
            position = max(self.acked_next, self.end_seen)
        else:
            position = self.acked_next
        return min(position, self.failed_at)

    def copied_position(self) -> int:
        position = self.acknowledged_position()
        oldest = self.syncs.oldest()
        return position if oldest is None else min(position, oldest[0])

    def all_acknowledged(self) -> bool:
        return self.acked_next == self.produced_next and not self.callbacks_pending

    def progress_target_position(self) -> int:
        """The target position matching `copied_position()`.

        Every record below the position is acknowledged and the last of them ends at
        `target_position`. When the position stops at a record whose offset-sync is not yet
        acknowledged, that record is copied but not yet mapped: its target offset is where a
        consumer at the position must start.
        """
        oldest = self.syncs.oldest()
        if oldest is not None and oldest[0] <= self.acknowledged_position():
            return oldest[1]
        return self.target_position
