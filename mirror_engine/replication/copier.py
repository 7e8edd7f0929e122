"""The record copier: the engine's hot loop, as MirrorMaker 2's `MirrorSourceTask` (consume and convert, nothing else).

It does the least per record: one `produce()` per record to the same partition number with key, value,
headers and timestamp, and O(1) bookkeeping in the few delivery callbacks (see `PartitionState`).
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from mirror_engine.kafka import Headers, TopicPartitionKey, batch_size_alone, header_size_bound
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.copy_contract import produce_when_room
from mirror_engine.replication.faults import Faults
from mirror_engine.replication.partition_state import PartitionState
from mirror_engine.schemas import RecordRewrite, RecordRewrites, UnmappedRecord

log = logging.getLogger("mirror_engine.replication.engine")


class RecordCopier:
    def __init__(self, clients: EngineClients, states: dict[TopicPartitionKey, PartitionState],
                 faults: Faults, rewrites: RecordRewrites | None = None) -> None:
        self.clients = clients
        self.states = states
        self.faults = faults
        self.rewrites = rewrites

    def rewrite_of(self, topic: str) -> RecordRewrite | None:
        """The topic's schema-id rewrite under the plan's registries, or None."""
        return None if self.rewrites is None else self.rewrites.of(topic)

    def copy(self, messages: list[Message]) -> None:
        producer_of = self.clients.records.of
        states = self.states
        count = len(messages)
        state: PartitionState | None = None
        topic = target = ""
        partition = run_length = run_bytes = 0
        run_start = False
        for i in range(count):
            message = messages[i]
            if message.error() is not None:
                self._on_consume_error(message)
                continue
            if state is None:  # the first record of a run of one partition
                topic, partition = message.topic(), message.partition()
                state = states[(topic, partition)]
                target = state.target_topic
                producer = producer_of(target)
                produce = producer.produce
                run_start, run_length, run_bytes = True, 0, 0
            # Does the run go on with the next message? If not, this record closes it.
            if i + 1 < count:
                following = messages[i + 1]
                run_ends = following.error() is not None or following.partition() != partition \
                    or following.topic() != topic
            else:
                run_ends = True
            if not state.failed:
                offset = message.offset()
                value, key, headers = message.value(), message.key(), message.headers()
                if state.rewrite is not None:
                    try:
                        key, value = state.rewrite(key, value)
                    except UnmappedRecord as unmapped:
                        self.stop_partition_at(state, offset, f"{state.topic}[{partition}]: the record at offset "
                                                              f"{offset} cannot be copied: {unmapped}")
                        run_start = False
                        if run_ends:
                            state.records_produced += run_length
                            state.bytes_read += run_bytes
                            state = None
                        continue
                # A record the target topic cannot take must never be produced: the broker would refuse its
                # whole batch and the producer would turn that into a fatal error for every partition.
                # A cheap bound first; the exact size only for records near the limit.
                raw = (len(value) if value else 0) + (len(key) if key else 0)
                if headers:
                    raw += header_size_bound(headers)
                run_bytes += raw
                if raw <= state.raw_budget or not self._refuse_if_too_large(state, offset, key, value, headers):
                    boundary = run_start or offset != state.produced_next
                    callback = state.callback(offset, boundary, state.records_produced + run_length + 1) \
                        if boundary or run_ends else None
                    try:
                        # All positional (topic, value, key, partition, callback, on_delivery, timestamp, headers):
                        # keyword arguments cost a string lookup each, per record.
                        produce(target, value, key, partition, callback, None, message.timestamp()[1], headers)
                        state.produced_next = offset + 1
                        run_length += 1
                    except BufferError:
                        produce_when_room(producer, target, value, key, partition, callback,
                                          message.timestamp()[1], headers)
                        state.produced_next = offset + 1
                        run_length += 1
                    except KafkaException as error:  # refused by the client itself: nothing was sent
                        if callback is not None:
                            state.callbacks_pending -= 1
                        if self.faults.producer_raised(error, "the target producer failed"):
                            return  # for good: the engine stops, nothing after the last commit counts as copied
                        self.stop_partition_at(state, offset, f"{state.topic}[{partition}]: the producer refused "
                                                              f"the record at offset {offset}: {error.args[0].str()}")
                run_start = False
            if run_ends:
                state.records_produced += run_length
                state.bytes_read += run_bytes
                state = None
        try:
            self.clients.records.poll()
        except (KafkaException, SystemError) as raised:
            # A fatal error (fenced by another engine of the flow, say) can surface here first: the engine stops
            # with its reason, as when a commit or the status write meets it, instead of raising it raw.
            if not self.faults.producer_raised(raised, "the target producer failed"):
                raise

    def _refuse_if_too_large(self, state: PartitionState, offset: int, key: bytes | None, value: bytes | None,
                             headers: Headers) -> bool:
        """Stop the partition at this record if its target topic cannot take it (size as the broker counts it)."""
        size = batch_size_alone(key, value, headers)
        if size <= state.max_batch_bytes:
            return False
        header_bytes = sum(len(name.encode()) + len(v or b"") for name, v in headers or ())
        self.stop_partition_at(state, offset, (
            f"{state.topic}[{state.partition}]: the record at offset {offset} is {size} bytes as the broker counts "
            f"it (key {len(key or b'')}, value {len(value or b'')}, headers {header_bytes} bytes, with the record "
            f"and batch framing), more than the {state.max_batch_bytes} bytes the target topic {state.target_topic} "
            "takes (its max.message.bytes): raise that limit on the target topic and restart the engine"))
        return True

    def stop_partition_at(self, state: PartitionState, offset: int, reason: str) -> None:
        """Stop copying a partition before the record at `offset`, which is not produced.

        The records produced before it in this run carry no delivery callback (only a run's first and last
        do): wait until they are acknowledged, so that the progress stops right before the refused record
        and a restart re-sends none of them. With the gapless guarantee (or a transaction) the producer
        delivers them all or fails fatally, and they follow the last record with a callback one by one on
        both clusters, so their target positions follow too.
        """
        try:
            self.clients.records.flush(60)
        except (KafkaException, SystemError) as raised:
            if not self.faults.producer_raised(raised, "the target producer failed"):
                raise
        if not self.faults.fatal and not state.failed and state.callbacks_pending == 0 and state.acked_next >= 0:
            tail = state.produced_next - state.acked_next
            if tail > 0 and state.syncs.delta is not None:
                state.records_copied += tail
                state.acked_next = state.produced_next
                state.target_position += tail
                state.acked_source, state.acked_target = state.produced_next - 1, state.target_position - 1
        self.fail_partition(state, reason, offset)

    def fail_partition(self, state: PartitionState, reason: str, at_offset: int) -> None:
        if state.failed:
            return
        state.failed = reason
        state.failed_at = at_offset
        self.faults.last_error = f"{state.topic}[{state.partition}]: {reason}"
        log.error("stopped copying %s[%d]: %s", state.topic, state.partition, reason)
        self.clients.consumer.pause([TopicPartition(state.topic, state.partition)])

    def _on_consume_error(self, message: Message) -> None:
        error = message.error()
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            state = self.states.get((message.topic(), message.partition()))
            if state is not None:
                state.end_seen = message.offset()
            return
        if code == KafkaError._AUTO_OFFSET_RESET and message.topic():
            state = self.states.get((message.topic(), message.partition()))
            if state is not None:
                position = state.copied_position()
                self.fail_partition(state, f"the next record to copy, at {position}, was deleted on "
                                           f"the source before it was copied: {error.str()}", position)
            return
        if error.fatal():
            self.faults.fatal = f"source consumer: {error.str()}"
        else:
            log.warning("source consumer: %s", error.str())
