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



def _batches(rows: list[tuple], size: int = 3) -> list:
    """Rows (key, offset, fp, fp_untimed, stampless, side) as the shuffle hands them over, a few per Arrow batch."""
    import pyarrow as pa

    schema = pa.schema([("key", pa.int64()), ("offset", pa.int64()), ("fp", pa.int64()), ("fp_untimed", pa.int64()),
                        ("stampless", pa.bool_()), ("side", pa.int8())])
    return [pa.RecordBatch.from_pylist([dict(zip(schema.names, row, strict=True)) for row in rows[i:i + size]],
                                       schema=schema) for i in range(0, len(rows), size)]


def _rows(key: int, side: int, offsets: list[int], fps: list[int], untimed: list[int] | None = None,
          stampless: bool = False) -> list[tuple]:
    return [(key, offset, fp, fp_untimed, stampless, side)
            for offset, fp, fp_untimed in zip(offsets, fps, untimed or fps, strict=True)]


def test_several_kafka_partitions_in_one_spark_partition_are_paired_apart():
    """Rows of two topics' partitions, both sides, interleaved across Arrow batches as a shuffle delivers them."""
    from spark_jobs.record_pairing import pair_partitions

    a0, b3 = 0 << 32 | 0, 1 << 32 | 3  # topic "a" partition 0, topic "b" partition 3
    mixed = (_rows(a0, 0, [0, 1, 2, 3], [1, 2, 3, 4]) + _rows(b3, 1, [10, 11, 12], [5, 5, 6])
             + _rows(a0, 1, [7, 8, 9], [1, 2, 4]) + _rows(b3, 0, [0, 1], [5, 6]))
    mixed = mixed[::2] + mixed[1::2]  # no order within a side either
    found = {(row["topic"], row["partition"], row["timed"]): row
             for batch in pair_partitions(iter(_batches(mixed)), ["a", "b"], 100) for row in batch.to_pylist()}
    a, b = found[("a", 0, True)], found[("b", 3, True)]
    assert (a["source_records"], a["target_records"], a["missing"], a["extra"]) == (4, 3, [2], [])
    assert (b["source_records"], b["target_records"], b["missing"], b["extra"], b["extra_on_source"]) == (
        2, 3, [], [11], [True])
    assert not a["stampless"] and not b["stampless"]
    assert list(pair_partitions(iter([]), ["a"], 100)) == []


def test_a_partition_is_paired_without_timestamps_too_when_not_clean_with_them():
    """Source records without a timestamp (format v0) were copied with the time of the copy: only the pairing
    without timestamps finds the copy clean; the driver chooses it for the topic."""
    from spark_jobs.record_pairing import pair_partitions

    rows = (_rows(0, 0, [0, 1, 2], [1, 2, 3], [11, 12, 13], stampless=True)
            + _rows(0, 1, [0, 1, 2], [4, 5, 6], [11, 12, 13]) + _rows(1, 0, [0], [7]) + _rows(1, 1, [0], [7]))
    found = [row for batch in pair_partitions(iter(_batches(rows)), ["a"], 100) for row in batch.to_pylist()]
    by_kind = {(row["partition"], row["timed"]): row for row in found}
    assert sorted(by_kind) == [(0, False), (0, True), (1, True)]  # a clean partition: one pairing
    assert by_kind[(0, True)]["stampless"] and by_kind[(0, True)]["missing"] == [0, 1, 2]
    assert (by_kind[(0, False)]["missing"], by_kind[(0, False)]["extra"]) == ([], [])
    assert not by_kind[(1, True)]["stampless"]
