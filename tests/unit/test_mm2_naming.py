"""MirrorMaker 2's naming keys (`replication.policy.*`, `source.cluster.alias`, `target.cluster.alias`) and the
classic identity idiom; and no message of the MM2 reader is a raw validation message: each names its key and
says what to do."""

from __future__ import annotations

import re

import pytest

from mirror_engine.mm2 import CONNECTOR, SECURITY, Mm2Import, import_mm2_properties
from mirror_engine.plan import PlanError

LEGACY = """\
clusters = legacy, cloud
legacy.bootstrap.servers = legacy-1.example.internal:9092
cloud.bootstrap.servers = cloud-1.example.internal:9092
legacy->cloud.enabled = true
"""
# The idiom with clusters literally named `source` and `target`, and blanks as key/value separators.
SOURCE_TARGET = """\
clusters source, target
source.bootstrap.servers source-1.example.internal:9092
target.bootstrap.servers target-1.example.internal:9092
source->target.enabled true
source.cluster.alias
target.cluster.alias
replication.policy.separator
"""
IDIOM = "source.cluster.alias =\ntarget.cluster.alias =\nreplication.policy.separator =\n"
# What pydantic says in its own words: none of it may reach a user of an MM2 file.
RAW = re.compile(r"String should|Input should|should have (at least|at most)|should match pattern|Field required|"
                 r"Value error|validation error|type=")


def _imported(text: str, flow: str | None = None) -> Mm2Import:
    return import_mm2_properties(text, "test.properties", flow, environ={})


def _problems(text: str) -> list[str]:
    with pytest.raises(PlanError) as caught:
        _imported(text)
    return caught.value.problems


def test_the_classic_identity_idiom_keeps_topic_names_with_one_warning():
    imported = _imported(LEGACY + IDIOM)
    plan = imported.plan
    assert plan.replication_policy.type == "identity"
    assert plan.policy().format_remote_topic(plan.source.alias, "orders") == "orders"
    assert (plan.source.alias, plan.target.alias) == ("legacy", "cloud")
    assert len(imported.warnings) == 1, imported.warnings
    warning = imported.warnings[0]
    assert warning.startswith("source.cluster.alias, target.cluster.alias, replication.policy.separator: ")
    # What the engine does, and how it differs from MM2.
    assert "IdentityReplicationPolicy" in warning and "topic names are kept" in warning
    assert "checkpointsinternal" in warning and "legacy.checkpoints.internal" in warning
    assert "cloud" in warning  # the target alias MM2 would leave empty


def test_the_idiom_with_clusters_named_source_and_target_and_blank_separators():
    imported = _imported(SOURCE_TARGET)
    plan = imported.plan
    assert plan.replication_policy.type == "identity"
    assert plan.policy().format_remote_topic(plan.source.alias, "orders") == "orders"
    assert len(imported.warnings) == 1, imported.warnings
    assert imported.warnings[0].startswith("source.cluster.alias, target.cluster.alias, "
                                           "replication.policy.separator: ")
    assert "not a MirrorMaker 2 setting" not in imported.warnings[0]


@pytest.mark.parametrize("lines", [
    "source.cluster.alias =\nreplication.policy.separator =\n",  # the two-line form
    "legacy->cloud.source.cluster.alias =\nlegacy->cloud.target.cluster.alias =\nreplication.policy.separator =\n",
    "replication.policy.separator =\nsource.cluster.alias =\ntarget.cluster.alias = cloud\n",
])
def test_other_spellings_of_the_idiom(lines):
    imported = _imported(LEGACY + lines)
    assert imported.plan.replication_policy.type == "identity"
    assert len(imported.warnings) == 1, imported.warnings
    assert "topic names are kept" in imported.warnings[0]


def test_identity_policy_class_with_an_empty_separator_is_identity_with_one_warning():
    text = LEGACY + ("replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
                     "replication.policy.separator =\n")
    imported = _imported(text)
    assert imported.plan.replication_policy.type == "identity"
    assert imported.plan.replication_policy.separator == "."
    assert len(imported.warnings) == 1 and imported.warnings[0].startswith("replication.policy.separator: ")
    assert "legacycheckpointsinternal" in imported.warnings[0]


def test_an_empty_separator_that_would_glue_alias_and_topic_is_refused_with_a_sentence():
    problems = _problems(LEGACY + "replication.policy.separator =\n")
    assert len(problems) == 1 and problems[0].startswith("replication.policy.separator: "), problems
    assert "legacyorders" in problems[0] and "IdentityReplicationPolicy" in problems[0]
    assert not RAW.search(problems[0]), problems


def test_an_empty_target_alias_outside_the_idiom_is_refused_with_a_sentence():
    problems = _problems(LEGACY + "target.cluster.alias =\n")
    assert len(problems) == 1 and problems[0].startswith("target.cluster.alias: "), problems
    assert "remove it" in problems[0]


@pytest.mark.parametrize("separator", ["-----", "a b", "/", "\u00e9"])
def test_a_separator_the_engine_cannot_use_is_refused_with_a_sentence(separator):
    problems = _problems(LEGACY + f"replication.policy.separator = {separator}\n")
    assert len(problems) == 1 and problems[0].startswith("replication.policy.separator: "), problems
    assert not RAW.search(problems[0]), problems
    assert "set it to" in problems[0] or "use" in problems[0]


@pytest.mark.parametrize("aliases", ["us.east, us.west", "_a, b", "a" * 70 + ", b", "\u00e9t\u00e9, b"])
def test_a_cluster_alias_the_engine_cannot_use_is_refused_with_a_sentence(aliases):
    first, second = [alias.strip() for alias in aliases.split(",")]
    text = (f"clusters = {aliases}\n{first}.bootstrap.servers = a.example.internal:9092\n"
            f"{second}.bootstrap.servers = b.example.internal:9092\n{first}->{second}.enabled = true\n")
    problems = _problems(text)
    assert problems and all(line.startswith("clusters: ") for line in problems), problems
    assert not [line for line in problems if RAW.search(line)], problems
    assert "rename" in problems[0]


def test_one_cluster_on_both_sides_is_refused_naming_both_keys():
    text = LEGACY.replace("cloud-1.example.internal", "legacy-1.example.internal")
    problems = _problems(text)
    assert len(problems) == 1, problems
    assert problems[0].startswith("legacy.bootstrap.servers, cloud.bootstrap.servers: "), problems


# Values that MM2 takes as text for every mapped connector key (it parses them only by type), and for the
# clusters' own keys: what each yields must be a plan, or problems and warnings that name a key of the file.
ODD_VALUES = ["", " ", "-1", "0", "1e3", "x" * 300, "a b", ".", "${env:NOPE}", "\u00e9", "-", "*"]
MAPPED = sorted(name for name, spec in CONNECTOR.items() if spec.mapped)


@pytest.mark.parametrize("key", [*MAPPED, *(f"legacy.{name}" for name in SECURITY if SECURITY[name].mapped),
                                 "legacy.bootstrap.servers", "cloud.client.id", "clusters", "legacy->cloud.enabled"])
def test_no_message_of_the_reader_is_a_raw_validation_message(key):
    seen = []
    for value in ODD_VALUES:
        lines = [line for line in LEGACY.splitlines() if not line.startswith(f"{key} ")]
        text = "\n".join([*lines, f"{key} = {value}"]) + "\n"
        try:
            messages = list(_imported(text).warnings)
        except PlanError as error:
            messages = list(error.problems) + list(getattr(error, "warnings", ()))
        for message in messages:
            seen.append(message)
            assert not RAW.search(message), (key, value, message)
            head = message.split(": ", 1)[0]
            named = [part.strip() for part in head.split(",")]
            assert all(part in text or part in ("clusters", "<source>-><target>.enabled") for part in named), \
                (key, value, message)
    assert seen is not None
