"""Work cut into consecutive batches of bounded cost: admin requests under the controller's limit (`prepare`),
records a validation task reads before it pairs them (`spark_jobs.range_validation`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def in_batches(items: list[T], cost: Callable[[T], int], budget: int) -> Iterator[list[T]]:
    """Consecutive slices of `items` whose costs add up to at most `budget` (an item over it alone), in order."""
    batch: list[T] = []
    used = 0
    for item in items:
        spent = cost(item)
        if batch and used + spent > budget:
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += spent
    if batch:
        yield batch
