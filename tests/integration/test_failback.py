"""The way back after a cutover, on real brokers: a migration switches groups and producers, producers write on the
target, then the failback copies those records back and moves groups and producers back, exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec

from mirror_engine.cutover import GroupSwitcher, switch_producers
from mirror_engine.failback import Failback, FailbackError, GroupSwitcherBack, failback_plan
from mirror_engine.flow import InternalTopics
from mirror_engine.kafka import (
    Acl,
    admin_client,
    committed_offsets,
    create_acls,
    existing_topics,
    group_fence,
    list_offsets,
    read_acls,
    topic_write_fence,
)
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from tests.integration.kafka_data import produce, produce_transactions, read_as_group, read_partition
from tests.integration.plans import create_topics, make_plan, plan_dict

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)
WRITTEN_ON_TARGET = 120_000  # records producers write on the target after the cutover, in the kill -9 test


def _engine(plan, source_config: dict, target_config: dict) -> tuple[Replicator, threading.Thread]:
    replicator = Replicator(plan, source_config, target_config)
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 300}, daemon=True)
    runner.start()
    return replicator, runner


def _wait_until(condition, failure: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def _stop(replicator: Replicator, runner: threading.Thread) -> None:
    replicator.stop()
    runner.join(60)
    assert not runner.is_alive() and not replicator.fatal, replicator.fatal


def test_after_producers_switched_the_way_back_leaves_every_record_once_on_the_source_groups_exact_and_repeats(
        kafka_pair, unique_name):
    source, target = kafka_pair
    sc, tc = source.client_config(), target.client_config()
    topic = f"{unique_name}-orders"
    create_topics(source, [NewTopic(topic, 2, 1)])
    # Commit markers among the source's records, and (exactly-once) among the target's: no offset is the same on
    # both sides, so every translation is tested, both ways.
    produce_transactions(source, topic, 2, transactions=10, per_transaction=20, abort_every=4,
                         transactional_id=f"{unique_name}-txn")
    produce(source, topic, [(i % 2, b"k%d" % i, b"plain-%d" % i, [("h", b"%d" % i)], NOW + i) for i in range(100)])
    plan = make_plan(source, target, topic, name=f"back{unique_name[-8:]}",
                     engine={"exactly_once": True, "refresh_interval_s": 2})
    original = {p: [r.content() for r in read_partition(source, topic, p)] for p in (0, 1)}

    # The way there: groups read part of the source, switch; producers switch; the forward engine stops.
    behind = read_as_group(sc, f"{unique_name}-behind", topic, {0: 30, 1: 20})
    caught_up = read_as_group(sc, f"{unique_name}-caught", topic, {0: None, 1: None})
    forward = _engine(plan, sc, tc)
    try:
        _wait_until(lambda: existing_topics(admin_client(tc), [topic]), "the forward engine created no target topic")
        switcher = GroupSwitcher(plan, sc, tc)
        for group in (f"{unique_name}-behind", f"{unique_name}-caught"):
            assert switcher.switch(group, timeout_s=120).ok
        switch_producers(plan, sc, tc, topic, idle_s=1, timeout_s=120)
    finally:
        _stop(*forward)

    # The failback is refused while nothing was switched on another plan, and changes nothing there.
    unswitched = make_plan(source, target, f"{unique_name}-none", name=f"other{unique_name[-8:]}")
    with pytest.raises(FailbackError, match="never switched producers"):
        Failback(unswitched, sc, tc)
    assert not existing_topics(admin_client(sc), [InternalTopics.for_plan(failback_plan(unswitched, ["x"])).progress])

    # Producers write on the target; the caught-up group reads part of it there.
    produce(target, topic, [(i % 2, b"t%d" % i, b"on-target-%d" % i, [("h", b"t")], NOW + 10_000 + i)
                            for i in range(120)])
    on_target = read_as_group(tc, f"{unique_name}-caught", topic, {0: 25, 1: 35})

    # The way back.
    way_back = Failback(plan, sc, tc)
    preparation = way_back.prepare(dry_run=True)
    assert sum(start.records_back for start in preparation.starts) >= 120
    assert not existing_topics(admin_client(sc), [InternalTopics.for_plan(way_back.plan).progress])
    preparation = way_back.prepare()
    assert not way_back.prepare().starts, "a second prepare stored the start again"
    back = _engine(way_back.plan, tc, sc)
    try:
        produce(target, topic, [(i % 2, b"u%d" % i, b"later-%d" % i, None, NOW + 20_000 + i) for i in range(40)])
        report = switch_producers(way_back.plan, tc, sc, topic, idle_s=1, timeout_s=120)
        assert report.copied == report.end_offsets
        switcher = GroupSwitcherBack(way_back.plan, tc, sc)
        reports = {group: switcher.switch(group, timeout_s=120)
                   for group in (f"{unique_name}-behind", f"{unique_name}-caught")}
        assert all(r.ok for r in reports.values()), [r.render() for r in reports.values()]
    finally:
        _stop(*back)

    # Every record of both clusters is on the source once, in order: the source's own, then the target's own.
    written_on_target = {p: [r.content() for r in read_partition(target, topic, p)][len(original[p]):]
                         for p in (0, 1)}
    assert sum(len(records) for records in written_on_target.values()) == 160
    for p in (0, 1):
        assert [r.content() for r in read_partition(source, topic, p)] == original[p] + written_on_target[p]

    # Each group goes on on the source at its next record: with what it read before, each record once.
    assert committed_offsets(admin_client(sc), f"{unique_name}-caught")
    after = {group: read_as_group(sc, group, topic, {0: None, 1: None}) for group in (f"{unique_name}-behind",
                                                                             f"{unique_name}-caught")}
    for p in (0, 1):
        whole = original[p] + written_on_target[p]
        assert behind[p] + after[f"{unique_name}-behind"][p] == whole, f"behind[{p}]"
        assert caught_up[p] + on_target[p] + after[f"{unique_name}-caught"][p] == whole, f"caught[{p}]"

    # The round trip again: producers back on the source write more, the group reads some of it there; the way back
    # of the way back (a migration forward again) copies on from where the way back ended, and the group goes on on
    # the target at its next record.
    produce(source, topic, [(i % 2, b"s%d" % i, b"again-%d" % i, None, NOW + 30_000 + i) for i in range(60)])
    behind_again = read_as_group(sc, f"{unique_name}-behind", topic, {0: 10, 1: 10})
    again = Failback(way_back.plan, tc, sc)
    assert (again.plan.source.alias, again.plan.target.alias) == (plan.source.alias, plan.target.alias)
    again.prepare()
    forward_again = _engine(again.plan, sc, tc)
    try:
        switch_producers(again.plan, sc, tc, topic, idle_s=1, timeout_s=120)
        assert GroupSwitcher(again.plan, sc, tc).switch(f"{unique_name}-behind", timeout_s=120).ok
    finally:
        _stop(*forward_again)
    on_target_again = read_as_group(tc, f"{unique_name}-behind", topic, {0: None, 1: None})
    for p in (0, 1):
        whole = [r.content() for r in read_partition(source, topic, p)]
        assert whole == [r.content() for r in read_partition(target, topic, p)], f"partition {p}"
        assert behind[p] + after[f"{unique_name}-behind"][p] + behind_again[p] + on_target_again[p] == whole


def _cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mirror_engine.cli", *args], capture_output=True, text=True,
                          timeout=timeout_s)


def test_the_way_back_from_the_command_line_survives_kill_9_three_times_and_refuses_bad_input_changing_nothing(
        kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    sc, tc = source.client_config(), target.client_config()
    topic = f"{unique_name}-orders"
    create_topics(source, [NewTopic(topic, 2, 1)])
    produce(source, topic, [(i % 2, b"k%d" % i, b"source-%d" % i, None, NOW + i) for i in range(200)])
    # Progress stored four times a second: each kill lands with most of the copy back still ahead.
    # Small batches: the copy back of the target's records takes seconds, not a fraction of one.
    data = plan_dict(source, target, topic, name=f"cli{unique_name[-8:]}",
                     engine={"progress_interval_s": 0.25, "refresh_interval_s": 2, "batch_size": 100})
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    group = f"{unique_name}-app"

    # Before anything was switched: a sentence, exit 1, nothing created on the source.
    refused = _cli("failback", "--plan", str(plan_file))
    assert refused.returncode == 1 and "never switched producers" in refused.stderr, refused.stderr
    back_topics = InternalTopics.for_plan(failback_plan(plan, [topic]))
    assert not existing_topics(admin_client(sc), [back_topics.progress, back_topics.control])

    # The way there, from the command line.
    first = read_as_group(sc, group, topic, {0: 40, 1: 60})
    forward = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until(lambda: existing_topics(admin_client(tc), [topic]), "the forward engine created no target topic")
        for command in (["switch-group", "--group", group], ["switch-producers", "--topic", topic,
                                                               "--idle-seconds", "1"]):
            done = _cli(*command, "--plan", str(plan_file))
            assert done.returncode == 0, done.stderr
    finally:
        forward.terminate()
        assert forward.wait(60) == 0
    produce(target, topic, [(i % 2, b"t%d" % i, b"target-%d" % i, None, NOW + 10_000 + i)
                            for i in range(WRITTEN_ON_TARGET)])
    on_target = read_as_group(tc, group, topic, {0: 500, 1: 700})

    # A source cluster that does not answer: a sentence naming it, nothing changed.
    gone = plan_dict(source, target, topic)
    gone["source"]["bootstrap_servers"] = "127.0.0.1:1"
    gone_file = tmp_path / "gone.yaml"
    gone_file.write_text(yaml.safe_dump(gone))
    unreachable = _cli("failback", "--plan", str(gone_file))
    assert unreachable.returncode == 3 and "'src'" in unreachable.stderr, unreachable.stderr

    dry = _cli("failback", "--plan", str(plan_file), "--dry-run")
    assert dry.returncode == 0 and "would store the start of 2 partition(s)" in dry.stdout, dry.stdout + dry.stderr
    assert not existing_topics(admin_client(sc), [back_topics.progress])
    started = _cli("failback", "--plan", str(plan_file))
    assert started.returncode == 0 and "stored the start of 2 partition(s)" in started.stdout, started.stderr

    # The copy back, killed three times while it copies (as soon as it moved), then run again to its end.
    command = [sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_file), "--failback"]
    admin, total = admin_client(sc), 200 + WRITTEN_ON_TARGET
    landed = _landed(admin, topic)
    for kill in range(3):
        engine = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while _landed(admin, topic) == landed and engine.poll() is None:
            assert time.monotonic() < deadline, f"kill {kill + 1}: the copy back did not move"
            time.sleep(0.02)
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait(30)
        landed = _landed(admin, topic)
        assert landed < total, f"kill {kill + 1}: the copy back ended before it was killed"
    last = _cli("run", "--plan", str(plan_file), "--failback", "--until-caught-up", "--max-seconds", "240",
                timeout_s=300)
    assert last.returncode == 0, last.stderr[-2000:]
    status = _cli("status", "--plan", str(plan_file), "--failback")
    assert f"flow tgt->src of plan '{plan.name}-failback'" in status.stdout, status.stdout + status.stderr
    # The switch back killed -9 while it waits for the group to stop on the target, then run again.
    member = Consumer({**tc, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment():
        assert time.monotonic() < deadline, "the group's member got no partitions on the target"
        member.poll(0.2)
    killed = subprocess.Popen([sys.executable, "-m", "mirror_engine.cli", "switch-group", "--plan", str(plan_file),
                               "--failback", "--group", group], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    assert killed.poll() is None, "the switch back did not wait for the group's member on the target"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(30)
    member.close()
    switched = _cli("switch-group", "--plan", str(plan_file), "--failback", "--group", group)
    assert switched.returncode == 0 and "verified" in switched.stdout, switched.stdout + switched.stderr

    # Producers back on the source; from there, the way forward again starts where the way back ended.
    back_producers = _cli("switch-producers", "--plan", str(plan_file), "--failback", "--topic", topic,
                          "--idle-seconds", "1")
    assert back_producers.returncode == 0, back_producers.stderr
    again = _cli("failback", "--plan", str(plan_file), "--failback", "--dry-run")
    assert again.returncode == 0 and f"is plan '{plan.name}-failback-failback': src -> tgt" in again.stdout \
        and "would store the start of 2 partition(s) at the forward copy's end: 0 target offset(s)" in again.stdout, \
        again.stdout + again.stderr

    # Every record of both clusters is on the source once, in order; the group, which read part of the source,
    # then part of the target's own records, reads on from its next record on the source: nothing again, nothing
    # skipped.
    after = read_as_group(sc, group, topic, {0: None, 1: None})
    for p in (0, 1):
        whole = [r.content() for r in read_partition(source, topic, p)]
        assert whole == [r.content() for r in read_partition(target, topic, p)], f"partition {p}"
        assert len(whole) == (200 + WRITTEN_ON_TARGET) // 2
        assert first[p] + on_target[p] + after[p] == whole, f"partition {p}"


def _landed(admin, topic: str) -> int:
    """The source topic's records (its end offsets: at-least-once writes no markers)."""
    return sum(list_offsets(admin, [TopicPartition(topic, p) for p in (0, 1)], OffsetSpec.latest()).values())


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_switched_topic_deleted_on_either_side_is_named_and_nothing_changes(kafka_pair, unique_name, side):
    source, target = kafka_pair
    sc, tc = source.client_config(), target.client_config()
    kept, deleted = f"{unique_name}-kept", f"{unique_name}-deleted"
    create_topics(source, [NewTopic(kept, 1, 1), NewTopic(deleted, 1, 1)])
    for topic in (kept, deleted):
        produce(source, topic, [(0, b"k", b"v%d" % i, None, NOW + i) for i in range(20)])
    plan = make_plan(source, target, f"{unique_name}-", name=f"gone{unique_name[-8:]}",
                     engine={"refresh_interval_s": 2})
    forward = _engine(plan, sc, tc)
    try:
        for topic in (kept, deleted):
            switch_producers(plan, sc, tc, topic, idle_s=0.5, timeout_s=120)
    finally:
        _stop(*forward)
    config = sc if side == "source" else tc
    admin = admin_client(config)
    admin.delete_topics([deleted])[deleted].result()
    _wait_until(lambda: not existing_topics(admin_client(config), [deleted]), f"the {side} topic was not deleted")
    way_back = Failback(plan, sc, tc)
    with pytest.raises(FailbackError, match=f"topic '{deleted}' of plan '{plan.name}' no longer exists on the {side}"):
        way_back.prepare()
    assert not existing_topics(admin_client(sc), [InternalTopics.for_plan(way_back.plan).progress])


def test_the_way_back_lifts_the_forward_cutovers_fences_where_they_would_block_it(secured_pair, unique_name):
    source, target = secured_pair
    sc, tc = source.client_config(), target.client_config()
    topic, group = f"{unique_name}-fenced", f"{unique_name}-app"
    create_topics(source, [NewTopic(topic, 1, 1)])
    produce(source, topic, [(0, b"k%d" % i, b"source-%d" % i, None, NOW + i) for i in range(50)])
    create_acls(admin_client(sc), [Acl("TOPIC", topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
                                   Acl("GROUP", group, "LITERAL", "User:alice", "*", "READ", "ALLOW")])
    alice_source, alice_target = source.client_config("alice"), target.client_config("alice")
    time.sleep(2)  # ACLs reach the broker's authorizer asynchronously
    first = read_as_group(alice_source, group, topic, {0: 20})
    plan = make_plan(source, target, topic, name=f"fence{unique_name[-8:]}")
    assert Replicator(plan, sc, tc).run(max_seconds=60, until_caught_up=True).ok  # its ACLs too: alice reads there
    assert GroupSwitcher(plan, sc, tc).switch(group, fence=True, timeout_s=60).ok
    switch_producers(plan, sc, tc, topic, fence=True, idle_s=0.5, timeout_s=60)
    assert {group_fence(group), topic_write_fence(topic)} <= read_acls(admin_client(sc))
    produce(target, topic, [(0, b"t%d" % i, b"target-%d" % i, None, NOW + 10_000 + i) for i in range(30)])
    time.sleep(2)
    on_target = read_as_group(alice_target, group, topic, {0: 40})

    way_back = Failback(plan, sc, tc)
    assert way_back.prepare().unfenced_topics == [topic]
    assert topic_write_fence(topic) not in read_acls(admin_client(sc))  # the copy back writes there
    assert group_fence(group) in read_acls(admin_client(sc))  # kept until the group is committed back
    assert Replicator(way_back.plan, tc, sc).run(max_seconds=60, until_caught_up=True).ok
    assert GroupSwitcherBack(way_back.plan, tc, sc).switch(group, timeout_s=60).ok
    assert group_fence(group) not in read_acls(admin_client(sc))
    time.sleep(2)  # the fence's removal reaches the authorizer asynchronously
    rest = read_as_group(alice_source, group, topic, {0: None})
    assert first[0] + on_target[0] + rest[0] == [r.content() for r in read_partition(source, topic, 0)]
    assert len(first[0] + on_target[0] + rest[0]) == 80
