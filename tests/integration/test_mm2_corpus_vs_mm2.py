"""Real MirrorMaker 2 (4.3.1, from the harness's jars) referees the MM2 corpus (`tests/unit/mm2_corpus/`).

For each file: does MM2 accept it (`kafka_local.mm2_config_check`: MM2's own configuration checks, run in one
JVM), and does the engine (`import_mm2_properties`; a file with several enabled flows is accepted when each of
MM2's flows is, chosen with `flow`)? The engine may refuse less than MM2 never: a file the engine accepts
must be one MM2 accepts, and a file MM2 accepts that the engine refuses must be a deliberate difference below.
"""

from __future__ import annotations

import os

import pytest

from kafka_local.mm2_config_check import Mm2Verdict, check_mm2_files
from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.plan import PlanError
from tests.unit.test_mm2_config_corpus import CORPUS, ENVIRONMENT

pytestmark = pytest.mark.integration

# Files MM2 runs that the engine refuses on purpose, and why.
DELIBERATE = {
    # MM2 leaves a reference its provider cannot resolve as literal text: the SASL password would be the
    # string "${file:...:pasword}" and the login fails later. The engine refuses the reference at load.
    "12-config-provider-missing-key.properties": "an unresolvable config provider reference",
    # Same for a provider the file never declares (`${vault:...}` without config.providers = vault).
    "13-config-provider-undeclared.properties": "a reference to an undeclared config provider",
    # MM2 would convert every record through JSON; the engine copies bytes unchanged.
    "23-json-converter.properties": "a converter other than ByteArrayConverter",
    # MM2 ignores `a->c.*` when `c` is not in `clusters`; to the engine it is a typo that hides a flow.
    "25-flow-unknown-alias.properties": "a flow naming a cluster not in clusters",
    # With no flow enabled MM2 still runs, emitting heartbeats only; the engine has nothing to copy.
    "26-no-enabled-flow.properties": "no enabled flow",
    # MM2 would name remote topics after `source.cluster.alias`; the engine names them after the flow's source.
    "36-source-alias-renamed.properties": "source.cluster.alias renamed",
    # MM2 would glue the source alias to each topic name ("aorders"); the engine asks for a separator, or for
    # identity naming.
    "45-empty-separator-default-policy.properties": "an empty separator under DefaultReplicationPolicy",
}


def _engine_accepts(name: str, verdict: Mm2Verdict) -> tuple[bool, str]:
    content = (CORPUS / name).read_bytes()
    flows: list[str | None] = list(verdict.flows) if len(verdict.flows) > 1 else [None]
    for flow in flows:
        try:
            import_mm2_properties(content, name, flow, environ=ENVIRONMENT)
        except PlanError as error:
            return False, error.problems[0]
    return True, ""


def test_every_file_the_engine_accepts_mm2_accepts_and_every_other_difference_is_deliberate(monkeypatch):
    files = sorted(path.name for path in CORPUS.glob("*.properties"))
    verdicts = check_mm2_files(files, cwd=CORPUS, environ={**os.environ, **ENVIRONMENT})
    monkeypatch.chdir(CORPUS)  # config provider paths are relative to the working directory, as for MM2
    rows = []
    for name in files:
        engine, engine_reason = _engine_accepts(name, verdicts[name])
        rows.append((name, verdicts[name].accepted, engine, verdicts[name].reason, engine_reason))
    print(f"\n{'file':<48} MM2   engine  why")
    for name, mm2, engine, mm2_reason, engine_reason in rows:
        why = "" if mm2 == engine else (DELIBERATE.get(name, engine_reason) if mm2 else mm2_reason)
        print(f"{name:<48} {'yes' if mm2 else 'no':<5} {'yes' if engine else 'no':<7} {why[:160]}")
    print(f"MM2 accepts {sum(r[1] for r in rows)} of {len(rows)}, the engine {sum(r[2] for r in rows)}")

    too_lenient = [(name, mm2_reason) for name, mm2, engine, mm2_reason, _ in rows if engine and not mm2]
    assert not too_lenient, f"the engine accepts files MM2 refuses: {too_lenient}"
    undeclared = [(name, why) for name, mm2, engine, _, why in rows if mm2 and not engine and name not in DELIBERATE]
    assert not undeclared, f"MM2 accepts, the engine refuses, and no deliberate difference says why: {undeclared}"
    stale = [name for name, mm2, engine, _, _ in rows if name in DELIBERATE and not (mm2 and not engine)]
    assert not stale, f"listed as deliberate differences but MM2 and the engine agree: {stale}"
    assert sum(r[1] for r in rows) >= 30  # the referee itself works: most of the corpus is valid MM2
