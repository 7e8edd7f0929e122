"""An MM2 file's enabled flows taken together (`import_mm2_flows`): one plan each, and the loops refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror_engine.mm2 import Mm2PlanError, import_mm2_flows

CORPUS = Path(__file__).resolve().parent / "mm2_corpus"
IDENTITY = "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
TWO = """\
clusters = a, b
a.bootstrap.servers = 127.0.0.1:19092
b.bootstrap.servers = 127.0.0.1:29092
a->b.enabled = true
b->a.enabled = true
"""
THREE = """\
clusters = a, b, c
a.bootstrap.servers = 127.0.0.1:19092
b.bootstrap.servers = 127.0.0.1:29092
c.bootstrap.servers = 127.0.0.1:39092
"""


def _names(text: str) -> list[str]:
    return [imported.plan.name for imported in import_mm2_flows(text, "test.properties")]


def _refusal(text: str) -> str:
    with pytest.raises(Mm2PlanError) as refused:
        import_mm2_flows(text, "test.properties")
    [problem] = refused.value.problems
    return problem


def test_the_active_active_corpus_file_gives_both_flows():
    imports = import_mm2_flows((CORPUS / "03-active-active.properties").read_bytes(), "03")
    assert [(i.plan.source.alias, i.plan.target.alias, i.plan.name) for i in imports] == [
        ("A", "B", "A-to-B"), ("B", "A", "B-to-A")]


def test_one_enabled_flow_gives_its_plan_alone():
    assert _names(TWO.replace("b->a.enabled = true", "b->a.enabled = false")) == ["a-to-b"]


def test_default_policy_both_ways_is_no_loop_and_never_copies_a_remote_topic_back():
    forward, back = (imported.plan for imported in import_mm2_flows(TWO, "test.properties"))
    assert forward.replicates_topic("orders") and not back.replicates_topic("a.orders")
    assert back.replicates_topic("payments") and not forward.replicates_topic("b.payments")


def test_each_flow_of_a_pair_names_the_other_as_its_return_flow_under_the_prefixing_policy_only():
    forward, back = (imported.plan for imported in import_mm2_flows(TWO, "test.properties"))
    assert (forward.cutover.return_flow, back.cutover.return_flow) == ("b-to-a", "a-to-b")
    hub = THREE + "a->c.enabled = true\nb->c.enabled = true\nc->a.enabled = true\n"
    assert [i.plan.cutover.return_flow for i in import_mm2_flows(hub, "hub.properties")] == [
        "c-to-a", None, "a-to-c"]
    disjoint = TWO + IDENTITY + "a->b.topics = orders\nb->a.topics = payments\n"
    assert [i.plan.cutover.return_flow for i in import_mm2_flows(disjoint, "test.properties")] == [None, None]


def test_identity_policy_both_ways_is_refused_naming_the_loop():
    problem = _refusal(TWO + IDENTITY)
    assert problem.startswith("a->b.enabled, b->a.enabled: these flows make a loop (a->b->a)")
    assert "identity replication policy" in problem and "--flow" in problem


def test_identity_with_topics_listed_by_name_and_none_taken_back_runs():
    assert _names(TWO + IDENTITY + "a->b.topics = orders\nb->a.topics = payments, refunds\n") == ["a-to-b", "b-to-a"]


def test_identity_with_a_name_taken_back_or_a_pattern_is_refused():
    assert "a loop" in _refusal(TWO + IDENTITY + "a->b.topics = orders\nb->a.topics = orders, payments\n")
    assert "a loop" in _refusal(TWO + IDENTITY + "a->b.topics = orders.*\nb->a.topics = payments\n".replace(
        "b->a.topics = payments", "b->a.topics = payments.*"))


def test_one_identity_flow_in_a_longer_loop_is_refused_and_a_hub_is_no_loop():
    ring = THREE + "a->b.enabled = true\nb->c.enabled = true\nc->a.enabled = true\n" \
        "c->a.replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    problem = _refusal(ring)
    assert "(a->b->c->a)" in problem and "c->a uses the identity" in problem
    hub = THREE + IDENTITY + "a->c.enabled = true\nb->c.enabled = true\n"
    assert _names(hub) == ["a-to-c", "b-to-c"]
    assert _names(ring.replace("c->a.replication.policy.class = org.apache.kafka.connect.mirror."
                               "IdentityReplicationPolicy\n", "")) == ["a-to-b", "b-to-c", "c-to-a"]
