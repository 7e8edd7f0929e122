"""What `run` does beside the copy, on real clusters: config sync at MM2's own interval, between topic refreshes."""

from __future__ import annotations

import itertools
import re
import threading
import time
import uuid

import pytest
import yaml
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from mirror_engine import cli
from mirror_engine.kafka import describe_topic_configs, topic_overrides
from mirror_engine.kafka.testing import clusters
from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.plan import plan_from_dict
from mirror_engine.prepare import prepare_target
from mirror_engine.replication import FlowRun
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration


def test_a_config_changed_on_the_source_reaches_the_target_at_the_config_sync_interval(kafka_pair, unique_name):
    source, target = kafka_pair
    topic = f"{unique_name}-cfg"
    create_topics(source, [NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])
    tag = uuid.uuid4().hex[:6]
    text = (f"clusters = s{tag}, t{tag}\ns{tag}.bootstrap.servers = {source.bootstrap}\n"
            f"t{tag}.bootstrap.servers = {target.bootstrap}\ns{tag}->t{tag}.enabled = true\n"
            f"s{tag}->t{tag}.topics = {re.escape(topic)}\n"
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
            "replication.factor = 1\nemit.checkpoints.enabled = false\n"
            # Topics (and with them configs) are refreshed every 600 s: only the config sync task can be quicker.
            "refresh.topics.interval.seconds = 600\nsync.topic.configs.interval.seconds = 2\n")
    plan = import_mm2_properties(text, "mm2.properties").plan
    assert not plan.engine.run_checkpoints
    flow = FlowRun(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=flow.run, kwargs={"max_seconds": 120})
    target_admin = AdminClient(target.client_config())

    def on_target() -> dict[str, str]:
        found = describe_topic_configs(target_admin, [topic]) if topic in target_admin.list_topics(
            timeout=10).topics else {}
        return topic_overrides(found.get(topic, []))

    runner.start()
    try:
        deadline = time.monotonic() + 60
        while on_target().get("retention.ms") != "3600000":  # prepared with its configs as the copy starts
            assert time.monotonic() < deadline, "the target topic was not prepared"
            time.sleep(0.5)
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
        source_admin = AdminClient(source.client_config())  # held until the answer: a dropped client never answers
        for future in source_admin.incremental_alter_configs([resource]).values():
            future.result()
        changed = time.monotonic()
        while on_target().get("retention.ms") != "7200000":
            assert time.monotonic() - changed < 20, "the config change did not reach the target before a refresh"
            time.sleep(0.5)
    finally:
        flow.stop()
        runner.join(60)
    assert not runner.is_alive()


def test_run_asks_each_cluster_once(kafka_pair, unique_name, tmp_path, monkeypatch, capsys):
    """The CLI describes both clusters (they answer, and are two) and passes that on: neither the engine's clients
    nor its first target preparation ask again."""
    source, target = kafka_pair
    create_topics(source, [NewTopic(f"{unique_name}-once", 1, 1)])
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan_dict(source, target, unique_name)))
    asked: list[str] = []
    describe = clusters.describe_cluster

    def counted(alias: str, config: dict[str, str], timeout_s: float = 10.0) -> object:
        asked.append(alias)
        return describe(alias, config, timeout_s)

    monkeypatch.setattr(clusters, "describe_cluster", counted)
    assert cli.main(["run", "--plan", str(plan_file), "--until-caught-up", "--max-seconds", "60",
                     "--status-port", "-1"]) == 0, capsys.readouterr().err
    assert sorted(asked) == ["src", "tgt"]


def test_configs_changed_while_the_engine_was_down_reach_the_target_as_the_copy_starts(kafka_pair, unique_name):
    """The start reads the source configs of the topics it creates only: those of the topics the target has are
    synced by the first refresh, which starts with the copy, not one refresh interval (here 600 s) later."""
    source, target = kafka_pair
    topic = f"{unique_name}-down"
    create_topics(source, [NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])
    plan = plan_from_dict(plan_dict(source, target, unique_name, engine={"refresh_interval_s": 600,
                                                                         "status_port": -1}))
    prepared = prepare_target(plan, source.client_config(), target.client_config(), apply=True)
    assert prepared.applied is not None and not prepared.failed, prepared.failed
    target_admin = AdminClient(target.client_config())
    assert topic_overrides(describe_topic_configs(target_admin, [topic])[topic]).get("retention.ms") == "3600000"
    # Changed on the source while no engine runs.
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    source_admin = AdminClient(source.client_config())
    for future in source_admin.incremental_alter_configs([resource]).values():
        future.result()
    flow = FlowRun(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=flow.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        deadline = time.monotonic() + 60
        while topic_overrides(describe_topic_configs(target_admin, [topic])[topic]).get("retention.ms") != "7200000":
            assert time.monotonic() < deadline and runner.is_alive(), \
                "the changed config did not reach the target after the start"
            time.sleep(0.5)
    finally:
        flow.stop()
        runner.join(60)
    assert not runner.is_alive()


def test_refreshes_sync_the_configs_of_existing_topics_at_the_config_interval_only(kafka_pair, unique_name,
                                                                                   monkeypatch):
    """A refresh that syncs configs reads every topic's configs on both clusters (at 1,000 topics about 66 MiB as
    the brokers answer, 0.6 s of the engine's CPU): the refreshes between two config syncs read none, and a changed
    config still reaches the target at the next one."""
    from mirror_engine.replication.testing import target_upkeep

    source, target = kafka_pair
    topic = f"{unique_name}-every"
    create_topics(source, [NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])
    plan = plan_from_dict(plan_dict(source, target, unique_name, engine={"refresh_interval_s": 0.5, "status_port": -1},
                                    sync={"configs_interval_s": 4}))
    refreshes: list[tuple[float, bool]] = []  # each refresh's time, and whether it read the existing topics' configs
    prepare = target_upkeep.prepare_target

    def counted(*args: object, **kwargs: object) -> object:
        if not kwargs["ends_of_managed"]:  # not the start's preparation
            refreshes.append((time.monotonic(), bool(kwargs["configs_of_existing"])))
        return prepare(*args, **kwargs)

    monkeypatch.setattr(target_upkeep, "prepare_target", counted)
    flow = FlowRun(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=flow.run, kwargs={"max_seconds": 120})
    target_admin = AdminClient(target.client_config())

    def retention() -> str | None:
        found = describe_topic_configs(target_admin, [topic]) if topic in target_admin.list_topics(
            timeout=10).topics else {}
        return topic_overrides(found.get(topic, [])).get("retention.ms")

    runner.start()
    try:
        deadline = time.monotonic() + 60
        while not refreshes:
            assert time.monotonic() < deadline and runner.is_alive(), "no refresh ran"
            time.sleep(0.2)
        assert refreshes[0][1], "the first refresh did not sync the configs"
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
        source_admin = AdminClient(source.client_config())
        for future in source_admin.incremental_alter_configs([resource]).values():
            future.result()
        changed = time.monotonic()
        while retention() != "7200000":
            assert time.monotonic() - changed < 30 and runner.is_alive(), "the config change never reached the target"
            time.sleep(0.5)
        time.sleep(max(0.0, 9 - (time.monotonic() - changed)))  # two config intervals at least
    finally:
        flow.stop()
        runner.join(60)
    assert not runner.is_alive()
    # Before: every refresh (every 0.5 s here) read them. Compared in time, not in counts: on a loaded machine a
    # refresh can take longer than its interval.
    syncs = [at for at, synced in refreshes if synced]
    assert len(syncs) >= 2 and len(refreshes) - len(syncs) >= 4, refreshes
    assert min(later - earlier for earlier, later in itertools.pairwise(syncs)) >= 3.5, refreshes
