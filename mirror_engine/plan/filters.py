"""Topic and group name filters with MM2's semantics (`DefaultTopicFilter`, `DefaultGroupFilter`).

Patterns are Java-style regexes matched against the whole name, compiled with RE2 (`regexes.py`): linear
time whatever the pattern, and the backtracking-only constructs are refused when the plan loads.
"""

from collections.abc import Callable, Sequence
from functools import lru_cache

from mirror_engine.plan.regexes import FullMatcher, RegexError, compile_any

__all__ = ["DEFAULT_GROUP_EXCLUDES", "DEFAULT_TOPIC_EXCLUDES", "NameFilter", "RememberedAnswers", "name_filter"]

# MM2's `topics.exclude` and `groups.exclude` defaults; the include defaults are `.*`.
DEFAULT_TOPIC_EXCLUDES = [r".*[\-\.]internal", r".*\.replica", r"__.*"]
DEFAULT_GROUP_EXCLUDES = [r"console-consumer-.*", r"connect-.*", r"__.*"]


def _compile(patterns: Sequence[str], role: str) -> FullMatcher | None:
    # An empty list matches nothing: the empty regex would match everything, and MM2 treats a blank list
    # as "none".
    try:
        return compile_any(patterns)
    except RegexError as error:
        raise RegexError(f"invalid {role} regex {error}") from None


class NameFilter:
    """Accepts a name that fully matches an include pattern and no exclude pattern (regexes, as MM2)."""

    __slots__ = ("_exclude", "_exclude_patterns", "_include", "_include_patterns")

    def __init__(self, include: Sequence[str], exclude: Sequence[str]) -> None:
        self._include_patterns = tuple(include)
        self._exclude_patterns = tuple(exclude)
        self._include = _compile(self._include_patterns, "include")
        self._exclude = _compile(self._exclude_patterns, "exclude")

    def __repr__(self) -> str:
        return (
            f"NameFilter(include={list(self._include_patterns)!r}, exclude={list(self._exclude_patterns)!r})"
        )

    def accepts(self, name: str) -> bool:
        if self._include is None or self._include.fullmatch(name) is None:
            return False
        return self._exclude is None or self._exclude.fullmatch(name) is None


class RememberedAnswers:
    """A question about names, each name's answer kept: a plan's filters are asked about the same topic and group
    names at every refresh, checkpoint round and assignment, and one RE2 match through its Python binding takes
    6-9 us (a topic filter with MM2's default excludes matches twice: 12-17 us a name, 19 us for
    `MigrationPlan.replicates_topic`; the source's 1,000 topics and 1,000 groups are asked several times as the
    engine starts). At most `MOST` answers are kept (3 MiB of 20-character names), all forgotten at once when
    there are more: names come and go on a cluster, and a forgotten answer is only asked again."""

    __slots__ = ("_answers", "_ask")
    MOST = 1 << 15

    def __init__(self, ask: Callable[[str], bool]) -> None:
        self._ask = ask
        self._answers: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        answer = self._answers.get(name)
        if answer is None:
            if len(self._answers) >= self.MOST:
                self._answers.clear()
            answer = self._answers[name] = self._ask(name)
        return answer


@lru_cache(maxsize=16)
def name_filter(include: tuple[str, ...], exclude: tuple[str, ...]) -> RememberedAnswers:
    """`NameFilter(include, exclude).accepts`, its answers kept, one per distinct pair of lists (plans rebuild their
    filters freely: each is built once per process)."""
    return RememberedAnswers(NameFilter(include, exclude).accepts)
