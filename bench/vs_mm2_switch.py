"""Part `switch` of vs_mm2.py: how exactly, and how soon, MM2 and the engine put stopped groups on the target.

One source topic, one set of consumer groups, two translators at once: MM2 (identity policy, so `payments` on
the target, `sync.group.offsets.enabled`) and the engine with its checkpoints (`mirror-engine run` and
`mirror-engine checkpoint`, default policy, so `source.payments`). Both commit into the same target groups,
each for its own topic. The groups exist before either starts (MM2 looks for new groups only every
`refresh.groups.interval.seconds`, 600 s by default). Later each reads every partition up to a chosen
position while producers keep writing, commits and stops: most far behind the live end, the last one at it.
A watcher records every change of the target groups' offsets. At the end each group reads on the target from
each translation to the end: what it had already read on the source is re-read, what of the source it read
on neither cluster is skipped (every value is unique).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from engine_vs_raw import produce_topics
from harness import (
    ENGINE_SETTINGS,
    MM2_CONSUMER,
    MM2_PRODUCER,
    EngineProcess,
    create_topics,
    print_table,
    wait_for_group_coordinator,
    write_plan,
)
from switch import PARTITIONS, TOPIC, LiveProducer, count_overlap, read_as_group, read_truth

from kafka_local.cluster import KafkaCluster
from kafka_local.mm2 import MirrorMakerSettings, count_records, start_mirror_maker, wait_for_records
from mirror_engine.kafka import GroupError, committed_offsets, list_offsets

ENGINE_TOPIC = f"source.{TOPIC}"  # the default policy under the engine plan's source alias
CONTENDERS = {"MM2": TOPIC, "engine": ENGINE_TOPIC}

Offsets = dict[int, int]  # partition -> offset
log = logging.getLogger("vs_mm2")


class Watcher(threading.Thread):
    """Polls the target groups' committed offsets and keeps every change per (group, contender), with its time."""

    def __init__(self, target: KafkaCluster, groups: list[str]) -> None:
        super().__init__(daemon=True)
        self.admin = AdminClient(target.client_config())
        self.groups = groups
        self.changes: dict[tuple[str, str], list[tuple[float, Offsets]]] = {
            (group, who): [] for group in groups for who in CONTENDERS}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for group in self.groups:
                try:
                    offsets = committed_offsets(self.admin, group)
                except GroupError as error:  # a slow answer: the next poll will do
                    log.warning("%s", error)
                    continue
                now = time.monotonic()
                for who, topic in CONTENDERS.items():
                    mine = {p: o for (t, p), o in offsets.items() if t == topic}
                    seen = self.changes[(group, who)]
                    if not seen or seen[-1][1] != mine:
                        seen.append((now, mine))
            self.halt.wait(0.5)


@dataclass
class GroupRun:
    group: str
    left_at: float = 0.0
    on_source: dict[int, list[bytes]] = field(default_factory=lambda: {p: [] for p in range(PARTITIONS)})
    positions: Offsets = field(default_factory=dict)  # committed on the source when it stopped
    position: int = 0  # records the group had read when it stopped (sum of its committed offsets)
    behind: int = 0  # records between its position and the live end when it stopped
    final: dict[str, Offsets] = field(default_factory=dict)  # per contender, on the target
    reached_s: dict[str, float | None] = field(default_factory=dict)  # final value reached, since it left
    reread: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def read(self, values: dict[int, list[bytes]]) -> None:
        for p, read in values.items():
            self.on_source[p].extend(read)


def read_to(cluster: KafkaCluster, group: str, positions: Offsets, timeout_s: float = 120) -> dict[int, list[bytes]]:
    """Read as `group` every partition from its committed offset up to `positions`, commit them, leave.

    Returns the values read. Partitions are assigned rather than subscribed, so each stops exactly at its
    position; the group commits as any consumer would.
    """
    consumer = Consumer({**cluster.client_config(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    # Through the admin API, which rides out a fresh cluster's group coordinator still loading.
    admin = AdminClient(cluster.client_config())
    starts = {p: o for (t, p), o in committed_offsets(admin, group).items() if t == TOPIC}
    wanted = [TopicPartition(TOPIC, p, starts.get(p, 0)) for p in positions if starts.get(p, 0) < positions[p]]
    read: dict[int, list[bytes]] = {p: [] for p in positions}
    if wanted:
        consumer.assign(wanted)
        open_partitions = {tp.partition for tp in wanted}
        deadline = time.monotonic() + timeout_s
        while open_partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group}: partitions {sorted(open_partitions)} not read up to their "
                                   f"positions within {timeout_s:.0f} s")
            for message in consumer.consume(1000, timeout=0.2):
                if message.error() is not None:
                    if message.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"group {group}: {message.error().str()}")
                    continue
                p = message.partition()
                if p in open_partitions and message.offset() < positions[p]:
                    read[p].append(message.value())
                if p in open_partitions and message.offset() + 1 >= positions[p]:
                    open_partitions.discard(p)
                    consumer.pause([TopicPartition(TOPIC, p)])
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in positions.items()], asynchronous=False)
    consumer.close()
    return read


def _reached(changes: list[tuple[float, Offsets]], final: Offsets, left_at: float) -> float | None:
    """Seconds from the group leaving the source until the target held `final` for good (None: not in the watch)."""
    if not final or not changes or changes[-1][1] != final:
        return None
    return max(0.0, changes[-1][0] - left_at)


def _wait_caught_up(source: KafkaCluster, target: KafkaCluster, processes: list, timeout_s: float = 600) -> None:
    """Both target topics hold at least what the source topic holds now."""
    held = count_records(AdminClient(source.client_config()), [TOPIC])

    def alive() -> None:
        for process in processes:
            process.check_alive()

    for topic in CONTENDERS.values():
        wait_for_records(target, [topic], held, timeout_s, alive=alive)


def run_switch(args: argparse.Namespace, workdir: Path, source: KafkaCluster, target: KafkaCluster) -> None:
    if args.window < 2 * args.mm2_interval or args.window < args.engine_interval:
        log.warning("a watch of %.0f s may end before MM2 (every %d s, checkpoint then sync) or the engine "
                    "(every %g s) commits a group's final offsets", args.window, args.mm2_interval,
                    args.engine_interval)
    history = max(int(100_000 * args.scale), 2_000)
    groups = [GroupRun(f"bench-g{i}") for i in range(args.groups)]
    processes: list = []
    try:
        for cluster in (source, target):
            wait_for_group_coordinator(cluster)
        create_topics(source, [TOPIC])
        produce_topics(source, {TOPIC: [(b"k%d" % (i % 1000), b"history-%d" % i, [("seq", b"%d" % i)])
                                        for i in range(history)]})
        for run in groups:  # the groups exist, with offsets on the topic, before either translator starts
            run.read(read_to(source, run.group, {p: 1 + p for p in range(PARTITIONS)}))
        live = LiveProducer(source, args.rate)
        live.start()

        log.info("switch: starting MM2, the engine and its checkpoints")
        mm2 = start_mirror_maker(source, target, workdir / "switch-mm2", MirrorMakerSettings(
            topics=TOPIC, groups="bench-.*", producer=MM2_PRODUCER, consumer=MM2_CONSUMER,
            emit_checkpoints_interval_s=args.mm2_interval, sync_group_offsets_interval_s=args.mm2_interval))
        processes.append(mm2)
        plan = write_plan(workdir / "switch-plan.yaml", source, target, name="vs-mm2-switch",
                          topics={"include": [TOPIC]}, groups={"include": ["bench-.*"]},
                          replication_policy={"type": "default"}, engine=ENGINE_SETTINGS,
                          cutover={"checkpoint_interval_s": args.engine_interval})
        processes.append(EngineProcess("run", plan, workdir / "switch-engine.log"))
        processes.append(EngineProcess("checkpoint", plan, workdir / "switch-checkpoint.log"))
        _wait_caught_up(source, target, processes)

        log.info("switch: groups read and stop")
        watcher = Watcher(target, [run.group for run in groups])
        watcher.start()
        source_admin = AdminClient(source.client_config())
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        for i, run in enumerate(groups):
            # Stop at i+1 quarters (for 4 groups) of the history, far behind the live end, each partition a
            # little apart; the last group reads up to the live end.
            ends = list_offsets(source_admin, tps, OffsetSpec.latest())
            if i == len(groups) - 1:
                positions = {p: ends[(TOPIC, p)] for p in range(PARTITIONS)}
            else:
                positions = {p: history // PARTITIONS * (i + 1) // len(groups) + 7 * p for p in range(PARTITIONS)}
            run.read(read_to(source, run.group, positions))
            run.left_at = time.monotonic()
            run.positions = positions
            run.position = sum(positions.values())
            run.behind = sum(ends.values()) - run.position
        time.sleep(max(0.0, groups[-1].left_at + args.window - time.monotonic()))

        log.info("switch: stopping the writes, the translators")
        live.halt.set()
        live.join(30)
        _wait_caught_up(source, target, processes)
        for process in reversed(processes):
            process.stop()
        watcher.halt.set()
        watcher.join(30)

        log.info("switch: reading the source, then each group on the target")
        truth = read_truth(source)
        target_admin = AdminClient(target.client_config())
        for run in groups:
            on_target = committed_offsets(target_admin, run.group)
            for who, topic in CONTENDERS.items():
                run.final[who] = {p: o for (t, p), o in on_target.items() if t == topic}
                run.reached_s[who] = _reached(watcher.changes[(run.group, who)], run.final[who], run.left_at)
                values, _ = read_as_group(target, run.group, None, topic)
                run.reread[who], run.skipped[who] = count_overlap(run.on_source, values, truth)
    finally:
        for process in processes:
            process.stop()
    _report(args, history, groups)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def _report(args: argparse.Namespace, history: int, groups: list[GroupRun]) -> None:
    names = {"MM2": f"MirrorMaker 2 (checkpoints and group sync every {args.mm2_interval} s)",
             "engine": f"engine checkpoints (every {args.engine_interval:g} s)"}
    rows = []
    for who, name in names.items():
        reached = [run.reached_s[who] for run in groups if run.reached_s[who] is not None]
        translated = sum(1 for run in groups if len(run.final[who]) == PARTITIONS)
        missing = sum(PARTITIONS - len(run.final[who]) for run in groups)
        rows.append([name, f"{translated}/{len(groups)}", str(missing), str(sum(run.reread[who] for run in groups)),
                     str(sum(run.skipped[who] for run in groups)),
                     f"{statistics.median(reached):.1f}" if reached else "-",
                     f"{max(reached):.1f}" if reached else "-"])
    print_table(
        f"switch: {len(groups)} groups on {TOPIC} ({PARTITIONS} partitions), {history:,} records of history, "
        f"{args.rate:,} rec/s written throughout; target watched {args.window:.0f} s after the last group left",
        ["translator", "groups translated", "partitions untranslated", "re-read", "skipped", "median s", "max s"],
        rows,
        ["re-read: records a group read on the source and again on the target from the translated offsets; "
         "skipped: records of the source it read on neither cluster; an untranslated partition starts at the "
         "target's earliest (auto.offset.reset=earliest)",
         "median s / max s: from a group leaving the source to its final offsets being committed on the target",
         f"MM2 intervals: emit.checkpoints and sync.group.offsets {args.mm2_interval} s"
         f"{' (its defaults)' if args.mm2_interval == 60 else ' (its default: 60)'}, refresh.groups 600 s "
         "(the groups existed before it started); offset.lag.max 100"])
    print_table(
        "switch, per group",
        ["group", "stopped at", "behind live end", "MM2 s", "MM2 re-read", "MM2 skipped", "engine s",
         "engine re-read", "engine skipped"],
        [[run.group, f"{run.position:,}", f"{run.behind:,}", _seconds(run.reached_s["MM2"]), str(run.reread["MM2"]),
          str(run.skipped["MM2"]), _seconds(run.reached_s["engine"]), str(run.reread["engine"]),
          str(run.skipped["engine"])] for run in groups])
    if args.details:
        print("\nswitch, per partition: source position -> MM2's offset on the target / the engine's")
        for run in groups:
            print(f"  {run.group}: " + ", ".join(
                f"[{p}] {run.positions[p]} -> {run.final['MM2'].get(p, '-')} / {run.final['engine'].get(p, '-')}"
                for p in sorted(run.positions)))
