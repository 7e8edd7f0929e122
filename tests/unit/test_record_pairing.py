"""Pairing one partition's records by fingerprint and occurrence: each kind of damage found where it is."""

from __future__ import annotations

from spark_jobs.record_pairing import pair_partition


def _pair(source_fps: list[int], target_fps: list[int], target_start: int = 0, limit: int = 100):
    return pair_partition(range(len(source_fps)), source_fps, range(target_start, target_start + len(target_fps)),
                          target_fps, limit)


def test_an_exact_copy_has_no_findings_whatever_the_input_order():
    found = pair_partition([2, 0, 1], [30, 10, 20], [11, 12, 10], [20, 30, 10], 100)
    assert (found.source_records, found.target_records) == (3, 3)
    assert (found.missing, found.extra, found.out_of_order) == ([], [], [])


def test_a_missing_record_is_named_by_its_source_offset():
    found = _pair([1, 2, 3, 4], [1, 2, 4])
    assert (found.missing, found.extra, found.out_of_order) == ([2], [], [])


def test_a_duplicate_is_extra_with_its_fingerprint_on_the_source():
    found = _pair([1, 2, 3], [1, 2, 2, 3], target_start=100)
    assert (found.missing, found.extra, found.extra_on_source) == ([], [102], [True])


def test_a_changed_record_is_one_missing_and_one_foreign_extra():
    found = _pair([1, 2, 3], [1, 9, 3])
    assert (found.missing, found.extra, found.extra_on_source) == ([1], [1], [False])


def test_records_swapped_on_the_target_are_out_of_order():
    found = _pair([1, 2, 3, 4], [1, 3, 2, 4])
    assert (found.missing, found.extra) == ([], [])
    assert found.out_of_order == [2]


def test_equal_records_pair_by_occurrence():
    # Three equal records on the source, two on the target: the third occurrence is the one missing.
    found = _pair([7, 7, 5, 7], [7, 7, 5])
    assert (found.missing, found.extra, found.out_of_order) == ([3], [], [])


def test_each_list_is_bounded_lowest_offsets_first():
    found = _pair(list(range(50)), [], limit=5)
    assert found.source_records == 50 and found.missing == [0, 1, 2, 3, 4]
