"""The copy's hold on records whose target topic's record limits are still being read (`LimitsGate`)."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from mirror_engine.replication import PartitionState
from mirror_engine.replication.testing import FAR, LimitsGate, limits_gate


class Targets:
    """What the gate needs of `TargetTopics`: the limits learned, in order."""

    def __init__(self) -> None:
        self.learned: list[dict] = []

    def learn(self, limits: dict) -> None:
        self.learned.append(dict(limits))


class Target:
    """A target whose topics' limits are answered when the test says so (or refused)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limits: dict[str, int]) -> None:
        self.limits = limits
        self.answer: dict[str, threading.Event] = {name: threading.Event() for name in limits}
        self.refuse: set[str] = set()
        self.asked: list[list[str]] = []
        monkeypatch.setattr(limits_gate, "read_limits", self.read)

    def read(self, _admin: object, targets: list[str], missing: list[str] | None = None) -> dict:
        self.asked.append(list(targets))
        for name in targets:
            assert self.answer[name].wait(10), f"{name} never answered"
        refused = [name for name in targets if name in self.refuse]
        if refused:
            self.refuse.difference_update(refused)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "injected"))
        return {name: (self.limits[name], False) for name in targets}

    def release(self, *names: str) -> None:
        for name in names:
            self.answer[name].set()


def _state(topic: str, partition: int) -> PartitionState:
    return PartitionState(topic, partition, f"src.{topic}", 0)


def _records(topic: str, partition: int, offsets: range) -> list[Message]:
    return [Message(topic=topic, partition=partition, offset=offset, value=b"v") for offset in offsets]


def _admit_until(gate: LimitsGate, wanted: int, batches: list[list[Message]] | None = None) -> list[Message]:
    """What the gate admits, fed `batches` then nothing, until `wanted` records came (or 10 s passed)."""
    admitted: list[Message] = []
    batches = list(batches or [])
    deadline = time.monotonic() + 10
    while len(admitted) < wanted and time.monotonic() < deadline:
        admitted += gate.admit(lambda: batches.pop(0) if batches else [])
        time.sleep(0.01)
    return admitted


def _keys(messages: list[Message]) -> list[tuple[str, int, int]]:
    return [(m.topic(), m.partition(), m.offset()) for m in messages]


def test_each_topic_waits_only_for_its_own_limits_and_keeps_its_order(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000, "src.b": 2000})
    states = {(t, p): _state(t, p) for t in ("a", "b") for p in (0, 1)}
    targets = Targets()
    gate = LimitsGate(targets, states, lambda: object())  # type: ignore[arg-type]
    monkeypatch.setattr(limits_gate, "CONFIG_BATCH", 1)  # one topic a request: answered one by one
    gate.wait_for(list(states.values()))

    first = [*_records("a", 0, range(0, 3)), *_records("b", 1, range(0, 2)), *_records("a", 1, range(0, 2))]
    assert gate.admit(lambda: first) == []  # nothing known yet: all held
    target.release("src.a")
    second = [*_records("b", 1, range(2, 4)), *_records("a", 0, range(3, 5))]
    admitted = _admit_until(gate, 7, [second])
    # a's records, held ones first and each partition in order; b's stay held while its limits are read.
    assert sorted(_keys(admitted)) == sorted([("a", 0, o) for o in range(5)] + [("a", 1, o) for o in range(2)])
    assert [o for t, p, o in _keys(admitted) if (t, p) == ("a", 0)] == list(range(5))
    assert states[("a", 0)].max_batch_bytes == 1000 and states[("b", 1)].max_batch_bytes == FAR
    assert targets.learned == [{"src.a": (1000, False)}]

    end = Message(topic="b", partition=1, offset=5, error=KafkaError(KafkaError._PARTITION_EOF))
    assert gate.admit(lambda: [*_records("b", 1, range(4, 5)), end]) == []
    target.release("src.b")
    later = _admit_until(gate, 6)
    # The end of the partition comes after its held records, as consumed: the copy counts it copied up to there.
    assert _keys(later) == [("b", 1, o) for o in range(6)] and later[-1].error() is not None
    assert states[("b", 0)].max_batch_bytes == 2000
    assert gate.admit(lambda: _records("b", 0, range(1))) and not gate.held  # nothing held any more


def test_records_of_a_partition_taken_back_meanwhile_are_dropped(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000})
    states = {("a", p): _state("a", p) for p in (0, 1, 2)}
    gate = LimitsGate(Targets(), states, lambda: object())  # type: ignore[arg-type]
    gate.wait_for(list(states.values()))
    assert gate.admit(lambda: [*_records("a", 0, range(3)), *_records("a", 1, range(3)),
                               *_records("a", 2, range(3))]) == []
    del states[("a", 1)]  # taken back
    states[("a", 2)] = _state("a", 2)  # taken back and given again: fetched again from its new start
    target.release("src.a")
    admitted = _admit_until(gate, 3)
    time.sleep(0.1)
    admitted += gate.admit(list)
    assert _keys(admitted) == [("a", 0, o) for o in range(3)]


def test_with_the_hold_full_nothing_more_is_consumed(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000})
    monkeypatch.setattr(limits_gate, "HOLD_MAX", 5)
    states = {("a", 0): _state("a", 0)}
    gate = LimitsGate(Targets(), states, lambda: object())  # type: ignore[arg-type]
    gate.wait_for(list(states.values()))
    assert gate.admit(lambda: _records("a", 0, range(5))) == []

    def consume() -> list[Message]:
        raise AssertionError("consumed with the hold full")

    assert gate.admit(consume) == []  # waited a moment for an answer, consumed nothing
    target.release("src.a")
    assert _keys(_admit_until(gate, 5)) == [("a", 0, o) for o in range(5)]


def test_a_refused_read_is_asked_again_its_records_held_meanwhile(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000})
    monkeypatch.setattr(limits_gate, "RETRY_S", 0.05)
    target.refuse.add("src.a")
    states = {("a", 0): _state("a", 0)}
    gate = LimitsGate(Targets(), states, lambda: object())  # type: ignore[arg-type]
    gate.wait_for(list(states.values()))
    target.release("src.a")
    admitted = _admit_until(gate, 2, [_records("a", 0, range(2))])
    assert _keys(admitted) == [("a", 0, 0), ("a", 0, 1)]
    assert target.asked == [["src.a"], ["src.a"]]
    assert states[("a", 0)].max_batch_bytes == 1000


def test_the_starts_answers_serve_the_first_assignment_and_a_missing_topic_is_asked_again(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000, "src.b": 2000})
    ahead_asked: list[list[str]] = []

    def read_ahead(_admin: object, targets: list[str], missing: list[str] | None = None) -> dict:
        ahead_asked.append(list(targets))
        return {"src.a": (1000, False)}  # src.b not on the target yet: the preparation creates it

    states = {("a", 0): _state("a", 0), ("b", 0): _state("b", 0)}
    gate = LimitsGate(Targets(), states, lambda: object())  # type: ignore[arg-type]
    monkeypatch.setattr(limits_gate, "read_limits", read_ahead)
    gate.read_ahead(object(), ["src.a", "src.b"])  # type: ignore[arg-type]
    deadline = time.monotonic() + 5
    while gate.answers.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.setattr(limits_gate, "read_limits", target.read)
    gate.wait_for(list(states.values()))
    target.release("src.b")
    admitted = _admit_until(gate, 2, [[*_records("a", 0, range(1)), *_records("b", 0, range(1))]])
    assert sorted(_keys(admitted)) == [("a", 0, 0), ("b", 0, 0)]
    assert ahead_asked == [["src.a", "src.b"]] and target.asked == [["src.b"]]  # a's answer was not asked again


def test_answers_nothing_waits_for_are_dropped_and_asked_again_when_needed(monkeypatch):
    target = Target(monkeypatch, {"src.a": 1000})
    states: dict = {}
    gate = LimitsGate(Targets(), states, lambda: object())  # type: ignore[arg-type]
    gate.read_ahead(object(), ["src.a"])  # type: ignore[arg-type]  # a flow stopped at the start: nothing assigned
    target.release("src.a")
    deadline = time.monotonic() + 5
    while gate.answers.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.admit(list) == [] and gate.answers.empty() and not gate.asked  # the copy's loop dropped it
    target.limits["src.a"] = 2000  # changed while the flow was stopped
    states[("a", 0)] = _state("a", 0)
    gate.wait_for([states[("a", 0)]])
    assert _keys(_admit_until(gate, 1, [_records("a", 0, range(1))])) == [("a", 0, 0)]
    assert states[("a", 0)].max_batch_bytes == 2000 and len(target.asked) == 2
