"""The one reader of a flow's small internal topics on the target: progress, offset-syncs, control, status, reports,
checkpoints, heartbeats (and the replica of the source's heartbeats the latency probe waits on).

Each is a single-partition topic. A reader sees committed records only (`read_committed`: a crashed worker's open
or aborted transaction never reaches a decision), learns its topics' leaders before it is assigned
(`assign_known`), and stops at the end of each partition as soon as the broker says so (`SHORT_FETCH_WAIT`,
`consume_available`), without waiting out a consume timeout. Two forms:
- `read_to_end(config, topic)`: every record from the beginning (or from a time) to the end, once;
- `InternalTopicReader`: one consumer kept open over one or more topics; each `read_new()` returns what was
  written since the last call, up to the ends seen at the call. Between reads its partitions are paused: a
  consumer at the end of a partition asks again each time the broker answers, every 10 ms with the short wait
  (77 fetches a second measured for one reader; an idle engine keeps three such partitions). `available()`
  fetches in the background instead, with the broker's usual wait: the broker answers as soon as a record arrives.

Whoever can write to the target can write to these topics, and a compacted topic keeps what was written to it.
So every reader validates a record where it reads it (`decoded`, with the pydantic model or decoder of the
record's format): a malformed one is skipped and counted, and said once, in one log line per read that met new
ones, instead of raising out of a sensor, `status` or the cockpit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import OffsetSpec
from pydantic import ValidationError

from mirror_engine.kafka.clusters import admin_client
from mirror_engine.kafka.topic_reader import SHORT_FETCH_WAIT, SMALL_PREFETCH, assign_known, consume_available
from mirror_engine.kafka.topics import _RETRIABLE, existing_topics, list_offsets

__all__ = ["MALFORMED", "InternalTopicReader", "MalformedRecord", "decoded", "read_to_end"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class MalformedRecord(ValueError):
    """A record that does not have its topic's format; the message says what is wrong, never the record."""


# What a decoder may raise on a record that is not of its format.
MALFORMED = (MalformedRecord, ValidationError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError)
_MAX_REPORTED = 10_000
_reported: set[tuple[str, int]] = set()  # (topic, offset) of malformed records already logged by this process
_reported_lock = threading.Lock()
skipped_counts: dict[str, int] = {}  # topic -> malformed records skipped by this process (each counted once)


def decoded(messages: Iterable[Message], decode: Callable[[Message], T]) -> list[tuple[Message, T]]:
    """Each message with what `decode` made of it; a message it refuses is skipped, counted once per process in
    `skipped_counts`, and the new ones of this call are logged in one line per topic."""
    out: list[tuple[Message, T]] = []
    new: dict[str, tuple[int, int, str]] = {}  # topic -> (count, first offset, first reason)
    for message in messages:
        try:
            out.append((message, decode(message)))
        except MALFORMED as error:
            topic, offset = message.topic() or "?", message.offset()
            with _reported_lock:
                if (topic, offset) in _reported:
                    continue
                if len(_reported) < _MAX_REPORTED:
                    _reported.add((topic, offset))
                skipped_counts[topic] = skipped_counts.get(topic, 0) + 1
            count, first, reason = new.get(topic, (0, offset, _reason(error)))
            new[topic] = (count + 1, first, reason)
    for topic, (count, first, reason) in new.items():
        log.warning("skipped %d malformed record(s) in %s (first at offset %d: %s); they are ignored, as if never "
                    "written: check what else writes to this topic", count, topic, first, reason)
    return out


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "record"
        return f"{where}: {first['msg']} ({error.error_count()} problem(s))"
    return f"{type(error).__name__}: {error}"[:200]


LAST_RECORD_WINDOW = 64  # offsets read back from a partition's end for its last record (`last_timestamp`)

# For a reader fetching in the background (`available()`): the broker holds a fetch at the end of the log up to this
# long, and answers it as soon as a record arrives.
BACKGROUND_FETCH_WAIT = {"fetch.wait.max.ms": 500}


def _consumer(config: dict[str, str], group_id: str, fetch_wait: dict[str, int] = SHORT_FETCH_WAIT) -> Consumer:
    return Consumer({**config, "group.id": group_id, "enable.auto.commit": False,
                     "isolation.level": "read_committed", "enable.partition.eof": True, **fetch_wait,
                     **SMALL_PREFETCH})


def read_to_end(config: dict[str, str], topic: str, timeout_s: float = 30.0, since_ms: int | None = None,
                group_id: str = "mirror-engine-reader") -> list[Message]:
    """Every committed record of partition 0 of `topic`, from the beginning (or the first record written at or
    after `since_ms`) to its end; none when the topic does not exist (the flow never wrote it)."""
    # Asked first, with an admin client: a consumer (it needs a group id) looks up its group's coordinator as
    # soon as it exists, which creates `__consumer_offsets` on a cluster that has none, and `plan` or a dry-run
    # must change nothing on a fresh target.
    if not existing_topics(admin_client(config), [topic], timeout_s):
        return []
    consumer = _consumer(config, group_id)
    try:
        deadline = time.monotonic() + timeout_s
        start = OFFSET_BEGINNING
        if since_ms is not None:
            start = _offset_for_time(consumer, topic, since_ms, deadline)
            if start < 0:  # nothing written since then
                return []
        assign_known(consumer, [TopicPartition(topic, 0, start)], timeout_s)
        records = []
        while True:
            batch = consume_available(consumer, 0.2)
            if not batch and time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} stopped short of its end after {timeout_s:.0f} s")
            for message in batch:
                error = message.error()
                if error is None:
                    records.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    return records
                else:
                    raise RuntimeError(f"reading {topic}: {error.str()}")
    finally:
        consumer.close()


def last_timestamp(config: dict[str, str], topic: str, partition: int, end: int, timeout_s: float = 30.0,
                   group_id: str = "mirror-engine-reader") -> int | None:
    """The timestamp of the last committed record of a partition ending at `end` (None: none in its last
    `LAST_RECORD_WINDOW` offsets, which transaction markers alone fill only after that many aborted writes)."""
    consumer = _consumer(config, group_id)
    try:
        deadline = time.monotonic() + timeout_s
        assign_known(consumer, [TopicPartition(topic, partition, max(0, end - LAST_RECORD_WINDOW))], timeout_s)
        last = None
        while True:
            batch = consume_available(consumer, 0.2)
            if not batch and time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}[{partition}] stopped short of its end after {timeout_s:.0f} s")
            for message in batch:
                error = message.error()
                if error is None:
                    last = message.timestamp()[1]
                elif error.code() == KafkaError._PARTITION_EOF:
                    return last
                else:
                    raise RuntimeError(f"reading {topic}[{partition}]: {error.str()}")
    finally:
        consumer.close()


def _offset_for_time(consumer: Consumer, topic: str, since_ms: int, deadline: float) -> int:
    """The offset of partition 0's first record at or after `since_ms` (-1: none), retrying the brief errors of a
    just-created partition whose leader is not known yet."""
    while True:
        try:
            [found] = consumer.offsets_for_times([TopicPartition(topic, 0, since_ms)],
                                                 timeout=max(0.1, deadline - time.monotonic()))
            if found.error is None:
                return int(found.offset)
            error = found.error
        except KafkaException as raised:
            error = raised.args[0]
        if error.code() not in _RETRIABLE or time.monotonic() > deadline:
            raise KafkaException(error)
        time.sleep(0.2)


class InternalTopicReader:
    """Partition 0 of each of `topics`, read with one consumer kept open: the first `read_new()` from each topic's
    start (its beginning, `start`, or the first record at or after `since_ms`), each later one from where it
    stopped. Each read asks the topics' ends one after the other, in the order of `topics`, and fetches only while
    it reads (see the module docstring). A reader uses either `available()` or the reads, not both."""

    def __init__(self, config: dict[str, str], topics: str | Sequence[str], group_id: str,
                 since_ms: int | None = None, start: dict[str, int] | None = None) -> None:
        self.config, self.group_id, self.since_ms = config, group_id, since_ms
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        self._admin = admin_client(config)
        self._consumer: Consumer | None = None
        self._next: dict[str, int] = {}  # topic -> the next offset to read, once assigned
        self._start = dict(start or {})  # topic -> where to start instead of its beginning
        self.exists = False  # every topic exists (once seen, not asked again)

    def available(self) -> list[Message]:
        """The committed records that have arrived since the last call, without waiting and without asking the
        cluster anything (the consumer fetches in the background): for a reader polled in a hot loop."""
        if self._consumer is None:
            self._consumer = _consumer(self.config, self.group_id, BACKGROUND_FETCH_WAIT)
            assign_known(self._consumer, [TopicPartition(t, 0, self._start.get(t, OFFSET_BEGINNING))
                                          for t in self.topics])
        records = []
        for message in self._consumer.consume(1000, timeout=0):
            error = message.error()
            if error is None:
                records.append(message)
            elif error.code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(f"reading {message.topic()} on the target: {error.str()}")
        return records

    def read_new(self, timeout_s: float = 30.0) -> list[Message]:
        """The committed records written since the last call, up to each topic's end now, in offset order per
        topic. Raises TimeoutError when the end is not reached within `timeout_s`."""
        return [message for batch in self.new_batches(timeout_s) for message in batch]

    def new_batches(self, timeout_s: float = 30.0) -> Iterator[list[Message]]:
        """`read_new()` a batch at a time, as they arrive: for a reader that keeps less than every record (a
        fresh read of a long flow's offset-syncs holds millions). A batch taken counts as read even if the
        iteration stops short; TimeoutError when the end is not reached within `timeout_s`."""
        if self.exists:  # seen once: not asked again (readers poll every 50 ms; the topics are never deleted)
            present = self.topics
        else:
            existing = existing_topics(self._admin, self.topics)
            present = [topic for topic in self.topics if topic in existing]
            self.exists = len(present) == len(self.topics)
        if not present:
            return
        # One topic after the other, in the order given: a topic whose records rely on another's (progress on
        # offset-syncs) is listed first, so that the other's end is asked after its own.
        ends = {topic: list_offsets(self._admin, [TopicPartition(topic, 0)], OffsetSpec.latest())[(topic, 0)]
                for topic in present}
        new = [topic for topic in present if topic not in self._next]
        self._assign(new, ends)  # fetched from their start at once
        assert self._consumer is not None
        # The others were paused at the end of the last read: resumed, and sought to where this read goes on (a
        # pause drops what was fetched and not consumed). The seek also wakes the leader's broker thread, which
        # a resume does not: it fetched up to a second later (0.7 s a read, measured).
        fetching = [TopicPartition(topic, 0) for topic in new]
        for topic in present:
            if topic not in new and self._next[topic] < ends[topic]:
                partition = TopicPartition(topic, 0, self._next[topic] or OFFSET_BEGINNING)
                self._consumer.resume([partition])
                self._consumer.seek(partition)
                fetching.append(partition)
        deadline = time.monotonic() + timeout_s
        try:
            while any(self._next[topic] < ends[topic] for topic in present):
                records: list[Message] = []
                for message in consume_available(self._consumer, 0.2):
                    topic, error = message.topic() or "", message.error()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(f"reading {topic} on the target: {error.str()}")
                        # Past transaction markers and compaction gaps, which no record shows.
                        self._next[topic] = max(self._next[topic], message.offset())
                        continue
                    self._next[topic] = message.offset() + 1
                    records.append(message)
                if records:
                    yield records
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {', '.join(present)} stopped short of the end after "
                                       f"{timeout_s:.0f} s")
        finally:
            if self._consumer is not None and fetching:
                self._consumer.pause(fetching)

    def _assign(self, new_topics: list[str], ends: dict[str, int]) -> None:
        if not new_topics:
            return
        if self._consumer is None:
            self._consumer = _consumer(self.config, self.group_id)
        starts = {topic: max(0, self._start.get(topic, 0)) for topic in new_topics}
        if self.since_ms is not None:
            found = list_offsets(self._admin, [TopicPartition(t, 0) for t in new_topics],
                                 OffsetSpec.for_timestamp(self.since_ms))
            # Nothing written since then: start at the end.
            starts = {topic: (offset if offset >= 0 else ends[topic]) for (topic, _p), offset in found.items()}
        for topic in new_topics:
            self._next[topic] = starts[topic]
        given = {t for t in new_topics if self.since_ms is not None or self._start.get(t, -1) >= 0}
        assigned = [TopicPartition(t, 0, starts[t] if t in given else OFFSET_BEGINNING) for t in new_topics]
        for topic in sorted(new_topics):
            self._consumer.list_topics(topic, timeout=15)  # the leaders now, not at librdkafka's next scan
        self._consumer.incremental_assign(assigned)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> InternalTopicReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
