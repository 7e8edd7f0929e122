"""A status write that meets a fatal producer error stops the engine with the reason, fencing said as such."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirror_engine.plan import plan_from_dict
from mirror_engine.replication.testing import FENCED_BY_ANOTHER, Faults, StatusReporter

PLAN = plan_from_dict({"name": "p", "source": {"alias": "a", "bootstrap_servers": "127.0.0.1:1"},
                       "target": {"alias": "b", "bootstrap_servers": "127.0.0.1:2"}})


class RefusingProducer:
    def __init__(self, error: KafkaError) -> None:
        self.error = error

    def produce(self, *args, **kwargs) -> None:
        raise KafkaException(self.error)


def reporter(error: KafkaError, faults: Faults) -> StatusReporter:
    clients = SimpleNamespace(producer=RefusingProducer(error), target_config={})
    return StatusReporter(PLAN, "w1", "single", True, "status-topic", {}, faults, lambda: "running",
                          lambda *_: None, clients)  # type: ignore[arg-type]


def test_a_fenced_status_write_stops_the_engine_saying_it_was_fenced():
    faults = Faults()
    reporter(KafkaError(KafkaError._FENCED, "fenced", fatal=True), faults).publish()
    assert faults.fatal == FENCED_BY_ANOTHER


def test_another_fatal_status_write_keeps_the_first_reason():
    faults = Faults(fatal="the first reason")
    reporter(KafkaError(KafkaError._FATAL, "broken", fatal=True), faults).publish()
    assert faults.fatal == "the first reason"


def test_a_status_write_that_is_not_fatal_is_raised_to_the_periodic_task():
    with pytest.raises(KafkaException):
        reporter(KafkaError(KafkaError._MSG_TIMED_OUT, "late"), Faults()).publish()
