"""Hostile plans and MirrorMaker 2 files run through the CLI against real clusters: each is refused fast,
with one clear message naming the file and the field, no traceback, and the target left exactly as it was.

The clusters' state is read once before the corpus and compared after every input; the three commands of
an input run side by side.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mirror_engine.kafka import committed_offsets_of, describe_groups
from tests.integration.hostile_corpus import CASES, HostileInput
from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

COMMANDS = (["plan"], ["prepare", "--dry-run"], ["prepare"])
FEW_SECONDS = 15.0  # generous: the CLI alone takes a second or two to start on a busy 2-core machine
LONG_TOPIC = "hostile-none-" + "x" * (249 - len("hostile-none-"))  # its `src.` copy would be 253 characters


def _snapshot(admin: AdminClient) -> dict:
    """What a refused input must leave as it was: topics and partitions, topic config overrides, ACLs, and the
    groups' committed offsets. Groups without offsets are left out: a member of an earlier test's killed process
    keeps such a group listed until its session times out, and its going away is no change a refusal made."""
    topics = {name: len(meta.partitions) for name, meta in admin.list_topics(timeout=15).topics.items()}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in sorted(topics)]
    configs = {}
    for resource, future in (admin.describe_configs(resources, request_timeout=30) if resources else {}).items():
        configs[resource.name] = sorted((e.name, e.value) for e in future.result().values() if not e.is_default)
    try:
        acl_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        acls = sorted(str(binding) for binding in admin.describe_acls(acl_filter, request_timeout=15).result())
    except KafkaException as error:  # no authorizer on the plain clusters
        acls = [f"unavailable: {error.args[0].code()}"]
    listed = sorted(group.group_id for group in admin.list_consumer_groups(request_timeout=15).result().valid)
    described = [group for group, state in describe_groups(admin, listed).items()
                 if not isinstance(state, Exception) and state.state != "DEAD"]
    offsets = committed_offsets_of(admin, described)
    groups = {group: found for group, found in offsets.items() if isinstance(found, dict) and found}
    return {"topics": topics, "configs": configs, "acls": acls, "groups": groups}


@pytest.fixture(scope="module")
def clusters(kafka_pair, secured_pair) -> dict:
    source, target = kafka_pair
    create_topics(source, [NewTopic(LONG_TOPIC, 1, 1), NewTopic("hostile-wide", 1, 1)])
    create_topics(target, [NewTopic("hostile-wide", 3, 1)])
    found = {"plain": (source, target), "secured": secured_pair}
    found["snapshots"] = _Snapshots(found)
    found["before"] = {pair: found["snapshots"].take(pair) for pair in ("plain", "secured")}
    return found


def _materialize(case: HostileInput, clusters: dict, folder: Path) -> Path:
    source, target = clusters["plain"]
    secured_source, secured_target = clusters["secured"]
    content = case.content
    for placeholder, value in (("{SU}", secured_source.bootstrap), ("{TU}", secured_target.bootstrap),
                               ("{SL}", source.bootstrap.replace("127.0.0.1", "localhost")),
                               ("{S}", source.bootstrap), ("{T}", target.bootstrap)):
        content = content.replace(placeholder.encode(), value.encode())
    path = folder / f"{case.id}.{'yaml' if case.kind == 'plan' else 'properties'}"
    path.write_bytes(content)
    return path


def _message(stderr: str) -> str:
    """The CLI's refusal: its `error:`/`problem:` lines and what follows them, without log lines (they start
    with a timestamp) and librdkafka's (they start with %)."""
    lines = [line for line in stderr.splitlines() if not line.startswith("%") and not line[:4].isdigit()]
    first = next((i for i, line in enumerate(lines) if line.startswith(("error:", "problem:"))), len(lines))
    return "\n".join(lines[first:]).strip()


class _Snapshots:
    """One admin client per target, kept for the whole corpus (a snapshot after every input)."""

    def __init__(self, clusters: dict) -> None:
        self.admins = {pair: AdminClient(clusters[pair][1].client_config()) for pair in ("plain", "secured")}

    def take(self, pair: str) -> dict:
        return _snapshot(self.admins[pair])


def test_every_hostile_input_is_refused_clearly_fast_and_changes_nothing(clusters, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("HOSTILE_UNSET_VARIABLE", None)
    failures: list[str] = []
    started_all = time.monotonic()
    for case in CASES:
        path = _materialize(case, clusters, tmp_path)
        option = "--plan" if case.kind == "plan" else "--mm2-config"
        started = time.monotonic()
        processes = [subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", *command, option, str(path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                     for command in COMMANDS]
        for command, process in zip(COMMANDS, processes, strict=True):
            name = f"{case.id}: {' '.join(command)}"
            try:
                _out, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                failures.append(f"{name}: still running after 60 s")
                continue
            seconds = time.monotonic() - started
            message = _message(err)
            if process.returncode == 0:
                failures.append(f"{name}: exit 0")
            if "Traceback" in err:
                failures.append(f"{name}: a traceback: {err[-1500:]}")
            if seconds > FEW_SECONDS:
                failures.append(f"{name}: took {seconds:.1f} s")
            if str(path) not in message:
                failures.append(f"{name}: the message does not name the file: {message[:400]!r}")
            if case.expected not in message:
                failures.append(f"{name}: the message does not name {case.expected!r}: {message[:400]!r}")
            if "\n\n" in message:
                failures.append(f"{name}: more than one paragraph: {message[:400]!r}")
        pair = "secured" if case.secured else "plain"
        after = clusters["snapshots"].take(pair)
        if after != clusters["before"][pair]:
            changed = {key for key in after if after[key] != clusters["before"][pair][key]}
            failures.append(f"{case.id}: the {pair} target changed: {sorted(changed)}")
            clusters["before"][pair] = after  # report each change once
    assert len(CASES) >= 60
    assert not failures, f"{len(failures)} problem(s):\n" + "\n".join(failures)
    print(f"{len(CASES)} inputs x {len(COMMANDS)} commands in {time.monotonic() - started_all:.0f} s")
