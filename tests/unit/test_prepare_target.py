"""prepare_target, the one sequence of every front end: read and plan, refuse on a problem, dry-run, apply; each
step reported as it ends, nothing sent to the target once a step stops the sequence."""

from __future__ import annotations

import pytest

from mirror_engine.plan import plan_from_dict
from mirror_engine.prepare import Action, ApplyResult, PreparePlan, managed_now, prepare_target
from mirror_engine.prepare.testing import sequence as sequence_module

PLAN = plan_from_dict({
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
})
CREATE = Action("create_topic", "orders", {"source_topic": "orders", "partitions": 3, "replication_factor": 1,
                                           "configs": {}})
ALTER = Action("alter_configs", "payments", {"source_topic": "payments", "set": {"retention.ms": "1"},
                                             "delete": []})


class Target:
    """Stands in for both clusters: what plan_preparation finds, and every apply_actions call, in order."""

    def __init__(self, actions: list[Action], problems: list[str] | None = None,
                 refused_in_dry_run: bool = False, internal: dict[str, dict[str, str]] | None = None) -> None:
        self.actions, self.problems, self.refused_in_dry_run = actions, problems or [], refused_in_dry_run
        self.internal = internal or {}  # the flow's internal topics missing on the target
        self.calls: list[tuple] = []
        self.internal_asked: list[list[str]] = []  # the internal topics of each apply_actions call

    def plan_preparation(self, plan, source_config, target_config, managed, best_effort=False,
                         target_configs=None, clusters=None, ends_of_managed=False,
                         configs_of_existing=True, list_source=None) -> PreparePlan:
        self.calls.append(("plan", managed_now(managed), best_effort))
        return PreparePlan(list(self.actions), list(self.problems), ["orders", "payments"],
                           internal_topics=dict(self.internal))

    def apply_actions(self, target_config, actions, validate_only=False, internal_topics=None) -> ApplyResult:
        self.calls.append(("validate" if validate_only else "apply", [a.kind for a in actions]))
        self.internal_asked.append(sorted(internal_topics or {}))
        if validate_only and self.refused_in_dry_run:
            return ApplyResult(failed=[(actions[0], "policy violation")])
        return ApplyResult(applied=list(actions))


@pytest.fixture
def target(monkeypatch):
    def install(*args, **kwargs) -> Target:
        fake = Target(*args, **kwargs)
        monkeypatch.setattr(sequence_module, "plan_preparation", fake.plan_preparation)
        monkeypatch.setattr(sequence_module, "apply_actions", fake.apply_actions)
        monkeypatch.setattr(sequence_module, "managed_target_topics", lambda plan, config: frozenset({"stored"}))
        return fake

    return install


def _run(**options):
    seen: list[str] = []
    done = prepare_target(PLAN, {}, {}, on_planned=lambda p: seen.append("planned"),
                          on_checked=lambda r: seen.append("checked"), on_applied=lambda r: seen.append("applied"),
                          **options)
    return done, seen


def test_plan_only_reads_and_plans_and_sends_nothing(target):
    fake = target([CREATE])
    done, seen = _run()
    assert fake.calls == [("plan", frozenset({"stored"}), False)]  # the flow's topics, read from its progress
    assert seen == ["planned"] and done.checked is None and done.applied is None and not done.refused


def test_dry_run_then_apply_in_that_order(target):
    fake = target([CREATE, ALTER])
    done, seen = _run(dry_run=True, apply=True)
    assert [call[0] for call in fake.calls] == ["plan", "validate", "apply"]
    assert seen == ["planned", "checked", "applied"]
    assert done.applied is not None and done.applied.applied == [CREATE, ALTER] and done.failed == []


def test_apply_without_a_dry_run(target):
    fake = target([CREATE])
    _done, seen = _run(apply=True)
    assert [call[0] for call in fake.calls] == ["plan", "apply"] and seen == ["planned", "applied"]


def test_a_problem_stops_before_anything_reaches_the_target(target):
    fake = target([CREATE], problems=["topic 'orders': already holds records"])
    done, seen = _run(dry_run=True, apply=True)
    assert [call[0] for call in fake.calls] == ["plan"] and seen == ["planned"]
    assert done.refused and done.checked is None and done.applied is None


def test_the_callers_own_problems_refuse_too_and_are_seen_with_the_plan(target):
    fake = target([CREATE])
    planned: list[PreparePlan] = []
    done = prepare_target(PLAN, {}, {}, dry_run=True, apply=True, more_problems=lambda p: ["the source cannot fence"],
                          on_planned=planned.append)
    assert [call[0] for call in fake.calls] == ["plan"]
    assert done.refused and planned[0].problems == ["the source cannot fence"]


def test_a_change_the_dry_run_refuses_stops_before_applying(target):
    fake = target([CREATE], refused_in_dry_run=True)
    done, seen = _run(dry_run=True, apply=True)
    assert [call[0] for call in fake.calls] == ["plan", "validate"] and seen == ["planned", "checked"]
    assert done.failed == [(CREATE, "policy violation")] and done.applied is None


def test_nothing_to_do_sends_nothing(target):
    fake = target([])
    done, seen = _run(dry_run=True, apply=True)
    assert [call[0] for call in fake.calls] == ["plan"] and seen == ["planned"] and done.actions == []


def test_kinds_keep_only_those_actions(target):
    fake = target([CREATE, ALTER])
    done, _seen = _run(apply=True, kinds={"alter_configs"})
    assert fake.calls[-1] == ("apply", ["alter_configs"]) and done.actions == [ALTER]
    fake = target([CREATE])
    done, _seen = _run(apply=True, kinds={"create_acl"})
    assert [call[0] for call in fake.calls] == ["plan"]


def test_given_managed_topics_and_best_effort_reach_the_planning(target):
    fake = target([])
    prepare_target(PLAN, {}, {}, managed_topics=frozenset({"orders"}), best_effort=True)
    assert fake.calls == [("plan", frozenset({"orders"}), True)]


INTERNAL = {"mirror-engine-offsets.src.shop.internal": {"cleanup.policy": "compact"},
            "src.checkpoints.internal": {"cleanup.policy": "compact"}}


def test_a_full_apply_creates_the_missing_internal_topics_with_the_target_topics(target):
    # In the same request as the topics: created after a burst of partitions, a broker shows them only once it has
    # created the burst's logs, and the engine started right after waited for them.
    fake = target([CREATE], internal=INTERNAL)
    _run(dry_run=True, apply=True)
    assert [call[0] for call in fake.calls] == ["plan", "validate", "apply"]
    assert fake.internal_asked == [sorted(INTERNAL), sorted(INTERNAL)]
    fake = target([], internal=INTERNAL)  # the topics exist already: the internal topics are still made
    _run(apply=True)
    assert fake.calls[-1] == ("apply", []) and fake.internal_asked == [sorted(INTERNAL)]


def test_internal_topics_are_left_to_the_engine_with_kinds_or_when_told(target):
    fake = target([CREATE, ALTER], internal=INTERNAL)
    _run(apply=True, kinds={"alter_configs"})
    assert fake.internal_asked == [[]]
    fake = target([], internal=INTERNAL)
    _run(apply=True, internal_topics=False)
    assert [call[0] for call in fake.calls] == ["plan"]
