"""Partitions dealt to a job's Spark tasks: one share per core, about as many records each, every partition once;
a validation task pairs its share a bounded number of records at a time."""

from __future__ import annotations

from spark_jobs.shares import balanced_shares


def test_each_core_gets_a_share_of_about_as_many_records_and_each_partition_once():
    sizes = [900, 100, 500, 500, 300, 300, 200, 100]
    shares = balanced_shares(list(enumerate(sizes)), lambda item: item[1], 2)
    assert sorted(partition for share in shares for partition, _ in share) == list(range(len(sizes)))
    assert sorted(sum(size for _, size in share) for share in shares) == [1400, 1500]  # the best is 1450 each
    assert all([size for _, size in share] == sorted((size for _, size in share), reverse=True) for share in shares)


def test_never_more_shares_than_items_nor_an_empty_one():
    assert balanced_shares([7], lambda size: size, 4) == [[7]]
    assert balanced_shares([3, 1, 2], lambda size: size, 16) == [[3], [2], [1]]
    assert balanced_shares([], lambda size: size, 2) == []
    assert balanced_shares([5, 4], lambda size: size, 0) == [[5, 4]]


def test_a_validation_task_holds_a_bounded_number_of_records_at_a_time_never_less_than_one_partition():
    from mirror_engine.kafka import in_batches
    from spark_jobs.range_validation import records_of
    from spark_jobs.validation import PartitionRange

    def record_bounded(share: list[PartitionRange], limit: int):
        return in_batches(share, records_of, limit)

    def copied(partition: int, records: int) -> PartitionRange:
        return PartitionRange("t", partition, "t", 100, 100 + records, 0, records)  # both sides: 2 x records

    share = [copied(0, 70), copied(1, 20), copied(2, 20), copied(3, 5), copied(4, 0)]
    groups = [[r.partition for r in group] for group in record_bounded(share, limit=85)]
    assert groups == [[0], [1, 2], [3, 4]]  # 140 alone (over the limit), then 80, then 10
    assert [[r.partition for r in g] for g in record_bounded(share, limit=90)] == [[0], [1, 2, 3, 4]]
    assert [[r.partition for r in g] for g in record_bounded(share, limit=1_000)] == [[0, 1, 2, 3, 4]]
    assert list(record_bounded([], limit=100)) == []
