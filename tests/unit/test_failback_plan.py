"""The plan of the way back (`failback_plan`): the forward plan's clusters swapped, its switched topics by their exact
names, nothing prepared on the forward source; refused where a way back cannot be exact."""

from __future__ import annotations

import pytest

from mirror_engine.failback import check_failback_possible, failback_plan
from mirror_engine.plan import PlanError, plan_from_dict


def _forward(**sections):
    return plan_from_dict({
        "name": "orders-move",
        "source": {"alias": "old", "bootstrap_servers": "old:9092", "client": {"security.protocol": "SSL"}},
        "target": {"alias": "new", "bootstrap_servers": "new:9092"},
        "topics": {"include": ["orders.*", "pay.ments"]},
        "engine": {"exactly_once": True, "replicate_heartbeats": True},
        "backfill": {"topics": ["orders"]},
        "cutover": {"groups": ["billing"], "producer_topics": ["orders", "pay.ments"], "return_flow": None},
        **sections,
    })


def test_the_way_back_swaps_the_clusters_and_copies_the_switched_topics_by_their_exact_names():
    back = failback_plan(_forward(), ["pay.ments", "orders"])
    assert back.name == "orders-move-failback"
    assert (back.source.alias, back.source.bootstrap_servers) == ("new", "new:9092")
    assert (back.target.alias, back.target.client) == ("old", {"security.protocol": "SSL"})
    assert back.replicates_topic("orders") and back.replicates_topic("pay.ments")
    # A dot in a name is a dot, not any character; a topic of the forward plan not switched is not copied back.
    assert not back.replicates_topic("payXments") and not back.replicates_topic("orders-eu")
    assert not (back.sync.configs or back.sync.partitions or back.sync.acls) and back.sync.reuse_existing_topics
    assert back.engine.exactly_once and not back.engine.replicate_heartbeats
    assert back.backfill.topics == [] and back.schedule is None
    assert back.cutover.groups == ["billing"] and back.cutover.producer_topics == ["orders", "pay.ments"]


def test_only_the_switched_topics_are_producer_topics_of_the_way_back():
    assert failback_plan(_forward(), ["orders"]).cutover.producer_topics == ["orders"]


def test_a_plan_whose_copies_have_other_names_has_no_exact_way_back():
    with pytest.raises(PlanError, match=r"replication_policy\.type: a way back needs the identity policy"):
        check_failback_possible(_forward(replication_policy={"type": "default"}))
    check_failback_possible(_forward())  # identity: accepted


def test_a_plan_name_too_long_for_its_way_back_is_refused_naming_the_field():
    with pytest.raises(PlanError, match="name: the way back is named"):
        check_failback_possible(_forward(name="x" * 95))


def test_the_way_back_translates_ids_back_into_the_source_registry():
    registries = {"schemas": {"source": {"url": "http://old-registry:8081"}, "target": {"conn_id": "new_registry"}}}
    back = failback_plan(_forward(**registries), ["orders"])
    assert back.schemas is not None
    assert (back.schemas.source.conn_id, back.schemas.target.url) == ("new_registry", "http://old-registry:8081")
    assert failback_plan(_forward(), ["orders"]).schemas is None
