"""Offset translation from offset syncs is exact for every source offset up to the copied position."""

import random
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from mirror_engine.flow import OffsetMap, PartitionOffsetMap
from mirror_engine.mm2 import OffsetSync

SEEDS = (1, 7, 42, 2024, 31337)


@dataclass(frozen=True)
class SimulatedCopy:
    """What the engine knows after copying a partition: records (u, d), P, T, and the syncs it wrote."""

    upstream: list[int]
    downstream: list[int]
    copied_position: int
    target_position: int
    syncs: list[tuple[int, int]]

    def first_target_at_or_after(self, g: int) -> int:
        """The truth: target offset of the first copied record with u >= g, or T when there is none."""
        j = bisect_left(self.upstream, g)
        return self.downstream[j] if j < len(self.upstream) else self.target_position

    def reads_exactly_from(self, g: int, t: int | None) -> bool:
        """A consumer starting at target offset t reads exactly the copied records with u >= g."""
        if t is None or t > self.target_position:
            return False
        return bisect_left(self.downstream, t) == bisect_left(self.upstream, g)

    def offsets(self) -> range:
        return range(self.upstream[0], self.copied_position + 1)

    def build_map(self) -> PartitionOffsetMap:
        partition_map = PartitionOffsetMap()
        for up, down in self.syncs:
            partition_map.add_sync(up, down)
        partition_map.set_positions(self.copied_position, self.target_position)
        return partition_map


def simulate_copy(seed: int, target_gaps: bool) -> SimulatedCopy:
    """Copy several hundred source records with random gaps; write syncs by the engine's rule."""
    rng = random.Random(seed)
    source_gaps = (0,) * 6 + (1, 2, 3, 8)  # compaction, transaction markers, aborted batches
    marker_gaps = (0,) * 6 + (1, 2) if target_gaps else (0,)
    u, d = rng.randrange(100), rng.randrange(100)
    upstream: list[int] = []
    downstream: list[int] = []
    for _ in range(rng.randrange(300, 600)):
        upstream.append(u)
        downstream.append(d)
        u += 1 + rng.choice(source_gaps)
        d += 1 + rng.choice(marker_gaps)
    syncs = [
        (up, down)
        for i, (up, down) in enumerate(zip(upstream, downstream, strict=True))
        if i == 0 or down - up != downstream[i - 1] - upstream[i - 1]
    ]
    trailing_markers = rng.randrange(3) if target_gaps else 0
    return SimulatedCopy(
        upstream=upstream,
        downstream=downstream,
        copied_position=upstream[-1] + 1 + rng.randrange(5),  # P may be past trailing source gaps
        target_position=downstream[-1] + 1 + trailing_markers,
        syncs=syncs,
    )


def naive_translate(copy: SimulatedCopy) -> Callable[[int], int]:
    """s.down + (g - s.up) from the latest sync at or below g, without the cap."""
    ups = [up for up, _ in copy.syncs]

    def translate(g: int) -> int:
        up, down = copy.syncs[bisect_right(ups, g) - 1]
        return down + (g - up)

    return translate


def mapped(*syncs: tuple[int, int], copied: int, target: int) -> PartitionOffsetMap:
    partition_map = PartitionOffsetMap()
    for up, down in syncs:
        partition_map.add_sync(up, down)
    partition_map.set_positions(copied, target)
    return partition_map


# Translation


def test_contiguous_copy_translates_every_offset_to_start_plus_k() -> None:
    partition_map = mapped((1000, 50), copied=1100, target=150)
    assert [partition_map.translate(1000 + k) for k in range(101)] == [50 + k for k in range(101)]


@pytest.mark.parametrize("seed", SEEDS)
def test_source_gaps_translate_to_first_copied_record_at_or_after(seed: int) -> None:
    copy = simulate_copy(seed, target_gaps=False)
    partition_map = copy.build_map()
    wrong = [g for g in copy.offsets() if partition_map.translate(g) != copy.first_target_at_or_after(g)]
    assert wrong == []


@pytest.mark.parametrize("seed", SEEDS)
def test_source_and_target_gaps_translate_to_a_start_reading_exactly_the_records_at_or_after(seed: int) -> None:
    copy = simulate_copy(seed, target_gaps=True)
    partition_map = copy.build_map()
    wrong = [g for g in copy.offsets() if not copy.reads_exactly_from(g, partition_map.translate(g))]
    assert wrong == []


@pytest.mark.parametrize("seed", SEEDS)
def test_source_gaps_translate_copied_offsets_to_their_own_target_offset(seed: int) -> None:
    copy = simulate_copy(seed, target_gaps=True)
    partition_map = copy.build_map()
    translated = [partition_map.translate(u) for u in copy.upstream]
    assert translated == copy.downstream


@pytest.mark.parametrize("target_gaps", [False, True], ids=["contiguous-target", "target-gaps"])
@pytest.mark.parametrize("seed", SEEDS)
def test_naive_rule_without_cap_overshoots_inside_source_gaps(seed: int, target_gaps: bool) -> None:
    copy = simulate_copy(seed, target_gaps)
    naive = naive_translate(copy)
    wrong = [g for g in copy.offsets() if not copy.reads_exactly_from(g, naive(g))]
    assert wrong, "the simulated data must be able to expose a translation that ignores source gaps"
    assert all(naive(g) > copy.first_target_at_or_after(g) for g in wrong)


def test_equal_source_and_target_gap_translates_into_the_target_gap() -> None:
    # Source records 0, 1, 2, 5 land at 0, 1, 2, 5 (3 and 4 are transaction markers on both sides): the
    # delta never changes, so no sync marks the gap and 3 translates to 3, a marker just before record 5.
    partition_map = mapped((0, 0), copied=6, target=6)
    assert partition_map.translate(3) == 3
    assert partition_map.translate(5) == 5


@pytest.mark.parametrize("seed", SEEDS)
def test_periodic_syncs_with_the_same_delta_are_dropped_and_change_nothing(seed: int) -> None:
    # The engine's order: a sync at every change of delta, and between them periodic syncs of the latest
    # acknowledged record, which keep the delta. None of them is held, and every translation stays exact.
    copy = simulate_copy(seed, target_gaps=True)
    periodic = [(u, d) for i, (u, d) in enumerate(zip(copy.upstream, copy.downstream, strict=True)) if i % 7 == 3]
    written = sorted(set(copy.syncs) | set(periodic))
    assert len(written) > len(copy.syncs)
    plain = copy.build_map()
    with_periodic = mapped(*written, copied=copy.copied_position, target=copy.target_position)
    assert len(with_periodic) == len(plain) == len(copy.syncs)
    assert [with_periodic.translate(g) for g in copy.offsets()] == [plain.translate(g) for g in copy.offsets()]
    assert all(copy.reads_exactly_from(g, with_periodic.translate(g)) for g in copy.offsets())
    targets = range(copy.downstream[0], copy.target_position + 1)
    assert [with_periodic.reverse(t) for t in targets] == [plain.reverse(t) for t in targets]


def test_a_long_flow_holds_its_changes_of_delta_only() -> None:
    partition_map = PartitionOffsetMap()
    for round_ in range(10_000):  # a partition moving for hours: a periodic sync every interval
        partition_map.add_sync(100 * round_, 100 * round_ + 7)
    partition_map.add_sync(1_000_000, 1_000_010)  # a target gap of three: the delta changes
    partition_map.add_sync(1_000_100, 1_000_110)
    assert len(partition_map) == 2
    partition_map.set_positions(1_000_200, 1_000_210)
    assert partition_map.translate(999_999) == 1_000_006
    assert partition_map.translate(1_000_000) == 1_000_010
    assert partition_map.translate(1_000_150) == 1_000_160


@pytest.mark.parametrize("seed", SEEDS)
def test_duplicate_and_re_sent_syncs_arriving_late_translate_as_in_order(seed: int) -> None:
    # A restart re-sends syncs of records already mapped (its reconciliation of the target's tail), after later
    # ones were read; duplicates come with it. Every change of delta below a sync still arrives before it.
    copy = simulate_copy(seed, target_gaps=True)
    every_record = list(zip(copy.upstream, copy.downstream, strict=True))
    re_sent = random.Random(seed).sample(every_record, len(every_record) // 3)
    random.Random(seed + 1).shuffle(re_sent)
    in_order = copy.build_map()
    late = mapped(*copy.syncs, *re_sent, *copy.syncs[::3], copied=copy.copied_position, target=copy.target_position)
    assert len(late) == len(in_order)
    assert [late.translate(g) for g in copy.offsets()] == [in_order.translate(g) for g in copy.offsets()]


def test_a_late_sync_that_puts_the_next_one_on_its_line_drops_it() -> None:
    partition_map = mapped((0, 0), (10, 12), copied=20, target=22)
    partition_map.add_sync(5, 7)  # the change of delta was at 5, not 10: (10, 12) is now on its line
    assert len(partition_map) == 2
    assert [partition_map.translate(g) for g in (4, 5, 10, 20)] == [4, 7, 12, 22]
    partition_map.add_sync(5, 5)  # replaced by a sync on the line of (0, 0): held no more
    assert len(partition_map) == 1
    assert partition_map.translate(5) == 5


def test_offset_above_copied_position_is_not_translatable() -> None:
    partition_map = mapped((0, 0), copied=10, target=10)
    assert partition_map.translate(11) is None


def test_offset_below_start_is_not_translatable() -> None:
    partition_map = mapped((500, 0), copied=510, target=10)
    assert partition_map.start_offset == 500
    assert partition_map.translate(499) is None
    assert partition_map.translate(500) == 0


def test_offset_below_explicit_start_is_not_translatable() -> None:
    partition_map = mapped((500, 0), copied=510, target=10)
    partition_map.set_start_offset(505)
    assert partition_map.translate(504) is None
    assert partition_map.translate(505) == 5


def test_no_syncs_translates_only_the_copied_position() -> None:
    # Nothing copied yet (a flow started at latest, or an empty partition): the next record lands at T.
    partition_map = PartitionOffsetMap()
    partition_map.set_positions(10, 7)
    assert partition_map.translate(0) is None
    assert partition_map.translate(9) is None
    assert partition_map.translate(10) == 7
    assert partition_map.translate(11) is None


def test_unknown_positions_are_not_translatable() -> None:
    partition_map = PartitionOffsetMap()
    partition_map.add_sync(0, 0)
    assert partition_map.translate(0) is None


def test_copied_position_with_nothing_copied_after_translates_to_target_position() -> None:
    # Records 0..9 at 0..9; P = 13 past trailing source markers; T = 10.
    assert mapped((0, 0), copied=13, target=10).translate(13) == 10


def test_copied_position_translates_to_target_position_past_trailing_target_markers() -> None:
    # Records 0..9 at 0..9, then a commit marker at target offset 10: P = 10, T = 11.
    partition_map = mapped((0, 0), copied=10, target=11)
    assert partition_map.translate(10) == 11


def test_sync_at_exact_offset_translates_to_its_downstream() -> None:
    partition_map = mapped((0, 0), (10, 4), copied=20, target=14)
    assert partition_map.translate(10) == 4
    assert partition_map.translate(7) == 4  # inside the source gap 4..9: capped at the next copied record


# Positions


def test_positions_never_move_backwards() -> None:
    partition_map = PartitionOffsetMap()
    partition_map.set_positions(100, 80)
    partition_map.set_positions(90, 85)
    partition_map.set_positions(120, 70)
    assert (partition_map.copied_position, partition_map.target_position) == (120, 85)


def test_negative_offsets_are_rejected() -> None:
    with pytest.raises(ValueError, match="upstream_offset"):
        PartitionOffsetMap().add_sync(-1, 0)


# OffsetMap


def test_offset_map_keeps_partitions_apart() -> None:
    offset_map = OffsetMap()
    offset_map.add(OffsetSync("orders", 0, 0, 100))
    offset_map.add(OffsetSync("orders", 1, 0, 200))
    offset_map.set_positions("orders", 0, 10, 110)
    offset_map.set_positions("orders", 1, 10, 210)
    assert offset_map.translate("orders", 0, 5) == 105
    assert offset_map.translate("orders", 1, 5) == 205


def test_offset_map_unknown_partition_is_not_translatable() -> None:
    offset_map = OffsetMap()
    assert offset_map.translate("orders", 0, 0) is None
    assert offset_map.partition("orders", 0) is None


def test_offset_map_error_names_topic_and_partition() -> None:
    with pytest.raises(ValueError, match="orders-3"):
        OffsetMap().add(OffsetSync("orders", 3, -1, 0))


# The way back (rollback of a switched group)


@pytest.mark.parametrize("target_gaps", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_reverse_translation_reads_exactly_the_source_records_of_the_copies_at_or_after(seed: int,
                                                                                       target_gaps: bool) -> None:
    copy = simulate_copy(seed, target_gaps)
    partition_map = copy.build_map()
    for t in range(copy.downstream[0], copy.target_position + 1):
        g = partition_map.reverse(t)
        assert g is not None and g <= copy.copied_position, t
        assert bisect_left(copy.upstream, g) == bisect_left(copy.downstream, t), (t, g)


@pytest.mark.parametrize("seed", SEEDS)
def test_reverse_of_a_translation_resumes_at_the_same_record(seed: int) -> None:
    copy = simulate_copy(seed, target_gaps=False)
    partition_map = copy.build_map()
    for g in copy.offsets():
        back = partition_map.reverse(partition_map.translate(g))  # type: ignore[arg-type]
        assert back is not None and bisect_left(copy.upstream, back) == bisect_left(copy.upstream, g), g


def test_reverse_past_the_copy_or_before_it_is_unknown() -> None:
    partition_map = mapped((100, 10), copied=150, target=60)
    assert partition_map.reverse(60) == 150
    assert partition_map.reverse(61) is None, "records the target got from elsewhere are not on the source"
    assert partition_map.reverse(9) is None
    assert partition_map.reverse(10) == 100
