"""Which producer writes each target topic's records: one for a flow of few topics or a transaction, several for a
flow of many topics, each topic always on the same one, the queue bound shared between them."""

from __future__ import annotations

from typing import Any

from mirror_engine.replication.testing import (
    MOST_PRODUCERS,
    QUEUE_MAX_KBYTES,
    QUEUE_MAX_MESSAGES,
    TOPICS_PER_PRODUCER,
    RecordProducers,
)


class _Producer:
    """Records what it is asked: its settings, metadata requests, polls and flushes."""

    def __init__(self, settings: dict[str, Any], waiting: int = 0) -> None:
        self.settings = settings
        self.waiting = waiting
        self.asked_metadata = self.polls = 0
        self.flush_timeouts: list[float] = []

    def list_topics(self, timeout: float) -> None:
        self.asked_metadata += 1

    def poll(self, timeout: float) -> int:
        self.polls += 1
        return 0

    def flush(self, timeout: float) -> int:
        self.flush_timeouts.append(timeout)
        return self.waiting


def _pool(most: int = MOST_PRODUCERS) -> tuple[RecordProducers, list[_Producer]]:
    made: list[_Producer] = []

    def make(settings: dict[str, Any]) -> _Producer:
        made.append(_Producer(settings))
        return made[-1]

    main = _Producer({"batch.size": 1000, "queue.buffering.max.messages": QUEUE_MAX_MESSAGES,
                      "queue.buffering.max.kbytes": QUEUE_MAX_KBYTES})
    return RecordProducers(main, dict(main.settings), most, make), made  # type: ignore[arg-type]


def test_a_flow_of_few_topics_writes_its_records_through_the_one_producer():
    pool, made = _pool()
    pool.spread(TOPICS_PER_PRODUCER, [f"t{i}" for i in range(TOPICS_PER_PRODUCER)])
    assert made == [] and pool.all() == [pool.main]
    assert {id(pool.of(f"t{i}")) for i in range(TOPICS_PER_PRODUCER)} == {id(pool.main)}


def test_exactly_once_keeps_every_record_on_the_one_producer_however_many_topics():
    pool, made = _pool(most=1)
    pool.spread(10 * TOPICS_PER_PRODUCER, [f"t{i}" for i in range(10 * TOPICS_PER_PRODUCER)])
    assert made == [] and pool.of("t999") is pool.main


def test_many_topics_are_spread_evenly_and_the_queue_bound_shared():
    pool, made = _pool()
    topics = [f"t{i}" for i in range(350)]
    pool.spread(len(topics), topics)
    assert len(made) == 4 and pool.all() == [pool.main, *made]
    counts = sorted(sum(1 for t in topics if pool.of(t) is producer) for producer in made)
    assert counts == [87, 87, 88, 88]
    assert all(pool.of(t) is not pool.main for t in topics)  # the main producer keeps the side records
    for producer in made:
        assert producer.settings["queue.buffering.max.messages"] == QUEUE_MAX_MESSAGES // 4
        assert producer.settings["queue.buffering.max.kbytes"] == QUEUE_MAX_KBYTES // 4


def test_the_count_is_bounded_and_later_topics_join_without_moving_any():
    pool, made = _pool()
    first = [f"t{i}" for i in range(5000)]
    pool.spread(len(first), first)
    assert len(made) == MOST_PRODUCERS
    placed = {t: pool.of(t) for t in first}
    pool.spread(5001, ["late"])
    assert {t: pool.of(t) for t in first} == placed and len(made) == MOST_PRODUCERS
    assert pool.of("late") in made


def test_poll_and_flush_reach_every_producer_within_one_timeout():
    pool, made = _pool()
    pool.spread(300, [f"t{i}" for i in range(300)])
    made[1].waiting = 7
    pool.poll()
    assert pool.main.polls == 1 and all(p.polls == 1 for p in made)
    assert pool.flush(5.0) == 7
    assert all(len(p.flush_timeouts) == 1 and p.flush_timeouts[0] <= 5.0 for p in [pool.main, *made])


def test_rebuilt_producers_keep_each_topic_on_its_own_place():
    pool, made = _pool()
    topics = [f"t{i}" for i in range(300)]
    pool.spread(len(topics), topics)
    before = {t: made.index(pool.of(t)) for t in topics}
    pool.rebuild(_Producer({"batch.size": 10}), {"batch.size": 10})  # type: ignore[arg-type]
    rebuilt = made[3:]
    assert len(rebuilt) == 3 and all(p.settings["batch.size"] == 10 for p in rebuilt)
    assert {t: rebuilt.index(pool.of(t)) for t in topics} == before
