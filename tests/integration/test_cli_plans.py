"""The CLI refuses bad plans and MirrorMaker 2 files with a clear error, and creates nothing on the target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_local.cluster import free_port
from tests.integration.plans import create_topics, plan_dict

pytestmark = pytest.mark.integration


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args], capture_output=True, text=True,
                          timeout=120)


def _target_topics(target) -> set[str]:
    return set(AdminClient(target.client_config()).list_topics(timeout=10).topics)


def _bad_yaml(source, target, prefix: str) -> dict[str, tuple[dict, str]]:
    good = plan_dict(source, target, prefix)
    unreachable = plan_dict(source, target, prefix)
    unreachable["target"]["bootstrap_servers"] = f"127.0.0.1:{free_port()}"
    unreachable["target"]["client"] = {"socket.connection.setup.timeout.ms": 2000}
    return {
        "unknown key": ({**good, "sink": {}}, "sink: unknown field"),
        "bad regex": ({**good, "topics": {"include": ["(oops"]}}, "topics.include"),
        "policy loop": ({**good, "target": {**good["target"], "alias": "src"}}, "both 'src'"),
        "wrong type": ({**good, "sync": {"acls": "yes please"}}, "sync.acls"),
        "missing cluster": ({k: v for k, v in good.items() if k != "target"}, "target: Field required"),
        "unreachable target": (unreachable, "cluster 'tgt'"),
    }


def test_bad_plans_fail_with_their_field_and_create_nothing(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "orders", 2, 1)])
    before = _target_topics(target)
    for case, (data, expected) in _bad_yaml(source, target, prefix).items():
        path = tmp_path / f"{case.replace(' ', '-')}.yaml"
        path.write_text(yaml.safe_dump(data))
        result = _run("prepare", "--plan", str(path))
        assert result.returncode != 0, case
        assert expected in result.stderr, f"{case}: {result.stderr}"
    assert _target_topics(target) == before


def test_bad_mm2_file_fails_with_its_key_and_creates_nothing(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    before = _target_topics(target)
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = a, b\n"
        f"a.bootstrap.servers = {source.bootstrap}\n"
        f"b.bootstrap.servers = {target.bootstrap}\n"
        "a->b.enabled = true\n"
        "a->b.topics = (broken\n"
        "sync.topic.acls.enabled = maybe\n"
        "no.such.setting = 1\n"
    )
    result = _run("prepare", "--mm2-config", str(path))
    assert result.returncode == 2
    for key in ("a->b.topics", "sync.topic.acls.enabled", "no.such.setting"):
        assert key in result.stderr
    assert _target_topics(target) == before


def test_good_plan_dry_run_then_apply_through_the_cli(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "orders", 3, 1, config={"retention.ms": "600000"})])
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(source, target, prefix)))

    dry = _run("prepare", "--plan", str(path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "create_topic" in dry.stdout and "dry-run" in dry.stdout
    assert prefix + "orders" not in _target_topics(target)

    applied = _run("prepare", "--plan", str(path))
    assert applied.returncode == 0, applied.stderr
    assert prefix + "orders" in _target_topics(target)
    again = _run("plan", "--plan", str(path))
    assert "nothing to do" in again.stdout


def test_example_mm2_file_is_understood(monkeypatch):
    from mirror_engine.mm2 import load_mm2_config

    plan = load_mm2_config(Path(__file__).resolve().parents[2] / "migrations" / "mm2-example.properties")
    assert (plan.source.alias, plan.target.alias) == ("src", "tgt")


def _same_cluster_plan(source, prefix: str) -> dict:
    """A plan whose target is its source, spelled differently: `127.0.0.1:P` and `localhost:P`."""
    data = plan_dict(source, source, prefix)
    host, port = source.bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1", source.bootstrap
    data["target"]["bootstrap_servers"] = f"localhost:{port}"
    return data


SELF_REPLICATING_COMMANDS = {
    "plan": ["plan"],
    "prepare": ["prepare"],
    "prepare --dry-run": ["prepare", "--dry-run"],
    "run": ["run", "--max-seconds", "20"],
    "worker": ["worker", "--max-seconds", "20", "--worker-id", "w1"],
    "checkpoint": ["checkpoint", "--once"],
    "switch-group": ["switch-group", "--group", "billing", "--timeout", "20"],
    "switch-producers": ["switch-producers", "--topic", "orders", "--timeout", "20", "--idle-seconds", "1"],
    "flows stop": ["flows", "stop"],
    "status": ["status"],
}


@pytest.mark.parametrize("command", list(SELF_REPLICATING_COMMANDS))
def test_a_plan_replicating_a_cluster_onto_itself_is_refused_by_cluster_id(kafka_pair, unique_name, tmp_path,
                                                                          command):
    import time

    source, _target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "orders", 2, 1)])
    cluster_id = AdminClient(source.client_config()).list_topics(timeout=10).cluster_id
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(_same_cluster_plan(source, prefix)))
    before = _target_topics(source)

    started = time.monotonic()
    result = _run(*SELF_REPLICATING_COMMANDS[command][:1], "--plan", str(path), *SELF_REPLICATING_COMMANDS[command][1:])
    elapsed = time.monotonic() - started

    assert result.returncode != 0, result.stdout
    assert elapsed < 15, f"{command} took {elapsed:.1f} s to refuse the plan"
    for expected in ("'src'", "'tgt'", cluster_id, "same cluster"):
        assert expected in result.stderr, f"{command}: {expected!r} not in {result.stderr}"
    assert "Traceback" not in result.stderr
    assert _target_topics(source) == before


def test_one_illegal_target_name_stops_the_whole_prepare_before_anything_is_created(kafka_pair, unique_name,
                                                                                   tmp_path):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    long_name = prefix + "o" * (249 - len(prefix))  # legal on the source; `src.` makes it 253 on the target
    create_topics(source, [NewTopic(prefix + "fine", 1, 1), NewTopic(long_name, 1, 1)])
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(source, target, prefix, replication_policy={"type": "default"})))
    before = _target_topics(target)

    for command in (["plan"], ["prepare", "--dry-run"], ["prepare"]):
        result = _run(command[0], "--plan", str(path), *command[1:])
        assert result.returncode == 1, f"{command}: {result.stdout}{result.stderr}"
        assert f"its target name 'src.{long_name}' has 253 characters" in result.stderr, result.stderr
    assert _target_topics(target) == before


def test_a_target_topic_with_more_partitions_than_the_source_is_refused_unless_the_plan_allows_it(
        kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    prefix = f"{unique_name}-"
    create_topics(source, [NewTopic(prefix + "orders", 2, 1)])
    create_topics(target, [NewTopic(prefix + "orders", 5, 1)])
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(source, target, prefix)))

    refused = _run("prepare", "--plan", str(path))
    assert refused.returncode == 1, refused.stdout
    assert f"topic '{prefix}orders': has 5 partitions on the target" in refused.stderr
    assert "breaks key-to-partition placement" in refused.stderr and "nothing applied" in refused.stderr

    path.write_text(yaml.safe_dump(plan_dict(source, target, prefix, sync={"allow_more_target_partitions": True})))
    allowed = _run("plan", "--plan", str(path))
    assert allowed.returncode == 0, allowed.stderr
