"""Source-to-target offset translation for replicated partitions, built from offset syncs.

The engine copies each source partition's records, in order, to the same partition of the target topic.
It writes an offset sync (u, d) for the first copied record of a run and whenever the delta d - u differs
from the previous copied record's (plus, harmlessly, periodic syncs with an unchanged delta), and it
records per partition the copied position P (every source record below P is copied) and the target
position T (the target offset after the last copied record, or further). From these alone a source offset
translates to the target offset where a consumer must start to read exactly the copied records at or
after it; offsets the data cannot answer for translate to None, never to a guess.
"""

from array import array
from bisect import bisect_left, bisect_right

from mirror_engine.mm2 import OffsetSync

__all__ = ["OffsetMap", "PartitionOffsetMap"]


# Invariant: `_upstream` is strictly increasing and `_downstream[i]` is the downstream offset of the sync
# at upstream offset `_upstream[i]` (one entry per upstream offset; the last sync added for it wins); no
# sync held has the delta (downstream - upstream) of the one before it. `_copied_position` and
# `_target_position` are both None (positions not known yet) or both set, and never decrease.
# `_explicit_start`, when set, overrides the smallest sync's upstream offset as the first source offset
# the flow covers. Nothing else is stored.
class PartitionOffsetMap:
    """The offset syncs and copy positions of one source partition, and translation from them.

    Only the syncs where the delta changes are held: a sync on the line of the one before it (the
    engine's periodic syncs, a sync re-sent after a restart) changes no translation, so `add_sync` drops
    it. Held in two arrays of 8-byte integers, a partition's map costs 16 bytes per change of delta,
    however long the flow runs.

    Syncs may arrive duplicated, and a sync at or below ones already held (re-sent by a restart's
    reconciliation) is inserted in its place: as long as every change of delta below a sync arrives
    before it, which holds for syncs written in the order of the copy (the engine's writer, the
    backfill's), the result does not depend on arrival order. A rewind of the flow (the target partition
    truncated, or the flow restarted from scratch) is not detected: its syncs replace or sit beside the
    old ones by upstream offset, and old syncs above them stay. A caller that knows the flow restarted
    should build a fresh map for the partition.
    """

    def __init__(self, start_offset: int | None = None) -> None:
        self._upstream = array("q")
        self._downstream = array("q")
        self._copied_position: int | None = None
        self._target_position: int | None = None
        self._explicit_start: int | None = None
        if start_offset is not None:
            self.set_start_offset(start_offset)

    def __len__(self) -> int:
        """Number of syncs held: the changes of delta."""
        return len(self._upstream)

    @property
    def start_offset(self) -> int | None:
        """First source offset the flow covers: as set explicitly, else the smallest sync's upstream offset."""
        if self._explicit_start is not None:
            return self._explicit_start
        return self._upstream[0] if self._upstream else None

    @property
    def copied_position(self) -> int | None:
        """P: every source record below it has been copied and acknowledged (None until known)."""
        return self._copied_position

    @property
    def target_position(self) -> int | None:
        """T: target offset after the last copied record, or further (None until known)."""
        return self._target_position

    def set_start_offset(self, start_offset: int) -> None:
        """Declare that source records below `start_offset` were never copied (e.g. a flow started at latest)."""
        _require_offset("start_offset", start_offset)
        self._explicit_start = start_offset

    def add_sync(self, upstream_offset: int, downstream_offset: int) -> None:
        """Record that source offset `upstream_offset` was copied to target offset `downstream_offset`.

        Drops it when it has the delta of the sync before it; else inserts it, or replaces the downstream
        offset of the sync with the same upstream offset, and drops the sync after it if that one now has
        its delta. O(1) for the common case of a sync above all others; O(log n) search plus an array
        insert otherwise.

        Why a sync on the line of the one before it changes nothing: let a be the sync before it, x the
        sync, and c the next change of delta (or T). For g in [a.up, x.up), the rule gives
        min(a.down + (g - a.up), x.down) with x and min(a.down + (g - a.up), c.down) without; the linear
        value is below x.down (g < x.up, same delta) and so below c.down too: both give the linear value.
        For g in [x.up, c.up), x.down + (g - x.up) equals a.down + (g - a.up) (same delta) and the cap is
        c.down either way. `reverse` is the mirror image.
        """
        _require_offset("upstream_offset", upstream_offset)
        _require_offset("downstream_offset", downstream_offset)
        ups, downs = self._upstream, self._downstream
        delta = downstream_offset - upstream_offset
        if not ups or upstream_offset > ups[-1]:
            if not ups or downs[-1] - ups[-1] != delta:
                ups.append(upstream_offset)
                downs.append(downstream_offset)
            return
        i = bisect_left(ups, upstream_offset)
        if ups[i] != upstream_offset:
            if i > 0 and downs[i - 1] - ups[i - 1] == delta:
                return
            ups.insert(i, upstream_offset)
            downs.insert(i, downstream_offset)
        elif i > 0 and downs[i - 1] - ups[i - 1] == delta:  # now on the line of the sync before it
            del ups[i], downs[i]
            i -= 1
        else:
            downs[i] = downstream_offset
        following = i + 1
        if following < len(ups) and downs[following] - ups[following] == downs[i] - ups[i]:
            del ups[following], downs[following]

    def syncs(self) -> list[tuple[int, int]]:
        """The syncs held, (upstream, downstream) in upstream order: every change of delta."""
        return list(zip(self._upstream, self._downstream, strict=True))

    def set_positions(self, copied_position: int, target_position: int) -> None:
        """Advance P and T. Positions never move backwards: a value below the current one is ignored."""
        _require_offset("copied_position", copied_position)
        _require_offset("target_position", target_position)
        if self._copied_position is None or copied_position > self._copied_position:
            self._copied_position = copied_position
        if self._target_position is None or target_position > self._target_position:
            self._target_position = target_position

    def translate(self, source_offset: int) -> int | None:
        """Target offset at which a consumer must start to read exactly the copied records at or after `source_offset`.

        That is the target offset of the first copied record at or after `source_offset` (g), or T when
        no copied record is at or after g but g <= P. None when g > P (not copied yet), g is below the
        start offset (never copied), or there is no sync at or below g (nothing to translate from).

        Rule: s = the latest sync with s.up <= g; cap = the downstream offset of the next sync (the first
        with up > g) if any, else T; result = min(s.down + (g - s.up), cap). At g == s.up this is s.down.

        Why it is exact. Let r be the first copied record with u >= g, and q the copied record before it.
          * Between s and q no sync was needed, so every copied record from s to q has delta s.down - s.up
            and sits at the same relative position as in the source; in particular q.d = s.down + (q.u -
            s.up), so the linear value s.down + (g - s.up) is > q.d because g > q.u.
          * If r's delta differs from q's (a source gap not matched by a target gap), the engine wrote a
            sync at r, which is the next sync, so cap = r.d and the min cannot overshoot r even when the
            linear value runs past it into the gap. If r's delta is unchanged, the linear value is <= r.d
            (g <= r.u), and cap >= r.d. If there is no r, cap = T when no sync follows.
          * Both candidates exceed q.d (the next sync's record and T come after q), so the min lies in
            (q.d, r.d] (or (q.d, T]): a consumer starting there reads r first and never q.
        When the target is contiguous that interval is the single offset r.d (or T = q.d + 1). When a
        source gap is matched by an equal target gap (transaction markers) no sync marks it, and the
        result may fall inside the target gap; it is still a correct start, not r.d itself.

        At g == P the result is raised to T when below it: no record at or after P is known to be copied,
        so the next one lands at T or later, and T is where a caught-up consumer's position would be.

        O(log n): one bisection over the upstream offsets.
        """
        copied, target = self._copied_position, self._target_position
        if copied is None or target is None:
            return None
        if source_offset == copied and not self._upstream:
            return target  # nothing copied yet (an empty partition, a flow started at latest): the next lands at T
        if not self._upstream:
            return None
        start = self.start_offset
        if start is None or source_offset < start or source_offset > copied:
            return None
        i = bisect_right(self._upstream, source_offset) - 1
        if i < 0:
            return None  # an explicit start below the first sync: nothing to translate these offsets from
        cap = self._downstream[i + 1] if i + 1 < len(self._upstream) else target
        result = min(self._downstream[i] + (source_offset - self._upstream[i]), cap)
        if source_offset == copied:
            return max(result, target)
        return result


    def reverse(self, target_offset: int) -> int | None:
        """Source offset from which a consumer reads exactly the source records whose copies are at or after
        `target_offset` (the way back: a group moved to the target and rolled back to the source).

        The mirror image of `translate`: s = the latest sync with s.down <= t; cap = the upstream offset of
        the next sync, else P; result = min(s.up + (t - s.down), cap). T itself maps to P. None when t is
        past T (records the target got from elsewhere, e.g. producers already switched) or before the
        first sync (the target held records before the flow copied any).
        """
        copied, target = self._copied_position, self._target_position
        if copied is None or target is None:
            return None
        if target_offset >= target:
            return copied if target_offset == target else None
        i = bisect_right(self._downstream, target_offset) - 1
        if i < 0:
            return None
        cap = self._upstream[i + 1] if i + 1 < len(self._upstream) else copied
        return min(self._upstream[i] + (target_offset - self._downstream[i]), cap)


class OffsetMap:
    """Offset maps of many source partitions, keyed by (topic, partition)."""

    def __init__(self) -> None:
        self._partitions: dict[tuple[str, int], PartitionOffsetMap] = {}

    def add(self, sync: OffsetSync) -> None:
        """Add an offset sync to its partition's map (creating it on first use)."""
        try:
            self._map_for(sync.topic, sync.partition).add_sync(sync.upstream_offset, sync.downstream_offset)
        except ValueError as exc:
            raise ValueError(f"offset sync for {sync.topic}-{sync.partition}: {exc}") from exc

    def set_positions(self, topic: str, partition: int, copied: int, target: int) -> None:
        """Advance the copied position P and target position T of `topic`-`partition` (never backwards)."""
        try:
            self._map_for(topic, partition).set_positions(copied, target)
        except ValueError as exc:
            raise ValueError(f"positions for {topic}-{partition}: {exc}") from exc

    def translate(self, topic: str, partition: int, offset: int) -> int | None:
        """Target offset for source `offset` of `topic`-`partition`; None if unknown (see PartitionOffsetMap)."""
        partition_map = self._partitions.get((topic, partition))
        return None if partition_map is None else partition_map.translate(offset)

    def reverse(self, topic: str, partition: int, target_offset: int) -> int | None:
        """Source offset for target `target_offset` of the copy of `topic`-`partition`; None if unknown."""
        partition_map = self._partitions.get((topic, partition))
        return None if partition_map is None else partition_map.reverse(target_offset)

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self._partitions)

    def partition(self, topic: str, partition: int) -> PartitionOffsetMap | None:
        """The map of `topic`-`partition`, or None if nothing was recorded for it."""
        return self._partitions.get((topic, partition))

    def _map_for(self, topic: str, partition: int) -> PartitionOffsetMap:
        partition_map = self._partitions.get((topic, partition))
        if partition_map is None:
            partition_map = self._partitions[(topic, partition)] = PartitionOffsetMap()
        return partition_map


def _require_offset(field: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{field} must be a non-negative offset, got {value}")
