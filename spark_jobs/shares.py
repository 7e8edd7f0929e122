"""How a job's partitions are dealt to its Spark tasks: one task per core, each a share of about as many records.

The backfill and the validation read Kafka partitions in their tasks, with librdkafka clients of their own. A task
per partition paid its clients' start and its last acknowledgements or end-of-partition waits once per partition,
most of a small partition's time; a task per core pays them once per core and reads its partitions side by side.
A partition is never split between tasks (its target partition has one writer, in order; its pairing needs both of
its sides in one process). No pyspark here: the drivers call it before any task runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

Item = TypeVar("Item")


def balanced_shares(items: list[Item], size: Callable[[Item], int], cores: int) -> list[list[Item]]:
    """`items` dealt to at most `cores` shares (never an empty one), the largest first, each to the share with the
    least `size` so far: the largest share is within 4/3 of the best possible. Each share lists its largest first."""
    shares: list[list[Item]] = [[] for _ in range(min(max(cores, 1), len(items)))]
    totals = [0] * len(shares)
    for item in sorted(items, key=size, reverse=True):
        lightest = totals.index(min(totals))
        shares[lightest].append(item)
        totals[lightest] += size(item)
    return shares
