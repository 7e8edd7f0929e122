"""Partitions dealt to a job's Spark tasks: one share per core, about as many records each, every partition once."""

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
