"""A fatal error of the target producer that surfaces in the copy's own poll (fenced by a second engine of the
flow, say) stops the engine with its reason, as when a commit or the status write meets it first; it is not
raised raw out of the copy loop (the CLI then printed librdkafka's text, not why the engine stopped)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_engine.replication import RecordCopier
from mirror_engine.replication.faults import FENCED_BY_ANOTHER, Faults
from mirror_engine.replication.record_producers import RecordProducers


class _Producer:
    def __init__(self, error: KafkaError) -> None:
        self.error = error

    def produce(self, *_args: object, **_kwargs: object) -> None:
        raise AssertionError("nothing to produce")

    def poll(self, _timeout: float) -> int:
        raise KafkaException(self.error)


def _copier(error: KafkaError) -> tuple[RecordCopier, Faults]:
    faults = Faults()
    producer = _Producer(error)
    clients = SimpleNamespace(producer=producer, records=RecordProducers(producer, {}))  # type: ignore[arg-type]
    return RecordCopier(clients, {}, faults), faults  # type: ignore[arg-type]


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
