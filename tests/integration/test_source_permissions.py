"""A source principal that may only READ and DESCRIBE topics and groups: what `plan`, `prepare` and `run` make of it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mirror_engine.kafka import Acl, read_acls
from mirror_engine.plan import plan_from_dict
from mirror_engine.prepare import plan_preparation
from tests.integration.kafka_data import produce, read_partition
from tests.integration.plans import cluster_section, create_topics, plan_dict

pytestmark = pytest.mark.integration

READER = "reader"
BASE_TS = int(time.time() * 1000) - 600_000


@pytest.fixture(scope="module")
def read_only_source(secured_pair) -> str:
    """Topics `<p>orders` (compacted, 2 partitions) and `<p>payments` with records, and ACLs giving `reader` READ and
    DESCRIBE on the topics and groups named `<p>...`, nothing else. Returns the prefix."""
    import uuid

    source, _target = secured_pair
    p = f"ro-{uuid.uuid4().hex[:8]}-"
    create_topics(source, [NewTopic(f"{p}orders", 2, 1, config={"cleanup.policy": "compact"}),
                           NewTopic(f"{p}payments", 1, 1)])
    produce(source, f"{p}orders", [(i % 2, f"k{i}".encode(), f"o{i}".encode(), [], BASE_TS + i) for i in range(40)])
    produce(source, f"{p}payments", [(0, f"k{i}".encode(), f"p{i}".encode(), [], BASE_TS + i) for i in range(20)])
    admin = AdminClient(source.client_config())
    bindings = [
        AclBinding(resource, p, ResourcePatternType.PREFIXED, f"User:{READER}", "*", operation,
                   AclPermissionType.ALLOW)
        for resource in (ResourceType.TOPIC, ResourceType.GROUP)
        for operation in (AclOperation.READ, AclOperation.DESCRIBE)
    ]
    for future in admin.create_acls(bindings, request_timeout=15).values():
        future.result()
    wanted = {Acl.from_binding(binding) for binding in bindings}
    deadline = time.monotonic() + 15
    while not wanted <= (read_acls(admin) or frozenset()):
        assert time.monotonic() < deadline, "the reader's ACLs did not appear"
        time.sleep(0.2)
    time.sleep(1)  # the broker's authorizer applies them from the metadata log a moment later
    return p


def _plan_file(secured_pair, p: str, tmp_path: Path, **sync: Any) -> str:
    source, target = secured_pair
    data = plan_dict(source, target, p, cutover={"groups": [f"{p}billing", f"other-{p}"]})
    data["source"] = cluster_section("src", source, READER)
    data["sync"] = sync
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args], capture_output=True, text=True,
                          timeout=180)


def _no_bare_error(result: subprocess.CompletedProcess[str]) -> None:
    output = result.stdout + result.stderr
    for bare in ("AUTHORIZATION_FAILED", "authorization failed", "Traceback"):
        assert bare not in output, output


def _target_view(target) -> tuple[set[str], frozenset | None]:
    admin = AdminClient(target.client_config())
    return set(admin.list_topics(timeout=10).topics), read_acls(admin)


def test_plan_names_each_missing_operation_and_resource_and_succeeds(secured_pair, read_only_source, tmp_path):
    p = read_only_source
    result = _cli("plan", "--plan", _plan_file(secured_pair, p, tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    _no_bare_error(result)
    assert ("source permissions: data copy allowed, config sync not allowed for 2 topics, ACL sync not allowed, "
            "group offset sync not allowed for 1 group") in result.stdout
    for sentence in (
        f"warning: config sync skipped: the source principal lacks DESCRIBE_CONFIGS on topics {p}orders, {p}payments",
        "warning: ACL sync skipped: the source principal lacks DESCRIBE on the cluster",
        f"warning: group offset sync skipped: the source principal lacks DESCRIBE on group other-{p} ",
    ):
        assert sentence in result.stderr, result.stderr


def test_required_source_permissions_refuse_plan_and_prepare_and_change_nothing(secured_pair, read_only_source,
                                                                                 tmp_path):
    p = read_only_source
    _source, target = secured_pair
    path = _plan_file(secured_pair, p, tmp_path, require_source_permissions=True)
    before = _target_view(target)

    for command in ("plan", "prepare"):
        result = _cli(command, "--plan", path)
        assert result.returncode == 1, f"{command}: {result.stdout}{result.stderr}"
        _no_bare_error(result)
        for sentence in (
            f"config sync refused: the source principal lacks DESCRIBE_CONFIGS on topics {p}orders, {p}payments and "
            "sync.require_source_permissions is true",
            "ACL sync refused: the source principal lacks DESCRIBE on the cluster",
            f"group offset sync refused: the source principal lacks DESCRIBE on group other-{p} ",
        ):
            assert f"problem: {path}: {sentence}" in result.stderr, f"{command}: {result.stderr}"
    assert _target_view(target) == before
    # The engine refuses to start on the same grounds.
    result = _cli("run", "--plan", path, "--until-caught-up", "--max-seconds", "60")
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert "config sync refused: the source principal lacks DESCRIBE_CONFIGS" in result.stderr, result.stderr[-3000:]


def test_prepare_creates_the_topics_and_says_which_syncs_it_skipped(secured_pair, read_only_source, tmp_path):
    p = read_only_source
    _source, target = secured_pair

    result = _cli("prepare", "--plan", _plan_file(secured_pair, p, tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    _no_bare_error(result)
    assert f"config sync skipped: the source principal lacks DESCRIBE_CONFIGS on topics {p}orders, {p}payments" \
        in result.stderr
    assert "ACL sync skipped: the source principal lacks DESCRIBE on the cluster" in result.stderr
    admin = AdminClient(target.client_config())
    metadata = admin.list_topics(timeout=10).topics
    assert len(metadata[f"{p}orders"].partitions) == 2
    assert len(metadata[f"{p}payments"].partitions) == 1
    # Skipped means skipped: the source's compaction was not readable, so the target keeps its default.
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, f"{p}orders")], request_timeout=15)
    assert next(iter(configs.values())).result()["cleanup.policy"].value == "delete"


def test_unread_source_configs_leave_the_target_topic_configs_alone(secured_pair, read_only_source):
    p = read_only_source
    source, target = secured_pair
    topic = f"{p}keep"
    create_topics(source, [NewTopic(topic, 1, 1)])
    create_topics(target, [NewTopic(topic, 1, 1, config={"retention.ms": "3600000"})])
    data = plan_dict(source, target, topic)
    data["source"] = cluster_section("src", source, READER)

    prepared = plan_preparation(plan_from_dict(data), source.client_config(READER), target.client_config())

    assert not prepared.problems, prepared.problems
    # Configs it could not read are not "no configs": the target's retention.ms is not deleted.
    assert [a.kind for a in prepared.actions if a.resource == topic] == [], prepared.actions
    assert f"config sync skipped: the source principal lacks DESCRIBE_CONFIGS on topic {topic} " \
        in prepared.warnings[0]


def test_engine_run_copies_every_record_with_the_read_only_principal(secured_pair, read_only_source, tmp_path):
    p = read_only_source
    source, target = secured_pair

    result = _cli("run", "--plan", _plan_file(secured_pair, p, tmp_path), "--until-caught-up", "--max-seconds", "120")

    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    for topic, partitions in ((f"{p}orders", 2), (f"{p}payments", 1)):
        for partition in range(partitions):
            expected = [r.content() for r in read_partition(source, topic, partition)]
            assert expected
            assert [r.content() for r in read_partition(target, topic, partition)] == expected, f"{topic}[{partition}]"
