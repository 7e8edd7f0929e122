"""ACL sync on the secured pair: translated through the policy and the principal map, enforced on the target."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mirror_engine.kafka import Acl, desired_target_acls, read_acls
from mirror_engine.plan import plan_from_dict
from mirror_engine.prepare import apply_actions, plan_preparation
from tests.integration.plans import create_topics, make_plan, plan_dict

pytestmark = pytest.mark.integration

LIT, PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def _binding(restype, name, pattern, principal, operation, permission=ALLOW) -> AclBinding:
    return AclBinding(restype, name, pattern, principal, "*", operation, permission)


def _source_acls(p: str) -> list[AclBinding]:
    T, G = ResourceType.TOPIC, ResourceType.GROUP
    return [
        _binding(T, f"{p}orders", LIT, "User:alice", AclOperation.WRITE),
        _binding(T, f"{p}orders", LIT, "User:alice", AclOperation.DESCRIBE),
        _binding(T, f"{p}pay", PRE, "User:alice", AclOperation.READ),
        _binding(G, f"{p}alice-", PRE, "User:alice", AclOperation.READ),
        _binding(T, p, PRE, "User:bob", AclOperation.READ),
        _binding(T, f"{p}payments", LIT, "User:bob", AclOperation.READ, DENY),
        _binding(G, f"{p}bob-group", LIT, "User:bob", AclOperation.READ),
        # A topic outside the plan: its ACL stays behind.
        _binding(T, f"{p}-excluded", LIT, "User:bob", AclOperation.READ),
        # The cluster resource (an idempotent producer's right in older clusters).
        _binding(ResourceType.BROKER, "kafka-cluster", LIT, f"User:{p}svc", AclOperation.IDEMPOTENT_WRITE),
    ]


@pytest.fixture
def acl_source(secured_pair, unique_name):
    source, _ = secured_pair
    p = f"{unique_name}."
    admin = AdminClient(source.client_config())
    create_topics(source, [NewTopic(f"{p}orders", 1, 1), NewTopic(f"{p}payments", 1, 1)])
    for future in admin.create_acls(_source_acls(p)).values():
        future.result()
    # describe_acls answers from the broker's authorizer, which applies new ACLs a moment later.
    assert _eventually(lambda: len(_mine(read_acls(admin), p)) == len(_source_acls(p)))
    return p


def _mine(acls: frozenset[Acl] | None, needle: str) -> set[Acl]:
    return {acl for acl in acls or () if needle in acl.name or needle in acl.principal}


def _prepare(plan, source, target) -> None:
    prepared = plan_preparation(plan, source.client_config(), target.client_config())
    assert prepared.problems == []
    result = apply_actions(target.client_config(), prepared.actions)
    assert result.ok, result.to_dict()


def test_acls_are_created_on_the_target_under_the_identity_policy(secured_pair, acl_source):
    source, target = secured_pair
    p = acl_source
    plan = make_plan(source, target, f"{p}(orders|payments)")
    _prepare(plan, source, target)

    target_acls = _mine(read_acls(AdminClient(target.client_config())), p)
    expected = {Acl.from_binding(b) for b in _source_acls(p) if not b.name.endswith("-excluded")}
    assert target_acls == expected
    again = plan_preparation(plan, source.client_config(), target.client_config())
    assert [a for a in again.actions if a.kind == "create_acl"] == []


def test_acls_are_translated_under_the_default_policy_and_principal_map(secured_pair, acl_source):
    source, target = secured_pair
    p = acl_source
    plan = make_plan(source, target, f"{p}(orders|payments)", replication_policy={"type": "default"},
                     sync={"principal_map": {"User:alice": "User:mirror"}})
    _prepare(plan, source, target)

    target_acls = _mine(read_acls(AdminClient(target.client_config())), p)
    assert Acl("TOPIC", f"src.{p}orders", "LITERAL", "User:mirror", "*", "WRITE", "ALLOW") in target_acls
    assert Acl("TOPIC", f"src.{p}pay", "PREFIXED", "User:mirror", "*", "READ", "ALLOW") in target_acls
    assert Acl("TOPIC", f"src.{p}", "PREFIXED", "User:bob", "*", "READ", "ALLOW") in target_acls
    assert Acl("TOPIC", f"src.{p}payments", "LITERAL", "User:bob", "*", "READ", "DENY") in target_acls
    # Groups keep their names; principals are mapped everywhere.
    assert Acl("GROUP", f"{p}alice-", "PREFIXED", "User:mirror", "*", "READ", "ALLOW") in target_acls
    assert not [acl for acl in target_acls if acl.principal == "User:alice" and acl.name.startswith("src.")]


def _can_produce(config: dict, topic: str) -> bool:
    errors: list = []
    producer = Producer({**config, "message.timeout.ms": 5000})
    producer.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(10)
    # Not `errors == [None]`: KafkaError's == treats its operand as an error code and fails on None.
    return len(errors) == 1 and errors[0] is None


def _can_read(config: dict, topic: str) -> bool:
    """Whether the principal gets the topic's first record (each topic holds one)."""
    consumer = Consumer({**config, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                return True
            if message.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                return False
            # Other errors (the unused group's coordinator lookup is denied) say nothing of reading.
        return False
    finally:
        consumer.close()


def _can_commit(config: dict, group: str, topic: str) -> bool:
    """Whether the principal may commit offsets for the group (group READ, as a consumer's commit needs)."""
    admin = AdminClient(config)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])
    try:
        admin.alter_consumer_group_offsets([request])[group].result()
        return True
    except KafkaException as error:
        if error.args[0].code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED):
            return False
        raise


def _eventually(check, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def test_principals_have_the_same_rights_on_the_target_and_no_others(secured_pair, acl_source):
    source, target = secured_pair
    p = acl_source
    plan = make_plan(source, target, f"{p}(orders|payments)")
    _prepare(plan, source, target)
    for cluster in (source, target):
        producer = Producer(cluster.client_config())
        for topic in (f"{p}orders", f"{p}payments"):
            producer.produce(topic, b"first record")
        assert producer.flush(10) == 0

    def rights(cluster) -> dict[str, bool]:
        alice, bob = cluster.client_config("alice"), cluster.client_config("bob")
        return {
            "alice writes orders": _can_produce(alice, f"{p}orders"),
            "alice writes payments": _can_produce(alice, f"{p}payments"),
            "alice reads payments": _can_read(alice, f"{p}payments"),
            "alice reads orders": _can_read(alice, f"{p}orders"),
            "bob reads orders": _can_read(bob, f"{p}orders"),
            "bob reads payments (denied)": _can_read(bob, f"{p}payments"),
            "bob writes orders": _can_produce(bob, f"{p}orders"),
            "bob commits in his group": _can_commit(bob, f"{p}bob-group", f"{p}orders"),
            "bob commits in another group": _can_commit(bob, f"{p}other-group", f"{p}orders"),
        }

    on_source = rights(source)
    assert on_source == {
        "alice writes orders": True, "alice writes payments": False, "alice reads payments": True,
        "alice reads orders": False, "bob reads orders": True, "bob reads payments (denied)": False,
        "bob writes orders": False, "bob commits in his group": True, "bob commits in another group": False,
    }
    # ACLs reach the target broker's authorizer shortly after creation.
    assert _eventually(lambda: _can_produce(target.client_config("alice"), f"{p}orders"))
    assert rights(target) == on_source


def test_acl_sync_is_skipped_loudly_when_the_source_principal_may_not_describe_acls(secured_pair, acl_source):
    source, target = secured_pair
    p = acl_source
    plan = make_plan(source, target, f"{p}(orders|payments)")
    # alice has topic ACLs only: the broker answers her DescribeAcls with an empty list, not an error.
    lack = "the source principal lacks DESCRIBE on the cluster"
    for best_effort in (True, False):  # the engine's refresh, and plan/prepare
        prepared = plan_preparation(plan, source.client_config("alice"), target.client_config(), best_effort)
        assert f"ACL sync skipped: {lack} (no ACL is created on the target)" in prepared.warnings, prepared.warnings
        assert not any(a.kind == "create_acl" for a in prepared.actions)
    strict = make_plan(source, target, f"{p}(orders|payments)", sync={"require_source_permissions": True})
    prepared = plan_preparation(strict, source.client_config("alice"), target.client_config(), best_effort=True)
    assert any(problem.startswith(f"ACL sync refused: {lack}") for problem in prepared.problems), prepared.problems


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args], capture_output=True, text=True,
                          timeout=120)


WIDENING_MAPS = {
    "one principal to every user": {"User:mirror": "User:*"},
    "a principal's rights to everyone": {"User:alice": "User:*"},
    "wildcard type": {"*:*": "User:alice"},
    "nonsense": {"User:alice": "Nonsense:::"},
    "empty name": {"User:alice": "User:"},
}


@pytest.mark.parametrize("case", list(WIDENING_MAPS))
def test_a_principal_map_that_widens_access_is_refused_at_load_and_nothing_is_created(secured_pair, acl_source,
                                                                                       tmp_path, case):
    source, target = secured_pair
    p = acl_source
    mapping = WIDENING_MAPS[case]
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(source, target, f"{p}(orders|payments)",
                                             sync={"principal_map": mapping})))
    target_admin = AdminClient(target.client_config())
    acls_before = read_acls(target_admin)
    topics_before = set(target_admin.list_topics(timeout=10).topics)

    for command in (["plan"], ["prepare", "--dry-run"], ["prepare"]):
        result = _cli(command[0], "--plan", str(path), *command[1:])
        assert result.returncode == 2, f"{command}: {result.stdout}{result.stderr}"
        (source_principal, target_principal), = mapping.items()
        assert f"sync.principal_map: entry '{source_principal}' -> '{target_principal}'" in result.stderr, \
            result.stderr
        assert "Traceback" not in result.stderr
    assert read_acls(target_admin) == acls_before
    assert set(target_admin.list_topics(timeout=10).topics) == topics_before


def test_prepare_and_its_dry_run_print_the_exact_acls_they_create(secured_pair, acl_source, tmp_path):
    source, target = secured_pair
    p = acl_source
    data = plan_dict(source, target, f"{p}(orders|payments)", sync={"principal_map": {"User:alice": "User:mirror"}})
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    expected = desired_target_acls(frozenset(_mine(read_acls(AdminClient(source.client_config())), p)),
                                   plan_from_dict(data))
    assert Acl("TOPIC", f"{p}orders", "LITERAL", "User:mirror", "*", "WRITE", "ALLOW") in expected

    dry = _cli("prepare", "--plan", str(path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    for acl in expected:
        assert f"  {acl.describe()}\n" in dry.stdout, f"{acl.describe()} not in:\n{dry.stdout}"
    assert _mine(read_acls(AdminClient(target.client_config())), p) == set()

    applied = _cli("prepare", "--plan", str(path))
    assert applied.returncode == 0, applied.stderr
    for acl in expected:
        assert f"  {acl.describe()}\n" in applied.stdout, f"{acl.describe()} not in:\n{applied.stdout}"
    assert _eventually(lambda: _mine(read_acls(AdminClient(target.client_config())), p) == set(expected))
