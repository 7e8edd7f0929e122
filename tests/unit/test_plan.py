"""Loading migration plans: good plans parse; every bad one fails with a problem naming its field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from mirror_engine.plan import MM2_CONFIG_EXCLUDES, PlanError, load_plan, plan_from_dict

ROOT = Path(__file__).resolve().parents[2]

GOOD = {
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
}


def _with(path: str, value) -> dict:
    data = copy.deepcopy(GOOD)
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return data


def test_minimal_plan_gets_migration_defaults():
    plan = plan_from_dict(GOOD)
    assert plan.replication_policy.type == "identity"
    assert plan.sync.replication_factor == "source"
    assert plan.topics.include == [".*"]
    assert plan.policy().format_remote_topic("src", "orders") == "orders"


def test_default_excludes_apply_on_top_of_the_plans_own():
    plan = plan_from_dict(_with("topics.exclude", ["scratch-.*"]))
    assert plan.replicates_topic("orders")
    excluded = ("scratch-1", "__consumer_offsets", "x.internal", "x-internal", "x.replica",
                "mm2-offset-syncs.src.internal")
    for name in excluded:
        assert not plan.replicates_topic(name), name
    assert not plan.accepts_group("console-consumer-123")
    assert plan.accepts_group("billing")


def test_config_excludes_start_with_mirrormaker2_defaults():
    plan = plan_from_dict(_with("sync.config_exclude", ["retention\\.bytes"]))
    assert plan.config_excludes() == [*MM2_CONFIG_EXCLUDES, "retention\\.bytes"]


def test_environment_references_resolve_in_client_settings(monkeypatch):
    monkeypatch.setenv("SRC_PASSWORD", "s3cret")
    client = {"sasl.password": "${SRC_PASSWORD}", "enable.ssl.certificate.verification": False}
    plan = plan_from_dict(_with("source.client", client))
    config = plan.source.client_config()
    assert config["sasl.password"] == "s3cret"
    assert config["enable.ssl.certificate.verification"] == "false"


def test_environment_references_resolve_in_bootstrap_servers(monkeypatch):
    monkeypatch.setenv("SRC_BOOTSTRAP", "10.0.0.1:9092")
    plan = plan_from_dict(_with("source.bootstrap_servers", "${SRC_BOOTSTRAP}"))
    assert plan.source.client_config()["bootstrap.servers"] == "10.0.0.1:9092"


def test_missing_environment_variable_names_the_field(monkeypatch):
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    plan = plan_from_dict(_with("source.client", {"sasl.password": "${NOPE_NOT_SET}"}))
    with pytest.raises(PlanError, match=r"src\.client\.sasl\.password: environment variable NOPE_NOT_SET"):
        plan.source.client_config()


def test_cluster_known_only_by_airflow_connection_cannot_be_used_from_the_cli():
    data = _with("source", {"alias": "src", "conn_id": "kafka_source"})
    with pytest.raises(PlanError, match="give bootstrap_servers"):
        plan_from_dict(data).source.client_config()


@pytest.mark.parametrize("example", sorted((ROOT / "migrations").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_example_plans_load(example, monkeypatch):
    monkeypatch.setenv("MIRROR_SOURCE_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("MIRROR_TARGET_BOOTSTRAP", "127.0.0.1:2")
    assert load_plan(example).name


BAD_PLANS = [
    ("missing name", {k: v for k, v in GOOD.items() if k != "name"}, "name: Field required"),
    ("missing target", {k: v for k, v in GOOD.items() if k != "target"}, "target: Field required"),
    ("name with spaces", _with("name", "my plan"), "name: String should match pattern"),
    ("unknown top-level field", _with("topcis", {"include": ["a"]}), "topcis: unknown field"),
    ("unknown nested field", _with("sync.acl", True), "sync.acl: unknown field"),
    ("wrong type for a switch", _with("sync.configs", "sometimes"), "sync.configs: Input should be a valid boolean"),
    ("bad topic regex", _with("topics.include", ["orders("]), "topics.include: 'orders(' is not a valid"),
    ("bad group regex", _with("groups.exclude", ["[x"]), "groups.exclude: '[x' is not a valid regular expression"),
    ("backtracking topic regex", _with("topics.include", ["orders(?=-eu)"]), "topics.include: 'orders(?=-eu)'"),
    ("unsupported inline flag", _with("groups.include", ["(?x) billing"]), "groups.include: inline flag (?x)"),
    ("backtracking config exclude", _with("sync.config_exclude", ["(a)\\1"]), "sync.config_exclude: '(a)\\\\1'"),
    ("too many topic regexes", _with("topics.include", [f"t{i}" for i in range(1001)]),
     "topics.include: 1001 patterns; a list may hold at most 1000"),
    ("overlong backfill regex", _with("backfill.topics", ["a" * 2001]), "backfill.topics: 'aaaa"),
    ("unknown policy", _with("replication_policy.type", "mirror"), "replication_policy.type: Input should be"),
    ("policy loop: same alias", _with("target.alias", "src"), "source.alias and target.alias are both 'src'"),
    ("policy loop: same cluster", _with("target.bootstrap_servers", "127.0.0.1:19092"), "name the same cluster"),
    ("cluster with no address", _with("source", {"alias": "src"}), "source: give conn_id"),
    ("bad alias", _with("source.alias", "my cluster"), "source.alias: String should match pattern"),
    ("zero replication factor", _with("sync.replication_factor", 0), "sync.replication_factor"),
    ("replication factor as text", _with("sync.replication_factor", "three"), "sync.replication_factor"),
    ("principal without type", _with("sync.principal_map", {"alice": "User:alice"}), "'alice' is not a principal"),
    ("bad start position", _with("engine.start_from", "yesterday"), "engine.start_from: must be"),
    ("negative batch size", _with("engine.batch_size", -5),
     "engine.batch_size: must be a whole number of records from 1 to 100000, got -5"),
    ("unknown compression", _with("engine.compression", "brotli"), "engine.compression: Input should be"),
    ("sample fraction above one", _with("validation.sample_fraction", 1.5), "validation.sample_fraction"),
    ("bootstrap in client settings", _with("source.client", {"bootstrap.servers": "x:1"}), "bootstrap_servers"),
    ("not a mapping", ["name", "shop"], "(plan): the file must hold a mapping"),
]


@pytest.mark.parametrize(("case", "data", "expected"), BAD_PLANS, ids=[c[0] for c in BAD_PLANS])
def test_bad_plan_fails_with_a_problem_naming_its_field(case, data, expected):
    with pytest.raises(PlanError) as raised:
        plan_from_dict(data, "plan.yaml")
    problems = raised.value.problems
    assert len(problems) == 1, problems
    assert expected in problems[0]
    assert "plan.yaml" in str(raised.value)


def test_every_problem_is_listed_at_once():
    data = _with("sync.configs", "x")
    data["engine"] = {"batch_size": 0, "compression": "brotli"}
    data["typo"] = 1
    with pytest.raises(PlanError) as raised:
        plan_from_dict(data)
    fields = sorted(problem.split(":")[0] for problem in raised.value.problems)
    assert fields == ["engine.batch_size", "engine.compression", "sync.configs", "typo"]


def test_unreadable_and_invalid_yaml_files_are_plan_errors(tmp_path):
    with pytest.raises(PlanError, match="cannot read it"):
        load_plan(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(PlanError, match="not valid YAML"):
        load_plan(broken)


def test_heartbeats_topics_are_copied_only_when_the_plan_says_so():
    plan = plan_from_dict(_with("topics.include", ["orders"]))
    assert not plan.replicates_topic("heartbeats")
    copying = plan_from_dict({**_with("topics.include", ["orders"]), "engine": {"replicate_heartbeats": True}})
    assert copying.replicates_topic("heartbeats") and copying.replicates_topic("other.heartbeats")
    assert not copying.replicates_topic("tgt.heartbeats"), "a heartbeat that came from the target is a cycle"
    assert not copying.replicates_topic("customers")


def test_plans_choosing_topics_and_groups_differently_answer_for_themselves():
    # Each answer is kept per name (`RememberedAnswers`), under what the choice depends on: two plans of different
    # filters, policies or engine settings, or a plan and its copy with another setting, never share one.
    orders = plan_from_dict(_with("topics.include", ["orders.*"]))
    assert orders.replicates_topic("orders-eu") and not orders.replicates_topic("payments")
    payments = plan_from_dict(_with("topics.include", ["payments"]))
    assert payments.replicates_topic("payments") and not payments.replicates_topic("orders-eu")
    excluding = plan_from_dict(_with("topics", {"include": ["orders.*"], "exclude": ["orders-eu"]}))
    assert not excluding.replicates_topic("orders-eu") and excluding.replicates_topic("orders-us")
    heartbeats = orders.model_copy(update={"engine": orders.engine.model_copy(update={"replicate_heartbeats": True})})
    assert heartbeats.replicates_topic("heartbeats") and not orders.replicates_topic("heartbeats")
    assert orders.accepts_group("billing") and not orders.accepts_group("console-consumer-7")
    only_billing = plan_from_dict(_with("groups.include", ["billing"]))
    assert only_billing.accepts_group("billing") and not only_billing.accepts_group("shipping")
    assert orders.accepts_group("shipping")
    backfilled = plan_from_dict({**_with("topics.include", ["orders.*"]), "backfill": {"topics": ["orders-eu"]}})
    assert backfilled.backfills_topic("orders-eu") and not backfilled.backfills_topic("orders-us")
    assert not orders.backfills_topic("orders-eu")


GOOD_PRINCIPAL_MAPS = [
    {"User:alice": "User:alice-prod"},
    {"User:*": "User:*"},  # everyone stays everyone
    {"User:*": "User:mirror"},  # narrower on the target
    {"User:CN=app,OU=shop": "User:app"},  # TLS principals carry commas and equals signs
    {"Group:ops": "Group:ops-dc2"},
]


@pytest.mark.parametrize("mapping", GOOD_PRINCIPAL_MAPS, ids=[next(iter(m)) for m in GOOD_PRINCIPAL_MAPS])
def test_principal_maps_naming_one_principal_each_side_load(mapping):
    assert plan_from_dict(_with("sync.principal_map", mapping)).sync.principal_map == mapping


BAD_PRINCIPAL_MAPS = [
    ("one user to everyone", {"User:mirror": "User:*"}, "wildcard"),
    ("wildcard type", {"*:*": "User:alice"}, "type '*'"),
    ("wildcard on the target of another", {"User:alice": "*:*"}, "type '*'"),
    ("colons for a name", {"Nonsense:::": "User:alice"}, "type 'Nonsense'"),
    ("colons in the name", {"User:alice": "User:::"}, "':' in the name"),
    ("empty name", {"User:": "User:alice"}, "empty name"),
    ("empty target name", {"User:alice": "User:"}, "empty name"),
    ("empty type", {":alice": "User:alice"}, "type ''"),
    ("two principals", {"User:alice": "User:a,User:b"}, "':' in the name"),
    ("a name pattern", {"User:alice": "User:al*"}, "'*'"),
    ("blank around the name", {"User:alice": "User: alice"}, "space"),
]


@pytest.mark.parametrize(("case", "mapping", "expected"), BAD_PRINCIPAL_MAPS, ids=[c[0] for c in BAD_PRINCIPAL_MAPS])
def test_bad_principal_map_entry_is_refused_naming_the_entry(case, mapping, expected):
    with pytest.raises(PlanError) as raised:
        plan_from_dict(_with("sync.principal_map", mapping), "plan.yaml")
    problems = raised.value.problems
    assert len(problems) == 1, problems
    source, target = next(iter(mapping.items()))
    assert problems[0].startswith("sync.principal_map: "), problems[0]
    assert f"'{source}' -> '{target}'" in problems[0] and expected in problems[0], problems[0]


def test_a_principal_map_has_a_bounded_number_of_entries():
    mapping = {f"User:u{i}": f"User:v{i}" for i in range(1001)}
    with pytest.raises(PlanError, match="at most 1000"):
        plan_from_dict(_with("sync.principal_map", mapping))
