"""Delivery modes: when what the target acknowledged counts as copied, and how the progress is stored.

- `AtLeastOnce`: the gapless idempotent producer; the progress is written every interval once the
  records before it are acknowledged. A crash leaves on the target some records past the stored
  progress: the assigner counts them as copied when it takes the partition again (`reconcile`).
- `Transactional` (exactly-once): records, their offset-syncs and the progress they reach are committed
  in one transaction every interval; a crash aborts what was not committed.
"""

from __future__ import annotations

import logging
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.faults import Faults, kafka_error_raised
from mirror_engine.replication.side_records import SideRecordWriter

log = logging.getLogger("mirror_engine.replication.engine")


class DeliveryMode(Protocol):
    name: str
    # Whether records on the target past the stored progress are the engine's own acknowledged-or-not copies
    # (at-least-once), which a restart counts as copied; a transaction aborts them instead.
    reconciles_target: bool

    def describe(self, progress_interval_s: float) -> str:
        """The mode in a few words, for the log at start."""

    def start(self) -> None:
        """Called once the clients are built, before the first record."""

    def store_start(self, keys: list[TopicPartitionKey]) -> None:
        """Store where these newly assigned partitions start, durably, before any of their records is copied.

        A restart then finds the flow's progress for every target topic it ever wrote to, so preparation
        counts the records there as the migration's own (and never refuses the topic as filled by another
        writer), whatever the moment of a crash: before the first progress interval, mid-transaction, or
        between the creation of the topic and its first record."""

    def store_progress(self) -> None:
        """Every progress interval: make what the target acknowledged count as copied."""

    def release(self, keys: list[TopicPartitionKey]) -> None:
        """Store the final progress of these partitions before they are given up."""

    def drain_before_new_producer(self, reason: str) -> bool:
        """Everything produced so far is acknowledged and stored; False when that failed (fatal is set)."""

    def continue_on_new_producer(self) -> None:
        """The producer was rebuilt: carry on with it."""

    def may_drop_lost(self, keys: list[TopicPartitionKey], worker_id: str) -> bool:
        """The group gave these partitions to others: can this worker go on without them?"""

    def shutdown(self) -> None:
        """Store the final progress (or commit the last transaction) before the clients close."""



def transactional_id(plan: MigrationPlan, member: str) -> str:
    # The id outlives the process: a member restarted with the same id (the single engine of a flow, or a
    # worker with the same --worker-id) fences its predecessor's open transaction at once, instead of leaving
    # it to hide every later record from read_committed readers until the transaction's timeout.
    return f"mirror-engine.{plan.name}.{member}"


class AtLeastOnce:
    name = "at-least-once"
    reconciles_target = True

    def __init__(self, clients: EngineClients, side: SideRecordWriter, faults: Faults) -> None:
        self.clients, self.side, self.faults = clients, side, faults

    def describe(self, progress_interval_s: float) -> str:
        return f"at-least-once, progress stored every {progress_interval_s:g} s"

    def start(self) -> None:
        pass

    def store_start(self, keys: list[TopicPartitionKey]) -> None:
        self.side.write_progress(keys, force=True)
        if self.clients.records.flush(30):
            self.faults.fatal = "the target did not acknowledge the start of the assigned partitions within 30 s"

    def store_progress(self) -> None:
        self.side.write_progress()

    def release(self, keys: list[TopicPartitionKey]) -> None:
        remaining = self.clients.records.flush(60)
        if remaining:
            log.error("%d records not acknowledged by the target while giving partitions up; the next owner "
                      "copies them again", remaining)
        self.side.write_progress(keys)
        self.clients.records.flush(30)

    def drain_before_new_producer(self, reason: str) -> bool:
        if self.clients.records.flush(60):
            self.faults.fatal = (f"records not acknowledged by the target within 60 s while {reason}; nothing after "
                                 "the last acknowledged record counts as copied")
            return False
        self.side.write_progress()
        self.clients.records.flush(30)
        return True

    def continue_on_new_producer(self) -> None:
        pass

    def may_drop_lost(self, keys: list[TopicPartitionKey], worker_id: str) -> bool:
        return True

    def shutdown(self) -> None:
        patience = 5.0 if self.faults.target_gone else 60.0
        remaining = self.clients.records.flush(patience)
        if remaining:
            log.error("%d records were not acknowledged by the target at shutdown; they are copied again "
                      "on the next start", remaining)
        # The offset-syncs still held back go first and are acknowledged before the progress is computed: the
        # progress never passes an unacknowledged sync, so written before them it stayed where the last periodic
        # sync left it (at the partitions' start for an engine stopped within its first sync interval).
        self.side.offset_syncs.send_unsent()
        self.clients.records.flush(patience / 2)
        self.side.write_progress()
        self.clients.records.flush(patience / 2)


class Transactional:
    name = "exactly-once"
    reconciles_target = False

    def __init__(self, clients: EngineClients, side: SideRecordWriter, faults: Faults) -> None:
        self.clients, self.side, self.faults = clients, side, faults
        self.started = False  # init_transactions done, a transaction open

    def describe(self, progress_interval_s: float) -> str:
        return f"exactly-once, one transaction per {progress_interval_s:g} s"

    def start(self) -> None:
        producer = self.clients.producer
        producer.init_transactions(60)  # fences a predecessor with this worker's id and aborts what it left
        producer.begin_transaction()
        self.started = True

    def commit(self, begin_next: bool = True) -> None:
        """Commit the copied records with their offset-syncs and the progress they reach."""
        producer = self.clients.producer
        try:
            if producer.flush(60):  # every record acknowledged: their callbacks queue the offset-syncs
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "records not acknowledged in 60 s"))
            # The offset-syncs a full queue held back go too, and are acknowledged before the progress is computed:
            # the progress never passes an unacknowledged sync, and it must reach every record this transaction
            # commits. A restart goes on from it and, in this mode, takes nothing on the target past it as copied:
            # written before them, it stayed at the oldest held-back sync while the records after it committed,
            # and a kill before the next commit had them copied twice.
            self.side.offset_syncs.send_unsent()
            if producer.flush(30):
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "offset-syncs not acknowledged in 30 s"))
            self.side.write_progress()
            producer.commit_transaction(60)
            if begin_next:
                producer.begin_transaction()
        except (KafkaException, SystemError) as raised:
            error = kafka_error_raised(raised)
            if error is None:
                raise
            self.faults.producer_failed(error.args[0], f"committing the transaction on the target failed (nothing of "
                                                       f"it counts as copied): {error}")

    def store_start(self, keys: list[TopicPartitionKey]) -> None:
        # Committed on its own, before the partitions' first records join a transaction.
        self.side.write_progress(keys, force=True)
        self.commit()

    def store_progress(self) -> None:
        self.commit()

    def release(self, keys: list[TopicPartitionKey]) -> None:
        if not self.faults.fatal:  # after a fatal error the open transaction must not commit
            self.commit()

    def drain_before_new_producer(self, reason: str) -> bool:
        if self.started:
            self.commit(begin_next=False)
        return not self.faults.fatal

    def continue_on_new_producer(self) -> None:
        if self.started:
            self.clients.producer.init_transactions(60)
            self.clients.producer.begin_transaction()

    def may_drop_lost(self, keys: list[TopicPartitionKey], worker_id: str) -> bool:
        # The open transaction holds records of the lost partitions: it must not commit.
        self.faults.fatal = (f"worker {worker_id} lost {len(keys)} partition(s) to the group (it was silent longer "
                             "than engine.session_timeout_s); its open transaction is abandoned: restart it")
        return False

    def shutdown(self) -> None:
        if not self.faults.fatal:
            self.commit(begin_next=False)
            return
        try:
            self.clients.producer.abort_transaction(10)
        except KafkaException as error:
            log.warning("aborting the open transaction failed (the target aborts it at its timeout): %s", error)
            # A fenced producer's fatal error may have surfaced first as the generic one (a produce() refused "Local:
            # Fatal error", a flush that raised without it): the abort names it, and the fencing is said as such.
            self.faults.producer_failed(error.args[0], str(error))
