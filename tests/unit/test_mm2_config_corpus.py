"""The MM2 corpus (`mm2_corpus/`): files MirrorMaker 2 4.x runs, each with the outcome this reader must give.

Each row names a file, optionally a flow and an environment, and either the plan fields it must yield and
the keys it must warn about (in file order), or the keys its errors start with. The test runs in the corpus
directory, so config provider paths are relative to it, as Java's are to the working directory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.security import private_dir

CORPUS = Path(__file__).resolve().parent / "mm2_corpus"
# Secrets the corpus holds or the environment gives: no message may show them.
SECRETS = ("corpus-file-secret", "corpus-dir-secret", "corpus-env-secret", "mirror-secret", "oauth-secret",
           "r-pass", "w-pass", "pem-key-secret", "changeit", "corpus-key-secret")
ENVIRONMENT = {"MM2_A_SERVERS": "a1.example.internal:9092", "MM2_B_PASSWORD": "corpus-env-secret",
               "MM2_TOPICS": "orders, payments", "MM2_PASSWORD": "corpus-env-secret", "OTHER": "x"}


@dataclass(frozen=True)
class Case:
    file: str
    # dotted plan path -> expected value, or a predicate the value must satisfy
    plan: dict[str, Any | Callable[[Any], bool]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # keys warned about, in order
    errors: tuple[str, ...] = ()  # keys the problems start with, in order (a refused file)
    flow: str | None = None


def _converted(value: Any) -> bool:
    """A PEM file converted from a Java store: in this process's private directory, readable by its owner only."""
    path = Path(value)
    return path.parent == private_dir() and path.stat().st_mode & 0o777 == 0o600 and b"-----BEGIN" in path.read_bytes()


def _remote(plan: MigrationPlan, topic: str) -> str:
    return plan.policy().format_remote_topic(plan.source.alias, topic)


CASES = [
    Case("01-minimal.properties", {"name": "a-to-b", "replication_policy.type": "default",
                                   "remote:orders": "a.orders", "sync.replication_factor": 2,
                                   "target.bootstrap_servers": "b1.example.internal:9092"}),
    Case("02-identity-migration.properties", {
        "name": "old-to-new", "remote:orders": "orders", "topics.include": ["orders.*", "payments"],
        "groups.include": ["billing-.*"], "sync.replication_factor": 3, "cutover.sync_group_offsets": True,
        "cutover.checkpoint_interval_s": 10,
        "source.bootstrap_servers": "old-1.example.internal:9092,old-2.example.internal:9092"}),
    # Several enabled flows: one plan asks for one (`import_mm2_flows` gives them all: test_mm2_flow_set.py).
    Case("03-active-active.properties", errors=("A->B.enabled, B->A.enabled",)),
    Case("03-active-active.properties", {"name": "B-to-A", "source.alias": "B", "remote:t": "B.t",
                                         "sync.replication_factor": 1}, flow="B->A"),
    Case("04-active-passive-no-heartbeats.properties", {"engine.replicate_heartbeats": False, "sync.acls": False}),
    Case("05-sasl-scram-ssl.properties", {
        "source.client": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                          "sasl.username": "mirror", "sasl.password": "${MM2_PASSWORD}",
                          "ssl.ca.location": "/etc/kafka/ca.pem"},
        "target.client.sasl.password": "${MM2_PASSWORD}"}, warnings=("sasl.jaas.config",)),
    Case("06-sasl-plain-per-cluster.properties", {
        "source.client.sasl.password": "r-pass", "target.client.sasl.username": "writer",
        "target.client.sasl.password": "w-pass", "source.bootstrap_servers": "src.example.internal:9094"}),
    Case("07-ssl-pem-keystore.properties", {
        "source.client.ssl.key.location": "/etc/kafka/a-client.pem",
        "source.client.unsafe.skip.hostname.verification": "true",
        "source.client.ssl.key.password": "pem-key-secret",
        "target.client.ssl.ca.location": "/etc/kafka/b-ca.pem"}),
    Case("08-jks-truststore.properties", {"source.client.security.protocol": "SSL",
                                          "source.client.ssl.ca.location": _converted,
                                          "target.client.ssl.ca.location": _converted}),
    Case("09-config-provider-file.properties", {
        "source.bootstrap_servers": "a1.example.internal:9092,a2.example.internal:9092",
        "source.client.sasl.username": "mirror", "source.client.sasl.password": "corpus-file-secret"}),
    Case("10-config-provider-directory.properties", {
        "target.client.sasl.username": "dir-user", "target.client.sasl.password": "corpus-dir-secret"}),
    Case("11-config-provider-env.properties", {
        "source.bootstrap_servers": "${MM2_A_SERVERS}", "target.client.sasl.password": "${MM2_B_PASSWORD}",
        "topics.include": ["orders", "payments"]}),
    Case("12-config-provider-missing-key.properties", errors=("b.sasl.jaas.config",)),
    Case("13-config-provider-undeclared.properties", errors=("b.ssl.key.password",)),
    Case("14-latin1-bytes.properties", {"name": "montreal-to-quebec",
                                        "topics.include": ["commandes-\u00e9t\u00e9", "factures-\u00e9t\u00e9"],
                                        "groups.include": ["\u00e9quipe-.*"]}),
    Case("15-continuations.properties", {
        "source.bootstrap_servers": "e1.example.internal:9092,e2.example.internal:9092,e3.example.internal:9092",
        "topics.include": ["orders", "payments", "customers"], "topics.exclude": [".*\\\\"],
        "groups.include": ["billing"]}),
    Case("16-separators.properties", {"source.bootstrap_servers": "a.example.internal:9092",
                                      "target.bootstrap_servers": "b.example.internal:9092",
                                      "topics.include": ["orders # a hash after a value is part of the value"],
                                      "sync.replication_factor": 1, "sync.configs": False}),
    Case("17-empty-separator-empty-source-alias.properties", {"replication_policy.type": "identity",
                                                              "remote:orders": "orders", "source.alias": "legacy"},
         warnings=("source.cluster.alias, replication.policy.separator",)),
    Case("18-unknown-keys.properties", {"name": "a-to-b"}, warnings=("owner.team", "a.rack.label", "a->b.ticket")),
    Case("19-near-miss-typos.properties", {"sync.acls": True, "topics.include": [".*"]},
         warnings=("max.tasks", "sync.topic.acl.enabled", "a->b.topic", "b.ssl.truststore.locaton")),
    Case("20-connect-worker-keys.properties", {"name": "a-to-b"}, warnings=("b.session.timeout.ms",)),
    Case("21-rest-keys.properties", {"name": "a-to-b"}),
    Case("22-converters-bytes.properties", {"name": "a-to-b"}),
    Case("23-json-converter.properties", errors=("value.converter",)),
    Case("24-custom-replication-policy.properties", errors=("replication.policy.class",)),
    Case("25-flow-unknown-alias.properties", errors=("a->c.enabled",)),
    Case("26-no-enabled-flow.properties", errors=("<source>-><target>.enabled",)),
    Case("27-wrong-types.properties", errors=("replication.factor", "b.offset.flush.timeout.ms",
                                              "sync.topic.configs.enabled")),
    Case("28-client-settings-under-cluster.properties", {"name": "a-to-b"},
         warnings=("a.max.poll.records", "b.compression.type")),
    Case("29-malformed-jaas.properties", errors=("b.sasl.jaas.config",)),
    Case("30-hub-three-clusters.properties", errors=("east->central.enabled, west->central.enabled",)),
    Case("30-hub-three-clusters.properties", {"name": "west-to-central", "topics.include": ["orders-west"]},
         flow="west->central"),
    Case("31-exactly-once.properties", {"engine.exactly_once": True}),
    Case("32-legacy-blacklist.properties", {"topics.exclude": ["scratch-.*", ".*\\.tmp"],
                                            "groups.exclude": ["test-.*"]}),
    Case("33-top-level-client-prefixes.properties", {"name": "a-to-b"},
         warnings=("producer.compression.type", "consumer.max.poll.records")),
    Case("34-custom-separator.properties", {"remote:orders": "a_orders", "replication_policy.separator": "_",
                                            "replication_policy.internal_separator_enabled": False}),
    Case("35-oauthbearer.properties", {"target.client": {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.internal/token",
        "sasl.oauthbearer.client.id": "mm2", "sasl.oauthbearer.client.secret": "oauth-secret"}}),
    Case("36-source-alias-renamed.properties", errors=("a->b.source.cluster.alias",)),
    Case("37-bang-comments-and-escaped-keys.properties", {"source.bootstrap_servers": "a.example.internal:9092",
                                                         "groups.include": ["team-alpha"]}),
    Case("38-mixed-everything.properties", {
        "name": "onprem-to-cloud", "remote:orders": "orders", "target.client.sasl.password": "corpus-file-secret",
        "sync.replication_factor": 3, "cutover.sync_group_offsets": True},
         warnings=("emit.checkpoint.interval.seconds",)),
    Case("39-jks-keystore-pkcs12-truststore.properties", {
        "source.client.ssl.key.location": _converted, "source.client.ssl.certificate.location": _converted,
        "source.client.ssl.key.password": "corpus-key-secret", "source.client.ssl.ca.location": _converted,
        "target.client.ssl.keystore.location": "secrets/tls/client.keystore.p12",
        "target.client.ssl.keystore.password": "changeit", "target.client.ssl.ca.location": _converted}),
    Case("40-jks-key-password-missing.properties", errors=("a.ssl.keystore.location",)),
    Case("41-identity-idiom-three-empty-keys.properties", {
        "replication_policy.type": "identity", "remote:orders": "orders", "source.alias": "primary",
        "target.alias": "backup", "sync.replication_factor": 3, "cutover.sync_group_offsets": True},
         warnings=("source.cluster.alias, target.cluster.alias, replication.policy.separator",)),
    Case("42-identity-idiom-clusters-source-target.properties", {
        "replication_policy.type": "identity", "remote:orders": "orders", "source.alias": "source",
        "target.alias": "target", "topics.include": ["orders.*", "payments.*"], "sync.acls": False},
         warnings=("source.cluster.alias, target.cluster.alias, replication.policy.separator",)),
    Case("43-identity-idiom-flow-scoped.properties", {"replication_policy.type": "identity",
                                                      "remote:inventory": "inventory"},
         warnings=("east->west.source.cluster.alias, east->west.target.cluster.alias, "
                   "east->west.replication.policy.separator",)),
    Case("44-identity-class-empty-separator.properties", {"replication_policy.type": "identity",
                                                          "remote:orders": "orders"},
         warnings=("replication.policy.separator",)),
    Case("45-empty-separator-default-policy.properties", errors=("replication.policy.separator",)),
]


def _field(plan: MigrationPlan, path: str) -> Any:
    if path.startswith("remote:"):
        return _remote(plan, path.removeprefix("remote:"))
    node: Any = plan
    parts = path.split(".")
    while parts:
        part = parts.pop(0)
        if isinstance(node, dict):  # client settings: the rest of the path is one librdkafka name
            return node[".".join([part, *parts])]
        node = getattr(node, part)
    return node


def test_the_corpus_is_large_enough_and_every_file_has_an_expectation():
    files = {path.name for path in CORPUS.glob("*.properties")}
    assert len(files) >= 30
    assert files == {case.file for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.file}{'@' + case.flow if case.flow else ''}")
def test_corpus_file(case: Case, monkeypatch):
    monkeypatch.chdir(CORPUS)
    content = (CORPUS / case.file).read_bytes()
    if case.errors:
        with pytest.raises(PlanError) as caught:
            import_mm2_properties(content, case.file, case.flow, environ=ENVIRONMENT)
        problems = caught.value.problems
        assert [line.split(": ", 1)[0] for line in problems] == list(case.errors), problems
        assert not [line for line in problems for secret in SECRETS if secret in line]
        return
    imported = import_mm2_properties(content, case.file, case.flow, environ=ENVIRONMENT)
    for path, expected in case.plan.items():
        value = _field(imported.plan, path)
        assert expected(value) if callable(expected) else value == expected, (path, value)
    assert [line.split(": ", 1)[0] for line in imported.warnings] == list(case.warnings), imported.warnings
    assert not [line for line in imported.warnings for secret in SECRETS if secret in line]
