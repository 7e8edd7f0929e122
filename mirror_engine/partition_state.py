"""What the engine knows of one source partition while it copies it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(eq=False)
class PartitionState:
    """Bookkeeping of one copied partition.

    Invariant: every source record with offset < `copied_position()` has been acknowledged by the
    target, and the offset-sync of every discontinuity of (target - source) below it has been
    acknowledged too. `in_flight` holds, in produce order, the source offsets sent and not yet
    acknowledged; librdkafka reports deliveries of one partition in that same order.
    """

    topic: str
    partition: int
    target_topic: str
    start_position: int
    topic_id: str = ""
    in_flight: deque[int] = field(default_factory=deque)
    acked_source: int = -1  # source offset of the last acknowledged record
    acked_target: int = -1  # its target offset
    delta: int | None = None  # target - source of the last acknowledged record
    end_seen: int = -1  # the source end offset at the last end-of-partition event
    target_position: int = 0  # target offset after the last acknowledged record
    # Offset-syncs sent and not yet acknowledged: (source, target) in send order.
    syncs_in_flight: deque[tuple[int, int]] = field(default_factory=deque)
    last_synced_source: int = -1  # the record of the last offset-sync sent
    stored_position: int = -1  # the position last written to the progress topic
    records_copied: int = 0
    bytes_copied: int = 0
    failed: str = ""  # why copying this partition stopped, if it did
    failed_at: int = 1 << 62  # the source offset of the record that could not be copied

    def _uncapped_position(self) -> int:
        if self.in_flight:
            return self.in_flight[0]
        return min(max(self.acked_source + 1, self.end_seen, self.start_position), self.failed_at)

    def copied_position(self) -> int:
        position = self._uncapped_position()
        if self.syncs_in_flight:
            position = min(position, self.syncs_in_flight[0][0])
        return position

    def progress_target_position(self) -> int:
        """The target position matching `copied_position()`.

        Deliveries come in order, so every record below the position is acknowledged and the last
        of them ends at `target_position`. When the position stops at a record whose offset-sync
        is not yet acknowledged, that record is copied but not yet mapped: its target offset is
        where a consumer at the position must start.
        """
        if self.syncs_in_flight and self.syncs_in_flight[0][0] <= self._uncapped_position():
            return self.syncs_in_flight[0][1]
        return self.target_position
