"""Fences and rollbacks on clusters with and without an authorizer (the plain pair has none, the secured one has).

A rollback needs nothing the switch did not: it removes a fence only where one exists. A fence asked for on a
source without an authorizer is refused, with a sentence, before anything changes: by the CLI, the Python API,
the DAG's fence tasks and its preflight.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.cutover import GroupSwitcher, SwitchError, switch_producers
from mirror_engine.flow import ControlChannel
from mirror_engine.kafka import committed_offsets, group_fence, read_acls, topic_write_fence
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)
NO_AUTHORIZER = re.compile(r"the source 'src' has no authorizer, so .+ cannot be fenced; switch without ")


def _group_at(config: dict, group: str, topic: str, records: int) -> None:
    """`group` consumes `records` records of `topic`, commits and leaves."""
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read, deadline = 0, time.monotonic() + 60
    while read < records:
        assert time.monotonic() < deadline, f"group {group} read only {read} records"
        message = consumer.poll(0.5)
        read += message is not None and message.error() is None
    consumer.commit(asynchronous=False)
    consumer.close()


def _migration(pair, unique_name: str, tmp_path) -> tuple[dict, str, str, dict]:
    """A topic copied to the target and a group part-way through it on the source: (plan dict, topic, group,
    the group's source offsets)."""
    source, target = pair
    topic, group = f"{unique_name}-t", f"{unique_name}-g"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, f"k{i}".encode(), f"v{i}".encode(), None, NOW + i) for i in range(200)])
    _group_at(source.client_config(), group, topic, 60)
    data = plan_dict(source, target, topic, name=f"fence-{unique_name[-8:]}")
    assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(
        max_seconds=60, until_caught_up=True).ok
    return data, topic, group, committed_offsets(AdminClient(source.client_config()), group)


def test_rollback_without_an_authorizer_moves_the_group_back(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    data, _topic, group, on_source = _migration(kafka_pair, unique_name, tmp_path)
    switcher = GroupSwitcher(plan_from_dict(data), source.client_config(), target.client_config())
    assert switcher.switch(group, timeout_s=60).ok
    assert committed_offsets(AdminClient(target.client_config()), group) == on_source
    back = switcher.rollback(group, timeout_s=60)
    assert back.ok and back.direction == "tgt->src"
    assert committed_offsets(AdminClient(source.client_config()), group) == on_source


def test_a_fence_without_an_authorizer_is_refused_before_anything_changes(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    data, topic, group, on_source = _migration(kafka_pair, unique_name, tmp_path)
    plan = plan_from_dict(data)
    switcher = GroupSwitcher(plan, source.client_config(), target.client_config())
    with pytest.raises(SwitchError) as refused:
        switcher.switch(group, fence=True, timeout_s=60)
    assert NO_AUTHORIZER.search(str(refused.value)), refused.value
    assert "switch without --fence, or enable an authorizer" in str(refused.value)
    assert committed_offsets(AdminClient(target.client_config()), group) == {}
    assert committed_offsets(AdminClient(source.client_config()), group) == on_source
    with pytest.raises(SwitchError) as refused:
        switcher.fence(group)
    assert NO_AUTHORIZER.search(str(refused.value))

    with pytest.raises(SwitchError) as refused:
        switch_producers(plan, source.client_config(), target.client_config(), topic, fence=True, timeout_s=30)
    assert NO_AUTHORIZER.search(str(refused.value)) and "--fence" in str(refused.value)
    control = ControlChannel(plan, target.client_config())
    control.load()
    assert topic not in control.switched_topics


def test_cli_switch_group_fence_and_rollback_without_an_authorizer(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    data, _topic, group, on_source = _migration(kafka_pair, unique_name, tmp_path)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args, "--plan", str(plan_file)],
                              capture_output=True, text=True, timeout=300)

    fenced = cli("switch-group", "--group", group, "--fence", "--timeout", "60")
    assert fenced.returncode == 1, (fenced.returncode, fenced.stderr[-2000:])
    assert NO_AUTHORIZER.search(fenced.stderr) and "SECURITY_DISABLED" not in fenced.stderr, fenced.stderr[-2000:]
    assert committed_offsets(AdminClient(target.client_config()), group) == {}

    switched = cli("switch-group", "--group", group, "--timeout", "60")
    assert switched.returncode == 0, switched.stderr[-2000:]
    back = cli("switch-group", "--group", group, "--rollback", "--timeout", "60")
    assert back.returncode == 0, back.stderr[-2000:]
    assert f"group {group} switched tgt->src: verified" in back.stdout
    assert committed_offsets(AdminClient(source.client_config()), group) == on_source

    # `plan` says so when the plan itself asks for fencing.
    plan_file.write_text(yaml.safe_dump({**data, "cutover": {"fence": True}}))
    planned = cli("plan")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert NO_AUTHORIZER.search(planned.stderr) and "cutover.fence" in planned.stderr, planned.stderr[-2000:]


@pytest.mark.airflow
def test_dag_switch_task_and_preflight_say_the_source_cannot_be_fenced(kafka_pair, unique_name, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException
    from kafka_migration.operators.migration import PreflightOperator
    from kafka_migration.operators.switch_groups import SwitchGroupsOperator

    source, target = kafka_pair
    topic, group = f"{unique_name}-t", f"{unique_name}-g"
    create_topics(source, [NewTopic(topic, 1, 1)])
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(source, target, topic, name=f"fence-{unique_name[-8:]}")))
    fencing = {"params": {"fence": True, "groups": [group], "stages": ["preflight", "switch_groups"]}}

    with pytest.raises(AirflowFailException) as failed:
        PreflightOperator(task_id="check", plan_path=str(plan_file)).execute(fencing)
    assert NO_AUTHORIZER.search(str(failed.value)) and "the run's fence param" in str(failed.value), failed.value
    # Without fencing, or with no group to switch, or without the switch stage, preflight has nothing to say.
    for params in ({"fence": False, "groups": [group]}, {"fence": True, "groups": []},
                   {"fence": True, "groups": [group], "stages": ["preflight", "prepare"]}):
        result = PreflightOperator(task_id="check", plan_path=str(plan_file)).execute({"params": params})
        assert result["topics"] == 1

    # The switch task fences its groups first: refused at once, naming the group, nothing committed.
    with pytest.raises(AirflowFailException) as failed:
        SwitchGroupsOperator(task_id="switch", plan_path=str(plan_file), groups=[group], fence=True).execute(fencing)
    assert NO_AUTHORIZER.search(str(failed.value)) and "SECURITY_DISABLED" not in str(failed.value)
    assert f"{group}: " in str(failed.value), failed.value
    assert committed_offsets(AdminClient(target.client_config()), group) == {}
    # The wait for the fence fails at once instead of waiting out its timeout.
    from mirror_engine.cutover import GroupReadyToSwitch

    check = GroupReadyToSwitch(plan_from_dict(yaml.safe_load(plan_file.read_text())), source.client_config(),
                               target.client_config(), group=group, fence=True)
    try:
        readiness = check.check()
    finally:
        check.close()
    assert NO_AUTHORIZER.search(readiness.failed), readiness


def test_rollback_on_a_secured_source_touches_no_acl_when_the_switch_set_no_fence(secured_pair, unique_name,
                                                                                   tmp_path):
    source, target = secured_pair
    data, topic, group, on_source = _migration(secured_pair, unique_name, tmp_path)
    before = read_acls(AdminClient(source.client_config()))
    switcher = GroupSwitcher(plan_from_dict(data), source.client_config(), target.client_config())
    assert switcher.switch(group, timeout_s=60).ok
    assert switcher.rollback(group, timeout_s=60).ok
    assert committed_offsets(AdminClient(source.client_config()), group) == on_source
    assert read_acls(AdminClient(source.client_config())) == before
    assert group_fence(group) not in before and topic_write_fence(topic) not in before


def test_the_authorizer_is_seen_by_any_principal(kafka_pair, secured_pair):
    from mirror_engine.kafka import has_authorizer

    assert not has_authorizer(AdminClient(kafka_pair[0].client_config()))
    assert has_authorizer(AdminClient(secured_pair[0].client_config()))
    # A principal refused the broker's configs is refused by an authorizer.
    assert has_authorizer(AdminClient(secured_pair[0].client_config("reader")))
