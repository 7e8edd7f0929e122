"""Reads of many topics or partitions hold a bounded share of the answer at a time: topic configs asked
CONFIG_BATCH topics a request and kept only where a reader looks, ListOffsets at most LIST_OFFSETS_IN_FLIGHT calls
out at once (their answers held until read); new topics are waited for until their
leaders answer; and a retry asks again only what answered a brief refusal (a leader not ready, a topic the
answering broker does not know yet), until its timeout. The answers themselves are checked on real brokers by the
integration tests that read configs and offsets."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigSource, OffsetSpec

from mirror_engine.kafka import CONFIG_BATCH, CONFIGS_IN_FLIGHT, describe_topic_configs, list_offsets, wait_until_served
from mirror_engine.kafka.testing import CONFIGS_READ_BY_NAME, LIST_OFFSETS_BATCH, LIST_OFFSETS_IN_FLIGHT
from mirror_engine.kafka.testing import topics as topics_module


def _entry(name: str, value: str, source: ConfigSource) -> SimpleNamespace:
    return SimpleNamespace(name=name, value=value, source=source, is_read_only=False, is_sensitive=False)


class ConfigAdmin:
    """Answers describe_configs as a broker would: every config of every topic, most at Kafka's default."""

    def __init__(self) -> None:
        self.asked: list[int] = []  # topics per call
        self.unread: list[int] = []  # per call, the answers not read yet
        self.most_out = 0  # calls with answers not all read, at most, when a call was made

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Any]:
        call = len(self.asked)
        self.asked.append(len(resources))
        self.unread.append(len(resources))
        self.most_out = max(self.most_out, sum(1 for left in self.unread if left))
        answers = {}
        for resource in resources:
            entries = {name: _entry(name, "1", ConfigSource.DEFAULT_CONFIG)
                       for name in ["retention.bytes", "segment.ms", *CONFIGS_READ_BY_NAME]}
            entries["retention.ms"] = _entry("retention.ms", "60000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
            entries["min.insync.replicas"] = _entry("min.insync.replicas", "2", ConfigSource.STATIC_BROKER_CONFIG)
            answers[resource] = self._answer(call, entries)
        return answers

    def _answer(self, call: int, entries: dict) -> Any:
        admin = self

        class Answer:
            def exception(self) -> None:
                return None

            def result(self) -> Any:
                admin.unread[call] -= 1
                return entries

        return Answer()


def test_topic_configs_asked_in_batches_and_kept_where_read():
    admin = ConfigAdmin()
    names = [f"t{i}" for i in range(2 * CONFIG_BATCH + 5)]
    entries = describe_topic_configs(admin, names)  # type: ignore[arg-type]
    assert admin.asked == [CONFIG_BATCH, CONFIG_BATCH, 5]
    assert sorted(entries) == sorted(names)
    for found in entries.values():
        # What is set somewhere, and the few read by name even at their default; no other default.
        assert {entry.name for entry in found} == {"retention.ms", "min.insync.replicas", *CONFIGS_READ_BY_NAME}


def test_topic_configs_asked_a_few_requests_at_once():
    """Each request waits for a broker's answer: one after the other, 1,000 topics took twice as long."""
    admin = ConfigAdmin()
    names = [f"t{i}" for i in range(10 * CONFIG_BATCH + 1)]
    assert sorted(describe_topic_configs(admin, names)) == sorted(names)  # type: ignore[arg-type]
    assert len(admin.asked) == 11
    assert admin.most_out == CONFIGS_IN_FLIGHT > 1


REAL_OFFSETS_REQUEST = topics_module.offsets_request  # before the fixture below replaces it


@pytest.fixture(autouse=True)
def _offsets_asked_of_the_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake admin clients below answer a ListOffsets call as the client's C part does (`offsets_request`): one
    future per call, of {partition: its answer, or its KafkaError}."""
    monkeypatch.setattr(topics_module, "offsets_request",
                        lambda admin, tps, spec, timeout_s, isolation_level: admin.offsets_request(tps))


class _Call:
    """A ListOffsets call's future: each partition's answer (or KafkaError), or the call's own error; `on_read` once
    the answers are read."""

    def __init__(self, answers: dict[TopicPartition, Any], on_read: Callable[[], None] = lambda: None,
                 error: KafkaException | None = None) -> None:
        self.answers, self.on_read, self.error = answers, on_read, error

    def exception(self) -> KafkaException | None:
        return self.error

    def result(self) -> dict[TopicPartition, Any]:
        self.on_read()
        if self.error is not None:
            raise self.error
        return self.answers


class ConnectingAdmin:
    """An admin client's DescribeCluster, answered at once; what was asked, in order."""

    calls: list[str]

    def describe_cluster(self, request_timeout: float) -> Future:
        self.__dict__.setdefault("calls", []).append("describe_cluster")
        answered: Future = Future()
        answered.set_result(SimpleNamespace(cluster_id="c", nodes=[]))
        return answered


class OffsetsAdmin(ConnectingAdmin):
    """Answers ListOffsets calls; counts the calls whose answers were not read when another call was made."""

    def __init__(self) -> None:
        self.unread: dict[int, bool] = {}  # call -> its answers not read yet
        self.most_out = 0

    def offsets_request(self, tps: list[TopicPartition]) -> _Call:
        call = len(self.unread)
        self.__dict__.setdefault("calls", []).append("list_offsets")
        self.unread[call] = True
        self.most_out = max(self.most_out, sum(self.unread.values()))
        return _Call({tp: SimpleNamespace(offset=tp.partition) for tp in tps},
                     on_read=lambda: self.unread.__setitem__(call, False))


def test_list_offsets_keeps_few_calls_out_at_once():
    admin = OffsetsAdmin()
    tps = [TopicPartition(f"t{i // 10}", i) for i in range(10 * LIST_OFFSETS_BATCH + 1)]
    offsets = list_offsets(admin, tps, OffsetSpec.latest())  # type: ignore[arg-type]
    assert offsets == {(tp.topic, tp.partition): tp.partition for tp in tps}
    assert len(admin.unread) == 11  # calls of LIST_OFFSETS_BATCH partitions
    assert admin.most_out == LIST_OFFSETS_IN_FLIGHT < 11


def test_a_clients_first_list_offsets_waits_for_its_first_connection_once():
    """librdkafka drops the bootstrap connections once it learns the cluster's brokers; a leader's request made by a
    fresh client then may wait a second or more (`first_connection`): the client is asked a DescribeCluster first,
    once."""
    admin = OffsetsAdmin()
    tps = [TopicPartition("t", p) for p in range(3)]
    list_offsets(admin, tps, OffsetSpec.latest())  # type: ignore[arg-type]
    list_offsets(admin, tps, OffsetSpec.earliest())  # type: ignore[arg-type]
    assert admin.calls == ["describe_cluster", "list_offsets", "list_offsets"]
    assert list_offsets(OffsetsAdmin(), [], OffsetSpec.latest()) == {}  # type: ignore[arg-type]


class NewPartitionsAdmin(ConnectingAdmin):
    """Metadata that serves the topic at once, and leaders that answer "not leader" to the first `refusals` asks
    of their offsets, as a broker still creating the logs of thousands of new partitions does."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.asks = 0

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> Any:
        partitions = {p: SimpleNamespace(leader=1, error=None) for p in range(3)}
        return SimpleNamespace(topics={"t": SimpleNamespace(error=None, partitions=partitions)})

    def offsets_request(self, tps: list[TopicPartition]) -> _Call:
        self.asks += 1
        refuse = self.asks <= self.refusals
        assert {(tp.topic, tp.partition) for tp in tps} == {("t", 0), ("t", 1), ("t", 2)}
        return _Call({tp: KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION) if refuse else SimpleNamespace(offset=0)
                      for tp in tps})


def test_served_topics_wait_until_their_leaders_answer():
    admin = NewPartitionsAdmin(refusals=2)
    wait_until_served(admin, ["t"], timeout_s=10)  # type: ignore[arg-type]
    assert admin.asks == 3  # asked again until the leaders answered, then no more


def test_leaders_that_never_answer_end_the_wait_at_its_timeout():
    admin = NewPartitionsAdmin(refusals=1_000_000)
    wait_until_served(admin, ["t"], timeout_s=0.5)  # type: ignore[arg-type]  # returns: the next reader retries
    assert admin.asks > 1


class FewLeadersLateAdmin(ConnectingAdmin):
    """A cluster where a few partitions' leaders answer "not leader" to the first asks of their offsets, the others
    at once; records every partition asked."""

    def __init__(self, late: set[int], refusals: int, refusal: int = KafkaError.NOT_LEADER_FOR_PARTITION) -> None:
        self.late = late
        self.refusals = refusals
        self.refusal = refusal
        self.asked: list[int] = []  # partitions, in the order asked
        self.metadata_asks = 0

    def list_topics(self, topic: str | None = None, timeout: float = 0) -> Any:
        self.metadata_asks += 1
        return SimpleNamespace(topics={})

    def offsets_request(self, tps: list[TopicPartition]) -> _Call:
        answers: dict[TopicPartition, Any] = {}
        for tp in tps:
            self.asked.append(tp.partition)
            refuse = tp.partition in self.late and self.asked.count(tp.partition) <= self.refusals
            answers[tp] = KafkaError(self.refusal) if refuse else SimpleNamespace(offset=tp.partition)
        return _Call(answers)


def test_list_offsets_asks_again_only_the_partitions_whose_leader_was_not_ready():
    partitions = 3 * LIST_OFFSETS_BATCH
    admin = FewLeadersLateAdmin(late={1, LIST_OFFSETS_BATCH + 7, partitions - 1}, refusals=2)
    tps = [TopicPartition(f"t{i % 7}", i) for i in range(partitions)]
    offsets = list_offsets(admin, tps, OffsetSpec.latest(), timeout_s=10)  # type: ignore[arg-type]
    assert offsets == {(tp.topic, tp.partition): tp.partition for tp in tps}
    # Every partition once, then the three late ones twice more: not the whole set again at each refusal.
    assert len(admin.asked) == partitions + 2 * 3
    assert sorted(admin.asked[partitions:]) == sorted(2 * [1, LIST_OFFSETS_BATCH + 7, partitions - 1])
    assert admin.metadata_asks == 2  # their leaders looked up again before each retry


def test_list_offsets_asks_again_partitions_of_topics_whose_leaders_are_not_elected_yet():
    """librdkafka answers "No leaders found" (_NOENT) for partitions whose topic was just created, before the
    metadata names their leaders (10,000 partitions created on a busy cluster): asked again, not fatal."""
    admin = FewLeadersLateAdmin(late={0, 1, 2}, refusals=3, refusal=KafkaError._NOENT)
    tps = [TopicPartition("new", i) for i in range(4)]
    assert list_offsets(admin, tps, OffsetSpec.latest(), timeout_s=10) == {  # type: ignore[arg-type]
        ("new", i): i for i in range(4)}


def test_list_offsets_raises_the_leaders_refusal_once_its_time_is_out():
    admin = FewLeadersLateAdmin(late={2}, refusals=10**6)
    tps = [TopicPartition("t", i) for i in range(5)]
    try:
        list_offsets(admin, tps, OffsetSpec.latest(), timeout_s=0.3)  # type: ignore[arg-type]
    except KafkaException as error:
        assert error.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION
    else:
        raise AssertionError("a leader that never answers must fail the read at its timeout")
    assert admin.asked.count(0) == 1 and admin.asked.count(2) > 1


class LaggingBrokerConfigAdmin(ConfigAdmin):
    """A broker that does not know topics `late` for their first `unknown_for` asks (created a moment ago), and
    refuses `denied_topics` to the principal."""

    def __init__(self, late: set[str], unknown_for: int, denied_topics: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.late = late
        self.unknown_for = unknown_for
        self.denied_topics = denied_topics
        self.asked_names: list[str] = []

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future]:
        answers = super().describe_configs(resources, request_timeout)
        for resource in resources:
            self.asked_names.append(resource.name)
            refusal = None
            if resource.name in self.late and self.asked_names.count(resource.name) <= self.unknown_for:
                refusal = KafkaError.UNKNOWN_TOPIC_OR_PART
            elif resource.name in self.denied_topics:
                refusal = KafkaError.TOPIC_AUTHORIZATION_FAILED
            if refusal is not None:
                future: Future = Future()
                future.set_exception(KafkaException(KafkaError(refusal)))
                answers[resource] = future
        return answers


def test_topic_configs_of_a_topic_the_broker_does_not_know_yet_are_asked_again():
    names = [f"t{i}" for i in range(CONFIG_BATCH + 3)]
    admin = LaggingBrokerConfigAdmin(late={"t2", f"t{CONFIG_BATCH + 1}"}, unknown_for=2,
                                     denied_topics=frozenset({"t5"}))
    denied: list[str] = []
    entries = describe_topic_configs(admin, names, timeout_s=10, denied=denied)  # type: ignore[arg-type]
    assert sorted(entries) == sorted(set(names) - {"t5"}) and denied == ["t5"]
    # Every topic once, then only the two late ones, twice more.
    assert len(admin.asked_names) == len(names) + 2 * 2
    assert sorted(admin.asked_names[len(names):]) == sorted(2 * ["t2", f"t{CONFIG_BATCH + 1}"])


def test_topic_configs_of_a_topic_never_known_fail_at_the_timeout():
    admin = LaggingBrokerConfigAdmin(late={"gone"}, unknown_for=10**6)
    try:
        describe_topic_configs(admin, ["kept", "gone"], timeout_s=0.3)  # type: ignore[arg-type]
    except KafkaException as error:
        assert error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    else:
        raise AssertionError("a topic the broker never knows must fail the read at its timeout")
    assert admin.asked_names.count("kept") == 1 and admin.asked_names.count("gone") > 1


class RealFuturesAdmin(ConnectingAdmin):
    """An admin client answering with the client's own kind of future: its first call fails whole (the connection
    dropped), then partition 0 answers "not leader" once."""

    def __init__(self) -> None:
        self.futures: list[Future] = []

    def list_topics(self, *_args: Any, **_kwargs: Any) -> Any:
        return SimpleNamespace(topics={})

    def offsets_request(self, tps: list[TopicPartition]) -> Future:
        future: Future = Future()
        if not self.futures:
            future.set_exception(KafkaException(KafkaError(KafkaError._TRANSPORT)))
        else:
            future.set_result({tp: KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)
                               if tp.partition == 0 and len(self.futures) < 2 else SimpleNamespace(offset=7)
                               for tp in tps})
        self.futures.append(future)
        return future


def test_refused_offsets_leave_no_cycle_through_their_futures():
    """A refusal raised out of its future keeps a traceback whose frames hold every future of its request: a cycle
    that only a full collection frees (the engine runs one a minute); 40,000 such futures were held at start-up."""
    admin = RealFuturesAdmin()
    tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
    offsets = list_offsets(admin, tps, OffsetSpec.latest())  # type: ignore[arg-type]
    assert offsets == {("t", 0): 7, ("t", 1): 7}
    assert len(admin.futures) == 3  # the failed call, partition 0 refused, partition 0 answered
    refused = admin.futures[0].exception()
    assert refused is not None and refused.__traceback__ is None


def test_the_clients_offsets_call_answers_through_one_future():
    """`offsets_request` calls the client's C part directly (its Python method adds a future per partition): on this
    version of the client it takes what it is given and answers through the one future, here a client that reaches no
    broker failing the call at its timeout instead of raising."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": "127.0.0.1:1"})
    answer = REAL_OFFSETS_REQUEST(admin, [TopicPartition("t", 0), TopicPartition("t", 1)], OffsetSpec.latest(), 0.5,
                                  IsolationLevel.READ_UNCOMMITTED)
    error = answer.exception(timeout=10)
    assert isinstance(error, KafkaException) and error.args[0].code() == KafkaError._TIMED_OUT, error


def test_topic_configs_asked_ahead_name_the_topics_not_there_yet_at_once():
    # The engine's start asks its target topics' limits before the preparation created the missing ones.
    admin = LaggingBrokerConfigAdmin(late={"created-later"}, unknown_for=10**6)
    missing: list[str] = []
    entries = describe_topic_configs(admin, ["kept", "created-later"], timeout_s=10,  # type: ignore[arg-type]
                                     missing=missing)
    assert sorted(entries) == ["kept"] and missing == ["created-later"]
    assert admin.asked_names == ["kept", "created-later"]  # asked once, not again until the timeout
