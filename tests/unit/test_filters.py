"""Name filters: MM2's full-match include/exclude regex lists and their defaults."""

import pytest

from mirror_engine.filters import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, NameFilter


def test_include_all_accepts_any_name() -> None:
    assert NameFilter([".*"], []).accepts("orders")


def test_include_must_match_whole_name() -> None:
    flt = NameFilter(["orders"], [])
    assert flt.accepts("orders")
    assert not flt.accepts("orders-v2")
    assert not flt.accepts("old-orders")


def test_any_include_pattern_may_match() -> None:
    flt = NameFilter(["orders", "pay.*"], [])
    assert flt.accepts("orders")
    assert flt.accepts("payments")
    assert not flt.accepts("users")


def test_each_alternative_must_match_whole_name() -> None:
    # "a|b" under full match means the whole name is "a" or "b", never a prefix "a...".
    flt = NameFilter(["a", "b"], [])
    assert not flt.accepts("ab")


def test_empty_include_list_matches_nothing() -> None:
    # Not even the empty name, which an empty regex would match.
    flt = NameFilter([], ["never"])
    assert not flt.accepts("orders")
    assert not flt.accepts("")


def test_exclude_wins_over_include() -> None:
    flt = NameFilter([".*"], ["secret-.*"])
    assert not flt.accepts("secret-keys")
    assert flt.accepts("public-keys")


def test_exclude_must_match_whole_name() -> None:
    assert NameFilter([".*"], ["tmp"]).accepts("tmp-orders")


def test_empty_exclude_list_excludes_nothing() -> None:
    flt = NameFilter([".*"], [])
    assert flt.accepts("__consumer_offsets")
    assert flt.accepts("")


def test_dot_in_pattern_is_a_regex_wildcard() -> None:
    assert NameFilter(["a.b"], []).accepts("axb")


def test_patterns_are_case_sensitive() -> None:
    assert not NameFilter(["orders"], []).accepts("Orders")


def test_filter_accepts_tuples_of_patterns() -> None:
    assert NameFilter(("orders",), ()).accepts("orders")


def test_filter_is_unaffected_by_later_changes_to_the_lists() -> None:
    include = ["orders"]
    flt = NameFilter(include, [])
    include.append("users")
    assert not flt.accepts("users")


def test_bad_include_regex_names_the_pattern() -> None:
    with pytest.raises(ValueError, match=r"include regex '\(orders'"):
        NameFilter(["ok", "(orders"], [])


def test_bad_exclude_regex_names_the_pattern() -> None:
    with pytest.raises(ValueError, match=r"exclude regex '\[x'"):
        NameFilter([".*"], ["[x"])


def test_patterns_valid_alone_but_not_joined_are_reported() -> None:
    with pytest.raises(ValueError, match=r"joined as 'a\|\(\?i\)b'"):
        NameFilter(["a", "(?i)b"], [])


@pytest.mark.parametrize(
    "topic", ["x.internal", "x-internal", "mm2-offsets.A.internal", "orders.replica", "__consumer_offsets"]
)
def test_default_topic_excludes_reject(topic: str) -> None:
    assert not NameFilter([".*"], DEFAULT_TOPIC_EXCLUDES).accepts(topic)


@pytest.mark.parametrize("topic", ["orders", "A.orders", "xinternal", "x_internal", "replica", "_x"])
def test_default_topic_excludes_accept(topic: str) -> None:
    assert NameFilter([".*"], DEFAULT_TOPIC_EXCLUDES).accepts(topic)


@pytest.mark.parametrize("group", ["console-consumer-12345", "connect-mm2", "__internal-group"])
def test_default_group_excludes_reject(group: str) -> None:
    assert not NameFilter([".*"], DEFAULT_GROUP_EXCLUDES).accepts(group)


@pytest.mark.parametrize("group", ["billing", "my-connect-app", "console-consumer"])
def test_default_group_excludes_accept(group: str) -> None:
    assert NameFilter([".*"], DEFAULT_GROUP_EXCLUDES).accepts(group)
