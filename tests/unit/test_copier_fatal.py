"""A fatal error of the target producer that surfaces in the copy's own poll (fenced by a second engine of the
flow, say) stops the engine with its reason, as when a commit or the status write meets it first; it is not
raised raw out of the copy loop (the CLI then printed librdkafka's text, not why the engine stopped)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from mirror_engine.replication import PartitionState, RecordCopier
from mirror_engine.replication.testing import FENCED_BY_ANOTHER, Faults, RecordProducers


class _Producer:
    def __init__(self, error: KafkaError, as_cause: bool = False) -> None:
        self.error = error
        self.as_cause = as_cause

    def produce(self, *_args: object, **_kwargs: object) -> None:
        raise KafkaException(self.error)

    def poll(self, _timeout: float) -> int:
        if not self.as_cause:
            raise KafkaException(self.error)
        # confluent-kafka's error callback leaves the fatal error set while a delivery callback runs after it in the
        # same poll: that callback fails with a SystemError whose cause is the fatal error.
        try:
            raise KafkaException(self.error)
        except KafkaException as fatal:
            raise SystemError("<class 'str'> returned a result with an exception set") from fatal

    def flush(self, _timeout: float) -> int:
        return 0


def _copier(error: KafkaError, as_cause: bool = False,
            states: dict | None = None) -> tuple[RecordCopier, Faults]:
    faults = Faults()
    producer = _Producer(error, as_cause)
    clients = SimpleNamespace(producer=producer, records=RecordProducers(producer, {}))  # type: ignore[arg-type]
    return RecordCopier(clients, states or {}, faults), faults  # type: ignore[arg-type]


def test_a_fence_seen_by_the_copys_poll_stops_the_engine_saying_so():
    copier, faults = _copier(KafkaError(KafkaError._FENCED, "Failed to add partitions to transaction", fatal=True))
    copier.copy([])
    assert faults.fatal == FENCED_BY_ANOTHER


def test_another_fatal_error_stops_the_engine_with_its_text():
    copier, faults = _copier(KafkaError(KafkaError._INVALID_ARG, "broken", fatal=True))
    copier.copy([])
    assert "the target producer failed" in faults.fatal and "broken" in faults.fatal


def test_an_error_that_is_not_fatal_is_raised_as_before():
    copier, faults = _copier(KafkaError(KafkaError._TRANSPORT, "brief"))
    with pytest.raises(KafkaException):
        copier.copy([])
    assert not faults.fatal


def test_a_fence_raised_as_the_cause_of_a_callbacks_system_error_stops_the_engine_saying_so():
    copier, faults = _copier(KafkaError(KafkaError._FENCED, "fenced by newer producer instance", fatal=True),
                             as_cause=True)
    copier.copy([])
    assert faults.fatal == FENCED_BY_ANOTHER


def test_a_record_refused_by_a_producer_failed_for_good_stops_the_engine_not_the_partition():
    state = PartitionState("t", 0, "t", 0)
    copier, faults = _copier(KafkaError(KafkaError._FENCED, "fenced by newer producer instance", fatal=True),
                             states={("t", 0): state})
    copier.copy([Message(topic="t", partition=0, offset=0, value=b"v")])
    assert faults.fatal == FENCED_BY_ANOTHER
    assert not state.failed and state.produced_next == 0  # its record counts as not copied; no reason stored


def test_a_record_refused_as_local_fatal_by_a_producer_failed_earlier_stops_the_engine_not_the_partition():
    """librdkafka refuses a produce() on a producer whose fatal error came first with the generic code _FATAL, not
    flagged fatal itself (seen when a second run fenced this one between two batches)."""
    state = PartitionState("t", 0, "t", 0)
    copier, faults = _copier(KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error"),
                             states={("t", 0): state})
    copier.copy([Message(topic="t", partition=0, offset=0, value=b"v")])
    assert "the target producer failed" in faults.fatal and "Fatal error" in faults.fatal
    assert not state.failed and state.produced_next == 0
