"""compute_actions refuses hazards before anything is applied: more target partitions than the source, and
target topic names Kafka would refuse or confuse (each one checked, so that a prepare is never half-applied)."""

from __future__ import annotations

import pytest

from mirror_engine.kafka import ClusterState, TopicState, topic_name_problem
from mirror_engine.plan import PlanError, plan_from_dict
from mirror_engine.prepare import compute_actions

BASE = {
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
}


def _plan(**sections):
    return plan_from_dict({**BASE, **sections})


def _cluster(topics: dict[str, int], names: frozenset[str] | None = None) -> ClusterState:
    states = {name: TopicState(name, partitions, 1) for name, partitions in topics.items()}
    return ClusterState(1, states, None, frozenset(), frozenset(topics) if names is None else names)


def test_a_target_topic_with_more_partitions_than_the_source_is_a_problem():
    prepared = compute_actions(_plan(), _cluster({"orders": 3}), _cluster({"orders": 6}))
    assert len(prepared.problems) == 1, prepared.problems
    problem = prepared.problems[0]
    assert problem.startswith("topic 'orders': ")
    assert "6 partitions" in problem and "3" in problem and "breaks key-to-partition placement" in problem
    assert "sync.allow_more_target_partitions" in problem


def test_more_target_partitions_are_accepted_when_the_plan_allows_them():
    plan = _plan(sync={"allow_more_target_partitions": True})
    prepared = compute_actions(plan, _cluster({"orders": 3}), _cluster({"orders": 6}))
    assert prepared.problems == []
    assert [a.kind for a in prepared.actions] == []


def test_equal_or_fewer_target_partitions_are_no_problem():
    prepared = compute_actions(_plan(), _cluster({"orders": 3, "payments": 4}), _cluster({"orders": 3, "payments": 2}))
    assert prepared.problems == []
    assert [(a.kind, a.resource) for a in prepared.actions] == [("add_partitions", "payments")]


@pytest.mark.parametrize(("name", "expected"), [
    ("", "empty"),
    (".", "'.' and '..'"),
    ("..", "'.' and '..'"),
    ("x" * 250, "250 characters"),
    ("orders v2", "' '"),
    ("orders/v2", "'/'"),
    ("ordérs", "'é'"),
])
def test_illegal_topic_names_are_named_with_the_reason(name, expected):
    problem = topic_name_problem(name)
    assert problem is not None and expected in problem, problem


@pytest.mark.parametrize("name", ["orders", "a.b-c_D9", "x" * 249, "..."])
def test_legal_topic_names_pass(name):
    assert topic_name_problem(name) is None


def test_a_target_name_over_249_characters_stops_the_whole_prepare():
    long_name = "o" * 247  # legal on the source; `src.` makes it 251 on the target
    plan = _plan(replication_policy={"type": "default"})
    prepared = compute_actions(plan, _cluster({"a-fine-topic": 1, long_name: 1}), _cluster({}))
    assert len(prepared.problems) == 1, prepared.problems
    assert f"'{long_name}'" in prepared.problems[0] and "251 characters" in prepared.problems[0]
    assert "src." + long_name in prepared.problems[0]


def test_target_names_that_collide_in_kafka_metrics_are_a_problem():
    # Kafka refuses to create `orders_eu` beside `orders.eu`: the second create would fail after the first.
    prepared = compute_actions(_plan(), _cluster({"orders.eu": 1, "orders_eu": 1}), _cluster({}))
    assert len(prepared.problems) == 1, prepared.problems
    assert "'orders.eu'" in prepared.problems[0] and "'orders_eu'" in prepared.problems[0]
    assert "collide" in prepared.problems[0]


def test_a_target_name_colliding_with_an_existing_target_topic_is_a_problem():
    target = _cluster({}, names=frozenset({"orders_eu"}))
    prepared = compute_actions(_plan(), _cluster({"orders.eu": 1}), target)
    assert len(prepared.problems) == 1, prepared.problems
    assert "'orders_eu'" in prepared.problems[0] and "collide" in prepared.problems[0]


@pytest.mark.parametrize("separator", ["/", "::", " ", "é"])
def test_a_separator_that_makes_illegal_topic_names_is_refused_at_load(separator):
    with pytest.raises(PlanError) as raised:
        _plan(replication_policy={"type": "default", "separator": separator})
    assert raised.value.problems[0].startswith("replication_policy.separator: "), raised.value.problems


def test_a_heartbeats_replica_holding_other_flows_beats_is_no_reason_to_stop_but_a_data_topic_is():
    plan = _plan(replication_policy={"type": "default"}, engine={"replicate_heartbeats": True})
    source = _cluster({"heartbeats": 1, "orders": 1})
    target = ClusterState(1, {"src.heartbeats": TopicState("src.heartbeats", 1, 1),
                              "src.orders": TopicState("src.orders", 1, 1)}, None,
                          frozenset({"src.heartbeats", "src.orders"}), frozenset({"src.heartbeats", "src.orders"}))
    problems = compute_actions(plan, source, target).problems
    assert problems and all("'src.orders'" in problem for problem in problems), problems
