"""Name filters: MM2's full-match include/exclude regex lists and their defaults."""

import time

import pytest

from mirror_engine.plan import DEFAULT_GROUP_EXCLUDES, DEFAULT_TOPIC_EXCLUDES, NameFilter
from mirror_engine.plan.testing import RememberedAnswers


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


def test_inline_case_flag_applies_to_its_own_pattern_only() -> None:
    # MM2 joins the list with "|", where a Java `(?i)` would leak into the patterns after it; here each
    # pattern keeps its own flags.
    flt = NameFilter(["a", "(?i)b", "c"], [])
    assert flt.accepts("B") and flt.accepts("b") and flt.accepts("a") and flt.accepts("c")
    assert not flt.accepts("A")
    assert not flt.accepts("C")


def test_inline_flag_group_is_supported() -> None:
    assert NameFilter(["orders-(?i:eu|us)"], []).accepts("orders-EU")


@pytest.mark.parametrize("flag", ["(?x)", "(?u)", "(?d)", "(?U)", "(?iU)"])
def test_unsupported_inline_flags_are_refused_by_name(flag: str) -> None:
    with pytest.raises(ValueError, match=r"inline flag .* is not supported.* \(\?i\)") as raised:
        NameFilter([f"{flag}orders"], [])
    assert flag.strip("(?)")[-1] in str(raised.value)


@pytest.mark.parametrize(("pattern", "construct"), [
    ("orders(?=-v2)", "look-around"),
    ("orders(?!-v2)", "look-around"),
    ("(a)\\1", "back-reference"),
    ("a*+", "possessive"),
    ("(?>a)", "atomic"),
])
def test_backtracking_constructs_are_refused_with_a_sentence(pattern: str, construct: str) -> None:
    with pytest.raises(ValueError) as raised:
        NameFilter([pattern], [])
    message = str(raised.value)
    assert repr(pattern) in message and "linear time" in message and construct in message


def test_java_class_intersection_is_refused_rather_than_read_otherwise() -> None:
    with pytest.raises(ValueError, match="intersection"):
        NameFilter(["[a-z&&[^b]]+"], [])


@pytest.mark.timeout(10)
def test_nested_quantifiers_match_in_linear_time() -> None:
    # Catastrophic for a backtracking engine: (a+)+ against a long run of a's that finally fails.
    flt = NameFilter(["(a+)+", "(x|x)*y"], ["(.*a){20}"])
    started = time.monotonic()
    assert not flt.accepts("a" * 40 + "!")
    assert not flt.accepts("x" * 40)
    assert flt.accepts("a" * 19)
    assert time.monotonic() - started < 1.0


def test_a_huge_repetition_is_refused_not_built() -> None:
    with pytest.raises(ValueError, match="repetition"):
        NameFilter(["((a{100}){100}){100}"], [])


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


def test_remembered_answers_ask_once_per_name_and_forget_all_past_their_bound(monkeypatch) -> None:
    asked: list[str] = []

    def ask(name: str) -> bool:
        asked.append(name)
        return name.startswith("orders")

    answers = RememberedAnswers(ask)
    answered = [answers("orders-eu"), answers("users"), answers("orders-eu"), answers("users")]
    assert answered == [True, False, True, False]
    assert asked == ["orders-eu", "users"]
    monkeypatch.setattr(RememberedAnswers, "MOST", 2)
    assert answers("orders-us") is True  # a third name: the two kept are forgotten, this one kept
    assert answers("users") is False
    assert asked == ["orders-eu", "users", "orders-us", "users"]
