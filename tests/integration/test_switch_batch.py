"""The switch_groups stage's task switches a batch of groups, each as it can: one stopped on the source at once,
one still consumed there once its consumers leave (waited for in the trigger, deferred), each with its own proof;
a group with nothing to switch is skipped, saying why; a group that can never switch fails the batch after the
others, naming it; both outcomes are stored for the cutover page; run again, the batch repeats nothing."""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.cutover import GroupReadyToSwitch, wait_until_ready
from mirror_engine.kafka import committed_offsets
from mirror_engine.observe import ReportStore
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict
from tests.integration.test_cutover_retries import _read_and_commit

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

NOW = int(time.time() * 1000)


class _Outlet:
    """What a task adds to an Asset alias's outlet events."""

    def __init__(self) -> None:
        self.added: list[tuple[str, dict]] = []

    def add(self, asset: Any, extra: dict | None = None) -> None:
        self.added.append((asset.uri, extra or {}))


async def _first_event(trigger: Any) -> dict:
    try:
        async for event in trigger.run():
            return event.payload
    finally:
        await trigger.cleanup()
    raise AssertionError("the trigger ended without an event")


def test_a_batch_switches_each_group_as_it_can_and_names_the_one_it_cannot(kafka_pair, unique_name, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException, TaskDeferred
    from kafka_migration.operators.migration import SWITCHED_GROUPS
    from kafka_migration.operators.switch_groups import SwitchGroupsOperator

    source, target = kafka_pair
    topic = f"{unique_name}-orders"
    stopped, consumed, never = f"{unique_name}-stopped", f"{unique_name}-consumed", f"{unique_name}-never"
    blocked, audit = f"{unique_name}-blocked", f"{unique_name}-audit"  # the plan copies `topic` only, not `audit`
    create_topics(source, [NewTopic(topic, 2, 1), NewTopic(audit, 1, 1)])
    produce(source, topic, [(i % 2, b"k", f"v{i}".encode(), None, NOW + i) for i in range(400)])
    produce(source, audit, [(0, b"k", b"v", None, NOW)])
    data = plan_dict(source, target, topic, name=f"batch{unique_name[-8:]}")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 240}, daemon=True)
    runner.start()
    member = None
    try:
        _read_and_commit(source.client_config(), stopped, topic, 100)
        _read_and_commit(source.client_config(), blocked, audit, 1)
        member = _read_and_commit(source.client_config(), consumed, topic, 150, leave=False)
        copied = GroupReadyToSwitch(plan, source.client_config(), target.client_config(), stopped)
        try:  # the engine copied past the stopped group's offsets, so the first pass switches it
            wait_until_ready(copied, 120, outcome="the engine did not copy the topic")
        finally:
            copied.close()

        def task(groups: list[str]) -> SwitchGroupsOperator:
            return SwitchGroupsOperator(task_id="switch", plan_path=str(plan_file), groups=groups,
                                        wait_timeout_s=120, poll_interval_s=0.2)

        batch = task([stopped, consumed, never, blocked])
        outlets: dict = collections.defaultdict(_Outlet)
        context = {"params": {}, "outlet_events": outlets}
        # First pass: the stopped group is switched at once; the consumed one is left to the triggerer.
        with pytest.raises(TaskDeferred) as deferred:
            batch.execute(context)
        assert committed_offsets(AdminClient(target.client_config()), stopped) == committed_offsets(
            AdminClient(source.client_config()), stopped)
        assert committed_offsets(AdminClient(target.client_config()), consumed) == {}
        trigger, resume = deferred.value.trigger, deferred.value.kwargs
        assert trigger.serialize()[1]["arguments"] == {"groups": [consumed], "fence": False}
        assert deferred.value.method_name == "resume" and resume["waiting"] == [consumed]

        # The trigger waits while the group has a member on the source, and fires once it leaves.
        waiting = type(trigger)(**{**trigger.serialize()[1], "deadline": time.time() + 2})
        timed_out = asyncio.run(_first_event(waiting))
        assert timed_out["status"] == "timeout", timed_out
        assert f"group {consumed}: waiting for its 1 member(s) on the source to stop" in timed_out["progress"]
        member.close()
        member = None
        event = asyncio.run(_first_event(trigger))
        assert event["status"] == "ok" and event["detail"]["ready"] == [consumed], event

        # Resumed: the consumed group is switched, then the batch fails naming the group that never can; the group
        # with nothing to switch is not a failure.
        with pytest.raises(AirflowFailException) as failed:
            getattr(batch, deferred.value.method_name)(context, event=event, **resume)
        assert "1 group(s) of 4 not switched (2 switched" in str(failed.value), failed.value
        assert f"{blocked}: group {blocked}: reads topics this plan does not copy: {audit}" in str(failed.value)
        assert never not in str(failed.value)
        assert committed_offsets(AdminClient(target.client_config()), consumed) == committed_offsets(
            AdminClient(source.client_config()), consumed)
        store = ReportStore(plan, target.client_config())
        reports = store.read("group-switch")
        assert reports[f"group-switch:{stopped}"]["report"]["ok"] and reports[f"group-switch:{consumed}"]["report"][
            "ok"] and f"group-switch:{never}" not in reports and f"group-switch:{blocked}" not in reports
        outcomes = {record["name"]: record["report"] for record in store.read("group-outcome").values()}
        assert outcomes[never]["verdict"] == "skip" and "nothing to switch" in outcomes[never]["reason"], outcomes
        assert outcomes[blocked]["verdict"] == "blocked" and audit in outcomes[blocked]["reason"], outcomes
        assert stopped not in outcomes and consumed not in outcomes
        offsets = {group: committed_offsets(AdminClient(target.client_config()), group)
                   for group in (stopped, consumed)}

        # Run again (a retry, a cleared task): nothing committed, the same proofs; the Asset events come now.
        again = task([stopped, consumed]).execute(context)
        assert again == {"switched": 2, "repeated": 2, "partitions": sum(map(len, offsets.values()))}, again
        assert {group: committed_offsets(AdminClient(target.client_config()), group)
                for group in (stopped, consumed)} == offsets
        assert store.read("group-switch") == reports
        store.close()
        assert sorted(uri for uri, _extra in outlets[SWITCHED_GROUPS].added) == sorted(
            f"kafka-migration://{plan.name}/groups/{group}" for group in (stopped, consumed))
    finally:
        if member is not None:
            member.close()
        replicator.stop()
        runner.join(60)
