"""Records held back until their target topic's record limits are known, topic by topic.

The copy may produce a partition's records only once it knows its target topic's `max.message.bytes`: a batch
larger than that is refused by the broker, and the producer makes the refusal fatal to every partition. The limits
come from the target's topic configs, asked `CONFIG_BATCH` topics a request: 1,000 topics take ten answers over a
second or more, each made into Python objects by the client with the GIL held (0.4-0.6 s of the process's CPU at
1,000 topics). Waiting for all of them before any record held every topic's first record back until the last answer;
here each topic's records wait for its own answer only.

Invariant: a record of a partition whose target topic's limits are not learned since the partition was assigned is
never handed to the copier; it is held, in its partition's order, then handed over once they are, unless the
partition was taken back (or taken again: a new state) meanwhile, in which case it is dropped (the consumer fetches
the partition again from where its new assignment starts).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
from collections.abc import Callable

from confluent_kafka import Message
from confluent_kafka.admin import AdminClient

from mirror_engine.kafka import CONFIG_BATCH, CONFIGS_IN_FLIGHT, TopicPartitionKey
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.replication.target_topics import TargetTopics, read_limits

log = logging.getLogger("mirror_engine.replication.engine")

Limits = dict[str, tuple[int, bool]]  # target topic -> (max.message.bytes, LogAppendTime), as `read_limits` says

# Records held at most while limits are read; past it, the copy waits for the next answer. A record held costs its
# message object and its bytes: 20,000 records of 1 KiB, about 25 MiB.
HOLD_MAX = 20_000
RETRY_S = 1.0  # a read the target refused is asked again after this long (its topics' records held meanwhile)


class LimitsGate:
    def __init__(self, targets: TargetTopics, states: dict[TopicPartitionKey, PartitionState],
                 admin: Callable[[], AdminClient]) -> None:
        self.targets = targets
        self.states = states
        self.admin = admin  # the target's admin client, for the reads made after the start
        self.answers: queue.SimpleQueue[tuple[list[str], Limits | BaseException]] = queue.SimpleQueue()
        self.asked: set[str] = set()  # target topics being read
        self.waiting: dict[str, list[PartitionState]] = {}  # target topic -> the states whose records wait for it
        self.pending: set[str] = set()  # the source topics of `waiting`: their records are held
        self.held: dict[int, tuple[PartitionState, list[Message]]] = {}  # by id(state): its records held, in order
        self.held_count = 0
        self.retries: list[tuple[float, list[str]]] = []  # (when, target topics): reads to ask again, in time order
        self.learned = False  # limits learned since the held records were last looked at

    def read_ahead(self, admin: AdminClient, targets: list[str]) -> None:
        """Start reading these target topics' limits as the engine starts, through a client of its own (`admin`): the
        first assignment's `wait_for` takes their answers instead of asking again, and asks again for a topic missing
        then (the preparation creates it). An answer no partition waits for is dropped when the copy takes it."""
        self._ask(targets, lambda batch: read_limits(admin, batch, missing=[]))

    def wait_for(self, states: list[PartitionState]) -> None:
        """Hold these newly assigned partitions' records until their target topics' limits are learned: asked now,
        unless being read already (by the start's read, say)."""
        asking: list[str] = []
        for state in states:
            target = state.target_topic
            if target not in self.asked and target not in self.waiting and target not in asking:
                asking.append(target)
            self.waiting.setdefault(target, []).append(state)
            self.pending.add(state.topic)
        self._ask(asking)

    def admit(self, consume: Callable[[], list[Message]]) -> list[Message]:
        """The records to copy next: those `consume` gives whose target topic's limits are known, after the held
        ones whose limits came since. With `HOLD_MAX` records held, nothing is consumed: the copy waits up to 0.2 s
        for an answer instead (its loop goes on meanwhile)."""
        if not self.pending and not self.held:
            if not self.answers.empty():  # answers no record waits for (the start's, of a flow stopped then): dropped,
                self._take_answers()  # so that a later assignment asks again instead of taking an old answer
            return consume()
        if self.held_count >= HOLD_MAX:
            self._take_answers(wait_s=0.2)
            return self._release()
        self._take_answers()
        released = self._release()
        messages = consume()
        if self.pending:
            pending, admitted = self.pending, []
            for message in messages:
                # Its events too (the end of the partition reached): the copy counts a partition at its end as
                # copied up to there, and its records held before that event are not copied yet.
                if message.topic() in pending:
                    self._hold(message)
                else:
                    admitted.append(message)
            messages = admitted
        return released + messages if released else messages

    def _hold(self, message: Message) -> None:
        state = self.states.get((message.topic(), message.partition()))
        if state is None:  # taken back since it was consumed
            return
        self.held.setdefault(id(state), (state, []))[1].append(message)
        self.held_count += 1

    def _take_answers(self, wait_s: float = 0.0) -> None:
        """Learn the limits answered since (waiting up to `wait_s` for a first answer); ask again what is due."""
        try:
            while True:
                targets, answer = self.answers.get(timeout=wait_s) if wait_s else self.answers.get_nowait()
                wait_s = 0.0
                self.asked.difference_update(targets)
                if isinstance(answer, BaseException):
                    retry = [target for target in targets if target in self.waiting]
                    log.warning("the record limits of %d target topic(s) (%s, ...) could not be read: %s; asked again "
                                "in %.0f s, their records held meanwhile", len(retry), targets[0], answer, RETRY_S)
                    self.retries.append((time.monotonic() + RETRY_S, retry))
                    continue
                self._learn({target: limit for target, limit in answer.items() if target in self.waiting})
                # Missing when the start asked (the preparation created them since): there now, asked again.
                self._ask([target for target in targets if target not in answer and target in self.waiting
                           and target not in self.asked])
        except queue.Empty:
            pass
        if self.retries and self.retries[0][0] <= time.monotonic():
            due, self.retries = self.retries[0][1], self.retries[1:]
            self._ask([target for target in due if target in self.waiting and target not in self.asked])

    def _learn(self, limits: Limits) -> None:
        if not limits:
            return
        self.targets.learn(limits)
        for target, (limit, _) in limits.items():
            for state in self.waiting.pop(target, []):
                state.fit_to(limit)
                self.pending.discard(state.topic)
        self.learned = True

    def _release(self) -> list[Message]:
        """The held records whose topics' limits are learned now (those of partitions taken back dropped)."""
        if not self.learned:
            return []
        self.learned = False
        released: list[Message] = []
        for key, (state, messages) in list(self.held.items()):
            if state.topic in self.pending:
                continue
            del self.held[key]
            self.held_count -= len(messages)
            if self.states.get((state.topic, state.partition)) is state:
                released += messages
        return released

    def _ask(self, targets: list[str], read: Callable[[list[str]], Limits] | None = None) -> None:
        """Read these target topics' limits, `CONFIG_BATCH` a request and `CONFIGS_IN_FLIGHT` requests at once, each
        answer queued as it comes."""
        if not targets:
            return
        if read is None:
            read = functools.partial(read_limits, self.admin())
        self.asked.update(targets)
        batches = [targets[start:start + CONFIG_BATCH] for start in range(0, len(targets), CONFIG_BATCH)]

        def lane(batches: list[list[str]]) -> None:
            for batch in batches:
                try:
                    self.answers.put((batch, read(batch)))
                except BaseException as error:  # the copy's thread says it and asks again
                    self.answers.put((batch, error))

        for first in range(min(CONFIGS_IN_FLIGHT, len(batches))):
            threading.Thread(target=lane, args=(batches[first::CONFIGS_IN_FLIGHT],), name="record-limits",
                             daemon=True).start()
