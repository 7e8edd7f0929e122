"""Replication policies behave as MM2's Default and Identity policies, quirks included."""

import pytest

from mirror_engine.plan import DefaultReplicationPolicy, IdentityReplicationPolicy, is_cycle, make_policy


@pytest.fixture
def default() -> DefaultReplicationPolicy:
    return DefaultReplicationPolicy()


@pytest.fixture
def identity() -> IdentityReplicationPolicy:
    return IdentityReplicationPolicy("A")


# DefaultReplicationPolicy: naming


def test_default_prefixes_source_alias(default: DefaultReplicationPolicy) -> None:
    assert default.format_remote_topic("A", "orders") == "A.orders"


def test_default_prefixes_an_already_remote_topic(default: DefaultReplicationPolicy) -> None:
    assert default.format_remote_topic("B", "A.orders") == "B.A.orders"


def test_default_custom_separator_in_remote_name() -> None:
    assert DefaultReplicationPolicy("_").format_remote_topic("A", "orders") == "A_orders"


def test_default_topic_source_of_remote_topic(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source("A.orders") == "A"


def test_default_topic_source_of_plain_topic_is_none(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source("orders") is None


def test_default_native_dotted_topic_looks_remote(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source("my.topic") == "my"


def test_default_trailing_separator_has_no_source(default: DefaultReplicationPolicy) -> None:
    # Java's split drops trailing empty strings: "a." splits into ["a"].
    assert default.topic_source("a.") is None


def test_default_trailing_separators_have_no_source(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source("a..") is None


def test_default_leading_separator_gives_empty_source(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source(".x") == ""


def test_default_empty_segment_after_source_still_remote(default: DefaultReplicationPolicy) -> None:
    assert default.topic_source("a..b") == "a"
    assert default.upstream_topic("a..b") == ".b"


def test_default_topic_source_with_custom_separator() -> None:
    policy = DefaultReplicationPolicy("_")
    assert policy.topic_source("A_orders") == "A"
    assert policy.topic_source("A.orders") is None


def test_default_multi_character_separator() -> None:
    policy = DefaultReplicationPolicy("--")
    assert policy.topic_source("A--my-orders") == "A"
    assert policy.upstream_topic("A--my-orders") == "my-orders"


def test_default_upstream_topic_strips_one_hop(default: DefaultReplicationPolicy) -> None:
    assert default.upstream_topic("B.A.orders") == "A.orders"


def test_default_upstream_topic_of_plain_topic_is_none(default: DefaultReplicationPolicy) -> None:
    assert default.upstream_topic("orders") is None


def test_default_upstream_topic_of_trailing_separator_is_none(default: DefaultReplicationPolicy) -> None:
    assert default.upstream_topic("a.") is None


def test_default_original_topic_follows_every_hop(default: DefaultReplicationPolicy) -> None:
    assert default.original_topic("C.B.A.orders") == "orders"


def test_default_original_topic_of_plain_topic_is_itself(default: DefaultReplicationPolicy) -> None:
    assert default.original_topic("orders") == "orders"


def test_default_original_topic_stops_at_trailing_separator(default: DefaultReplicationPolicy) -> None:
    assert default.original_topic("B.a.") == "a."


def test_empty_separator_is_rejected() -> None:
    with pytest.raises(ValueError, match="separator"):
        DefaultReplicationPolicy("")


# DefaultReplicationPolicy: special topics


def test_heartbeats_topic_name(default: DefaultReplicationPolicy) -> None:
    assert default.heartbeats_topic() == "heartbeats"


def test_replicated_heartbeats_are_heartbeats_topics(default: DefaultReplicationPolicy) -> None:
    assert default.is_heartbeats_topic("heartbeats")
    assert default.is_heartbeats_topic("B.A.heartbeats")


def test_suffix_heartbeats_is_not_a_heartbeats_topic(default: DefaultReplicationPolicy) -> None:
    assert not default.is_heartbeats_topic("A.app-heartbeats")


def test_default_internal_topic_names(default: DefaultReplicationPolicy) -> None:
    assert default.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert default.checkpoints_topic("A") == "A.checkpoints.internal"


def test_custom_separator_internal_topic_names() -> None:
    policy = DefaultReplicationPolicy("_")
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs_B_internal"
    assert policy.checkpoints_topic("A") == "A_checkpoints_internal"


def test_disabled_internal_separator_keeps_dotted_internal_names() -> None:
    policy = DefaultReplicationPolicy("_", internal_separator_enabled=False)
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"


def test_disabled_internal_separator_still_renames_data_topics() -> None:
    policy = DefaultReplicationPolicy("_", internal_separator_enabled=False)
    assert policy.format_remote_topic("A", "orders") == "A_orders"


def test_checkpoints_topic_detected(default: DefaultReplicationPolicy) -> None:
    assert default.is_checkpoints_topic("A.checkpoints.internal")
    assert not default.is_checkpoints_topic("A.checkpoints")


def test_custom_separator_checkpoints_topic_detected() -> None:
    policy = DefaultReplicationPolicy("_")
    assert policy.is_checkpoints_topic("A_checkpoints_internal")
    assert not policy.is_checkpoints_topic("A.checkpoints.internal")


def test_mm2_internal_topic_detected(default: DefaultReplicationPolicy) -> None:
    assert default.is_mm2_internal_topic("mm2-offset-syncs.B.internal")
    assert default.is_mm2_internal_topic("mm2-offsets.A.internal")
    assert not default.is_mm2_internal_topic("orders")


def test_custom_separator_mm2_internal_topic_detected() -> None:
    policy = DefaultReplicationPolicy("_")
    assert policy.is_mm2_internal_topic("mm2-offset-syncs_B_internal")
    assert not policy.is_mm2_internal_topic("orders_internals")


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__x", ".x", "x-internal", "x.internal"])
def test_internal_topics(default: DefaultReplicationPolicy, topic: str) -> None:
    assert default.is_internal_topic(topic)


@pytest.mark.parametrize("topic", ["orders", "A.orders", "_x", "x_internal", "internal", "x.internals"])
def test_non_internal_topics(default: DefaultReplicationPolicy, topic: str) -> None:
    assert not default.is_internal_topic(topic)


def test_custom_separator_internal_suffix_is_internal() -> None:
    assert DefaultReplicationPolicy("_").is_internal_topic("mm2-offset-syncs_B_internal")


def test_dotted_internal_suffix_is_internal_under_any_separator() -> None:
    assert DefaultReplicationPolicy("_").is_internal_topic("A.checkpoints.internal")


# IdentityReplicationPolicy


def test_identity_keeps_topic_name(identity: IdentityReplicationPolicy) -> None:
    assert identity.format_remote_topic("A", "orders") == "orders"


def test_identity_keeps_dotted_topic_name(identity: IdentityReplicationPolicy) -> None:
    assert identity.format_remote_topic("A", "my.topic") == "my.topic"


def test_identity_prefixes_heartbeats(identity: IdentityReplicationPolicy) -> None:
    assert identity.format_remote_topic("A", "heartbeats") == "A.heartbeats"


def test_identity_prefixes_any_topic_ending_in_heartbeats(identity: IdentityReplicationPolicy) -> None:
    assert identity.format_remote_topic("src", "app-heartbeats") == "src.app-heartbeats"


def test_identity_prefix_uses_custom_separator_for_heartbeats() -> None:
    assert IdentityReplicationPolicy("A", "_").format_remote_topic("A", "heartbeats") == "A_heartbeats"


def test_identity_source_of_any_topic_is_configured_alias(identity: IdentityReplicationPolicy) -> None:
    assert identity.topic_source("orders") == "A"
    assert identity.topic_source("X.orders") == "A"


def test_identity_source_of_heartbeats_comes_from_name(identity: IdentityReplicationPolicy) -> None:
    assert identity.topic_source("B.heartbeats") == "B"
    assert identity.topic_source("heartbeats") is None


def test_identity_upstream_topic_is_topic_itself(identity: IdentityReplicationPolicy) -> None:
    assert identity.upstream_topic("X.orders") == "X.orders"


def test_identity_upstream_of_heartbeats_strips_one_hop(identity: IdentityReplicationPolicy) -> None:
    assert identity.upstream_topic("B.A.heartbeats") == "A.heartbeats"


def test_identity_original_topic_is_topic_itself(identity: IdentityReplicationPolicy) -> None:
    assert identity.original_topic("X.orders") == "X.orders"


def test_identity_replicated_heartbeats_are_heartbeats_topics(identity: IdentityReplicationPolicy) -> None:
    assert identity.is_heartbeats_topic("B.A.heartbeats")
    assert not identity.is_heartbeats_topic("orders")


def test_identity_internal_topic_names_match_default(identity: IdentityReplicationPolicy) -> None:
    assert identity.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert identity.checkpoints_topic("A") == "A.checkpoints.internal"


# Cycle detection


def test_topic_from_target_is_cycle_under_default(default: DefaultReplicationPolicy) -> None:
    assert is_cycle(default, "B.events", "B")


def test_topic_from_target_several_hops_up_is_cycle(default: DefaultReplicationPolicy) -> None:
    assert is_cycle(default, "C.B.events", "B")


def test_topic_from_other_cluster_is_not_cycle(default: DefaultReplicationPolicy) -> None:
    assert not is_cycle(default, "C.events", "B")


def test_plain_topic_is_not_cycle(default: DefaultReplicationPolicy) -> None:
    assert not is_cycle(default, "events", "B")


def test_replicated_heartbeats_from_target_is_cycle(default: DefaultReplicationPolicy) -> None:
    assert is_cycle(default, "C.B.heartbeats", "B")


def test_topic_from_target_is_not_cycle_under_identity() -> None:
    assert not is_cycle(IdentityReplicationPolicy("A"), "B.events", "B")


def test_identity_never_flags_data_topics_as_cycles() -> None:
    policy = IdentityReplicationPolicy("A")
    for topic in ("events", "B.events", "A.B.events", "x."):
        assert not is_cycle(policy, topic, "B")


def test_identity_heartbeats_from_target_is_cycle() -> None:
    # MM2 defers to the default policy for heartbeats, so this loop is still caught.
    assert is_cycle(IdentityReplicationPolicy("A"), "B.heartbeats", "B")


# make_policy


@pytest.mark.parametrize("name", ["default", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"])
def test_make_policy_default_names(name: str) -> None:
    policy = make_policy(name, "A")
    assert type(policy) is DefaultReplicationPolicy
    assert policy.format_remote_topic("A", "orders") == "A.orders"


@pytest.mark.parametrize("name", ["identity", "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"])
def test_make_policy_identity_names(name: str) -> None:
    policy = make_policy(name, "A")
    assert isinstance(policy, IdentityReplicationPolicy)
    assert policy.topic_source("orders") == "A"


def test_make_policy_passes_separator_settings() -> None:
    policy = make_policy("default", "A", separator="_", internal_separator_enabled=False)
    assert policy.format_remote_topic("A", "orders") == "A_orders"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"


def test_make_policy_unknown_name_lists_allowed_values() -> None:
    with pytest.raises(ValueError, match=r"'prefix'.*default.*identity") as info:
        make_policy("prefix", "A")
    assert "org.apache.kafka.connect.mirror.IdentityReplicationPolicy" in str(info.value)
