"""The report from the per-partition findings, whichever way they were read: a topic whose source holds records
without a timestamp (format v0) is read and paired again without timestamps, all its partitions and only them."""

from __future__ import annotations

from spark_jobs.record_pairing import PartitionFindings, pair_partition
from spark_jobs.validation import PartitionRange, compare

RANGES = [PartitionRange("legacy", 0, "src.legacy", 0, 3, 0, 3), PartitionRange("legacy", 1, "src.legacy", 0, 2, 0, 2),
          PartitionRange("plain", 0, "src.plain", 0, 2, 0, 2)]


def test_a_topic_with_records_without_a_timestamp_is_paired_again_without_timestamps():
    asked: list[tuple[list[tuple[str, int]], frozenset[str]]] = []

    def pair_ranges(ranges: list[PartitionRange], untimed: frozenset[str]):
        asked.append(([(r.topic, r.partition) for r in ranges], untimed))
        found = {}
        for r in ranges:
            # legacy[0] holds v0 records: its copies carry the copy's time, so they differ while timestamps count.
            target = [9, 9, 9] if r.topic == "legacy" and "legacy" not in untimed and r.partition == 0 else None
            fps = list(range(r.source_end))
            found[(r.topic, r.partition)] = pair_partition(range(r.source_end), fps, range(r.target_end),
                                                           target or fps, 100)
        return found, {"legacy"} if any(r.topic == "legacy" and r.partition == 0 for r in ranges) else set()

    report = compare(RANGES, pair_ranges, lambda _t, _p, offset: offset, "plan", "full",
                     untimed=frozenset({"plain"}))
    assert asked == [([("legacy", 0), ("legacy", 1), ("plain", 0)], frozenset({"plain"})),
                     ([("legacy", 0), ("legacy", 1)], frozenset({"legacy", "plain"}))]
    assert report.clean and [(p.topic, p.partition, p.source_records) for p in report.partitions] == [
        ("legacy", 0, 3), ("legacy", 1, 2), ("plain", 0, 2)]
    assert len(report.notes) == 2
    assert "format v0" in report.notes[0] and "src.legacy" in report.notes[0]
    assert "LogAppendTime" in report.notes[1] and "src.plain" in report.notes[1]


def test_without_such_records_each_range_is_read_once_and_findings_become_the_report():
    asked: list[frozenset[str]] = []

    def pair_ranges(ranges: list[PartitionRange], untimed: frozenset[str]):
        asked.append(untimed)
        # legacy[0]: offset 1 missing and a foreign record at its place (changed); legacy[1]: a duplicate at 2.
        return {("legacy", 0): PartitionFindings(3, 3, missing=[1], extra=[1], extra_on_source=[False]),
                ("legacy", 1): PartitionFindings(2, 3, extra=[2], extra_on_source=[True]),
                ("plain", 0): PartitionFindings(2, 2)}, set()

    report = compare(RANGES, pair_ranges, lambda _t, _p, offset: offset, "plan", "sample", 0.5)
    assert asked == [frozenset()] and report.notes == [] and not report.clean
    rows = {(row["topic"], row["partition"]): row for row in report.to_dict()["partitions"]}
    assert rows[("legacy", 0)]["first_changed"] == [[1, 1]] and rows[("legacy", 0)]["missing"] == 0
    assert (rows[("legacy", 1)]["duplicates"], rows[("legacy", 1)]["first_extra"]) == (1, [2])
    assert rows[("plain", 0)]["clean"] and report.to_dict()["sample_fraction"] == 0.5
