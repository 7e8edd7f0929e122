"""How long the cockpit's pages take to build, and how much they return, as plans and clusters grow.

Two parts, on one pair of local clusters:

- `--plans N` (the default part): N plans (one topic of 4 partitions each, copied by a short engine run so that
  every flow has progress, offset-syncs and a status history); the overview's data built as the cockpit does (one
  `FlowView` per plan, their `snapshot()`s side by side) once cold (clients made, topics read from their start),
  then repeatedly warm (clients kept, only what is new read). Prints the cold time and the warm median, min, max.
- `--shape TOPICSxPARTITIONSxGROUPS` (repeatable): one plan per shape, its topics filled with 100 records per
  partition and its groups stopped half-way on 1 to 3 topics each (as `bench/scale.py` builds them), copied by a
  running `mirror-engine run` with `engine.run_checkpoints: true`. While that engine runs, the overview and the
  plan's migration page are built as the app builds them (a fresh snapshot each round, then the HTML), and their
  JSON twins too; each is timed, and its table rows and bytes counted. The summary is checked against the
  engine's own status record (partitions, live engines, lag).

    .venv/bin/python bench/cockpit_overview.py                                  # 10 plans
    .venv/bin/python bench/cockpit_overview.py --plans 20 --rounds 10
    .venv/bin/python bench/cockpit_overview.py --shape 10x4x10 --shape 250x8x150  # 40 and 2,000 partitions
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from harness import EngineProcess, cluster_section, print_table, stop_clusters
from scale import Shape, commit_groups, create_topics, produce_records, raise_file_limit

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.kafka import wait_until_served
from mirror_engine.observe import FlowView, is_live, partition_count, read_worker_statuses
from mirror_engine.observe.testing import flow_view
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator

RECORDS = 100  # per partition
SUMMARY = ("plan", "flow_state", "engines", "lag", "lag_ms", "records_per_s", "eta_s", "eta", "problems")


def overview_row(view: FlowView) -> dict[str, Any]:
    """The overview's row of a plan (`FlowView.overview_row`; a code version without it: cut from the snapshot)."""
    if hasattr(view, "overview_row"):
        return view.overview_row()
    snapshot = view.snapshot()
    return {key: snapshot[key] for key in SUMMARY}


def page_of(view: FlowView, snapshot: dict[str, Any]) -> dict[str, Any]:
    """What /api/plans/{plan} answers (a code version without `page_of`: the whole snapshot)."""
    return view.page_of(snapshot) if hasattr(view, "page_of") else snapshot


def many_plans(source: KafkaCluster, target: KafkaCluster, plans_wanted: int, rounds: int) -> None:
    from kafka_migration.cockpit import pages

    admin = AdminClient(source.client_config())
    names = [f"bench-cockpit-{i}" for i in range(plans_wanted)]
    for future in admin.create_topics([NewTopic(name, 4, 1) for name in names]).values():
        future.result()
    producer = Producer({**source.client_config(), "linger.ms": 20})
    for name in names:
        for i in range(2000):
            producer.produce(name, f"value-{i}".encode(), f"k{i % 50}".encode(), i % 4)
    producer.flush(60)
    plans = []
    for name in names:
        plan = plan_from_dict({
            "name": name, "source": {"alias": "src", "bootstrap_servers": source.bootstrap},
            "target": {"alias": "tgt", "bootstrap_servers": target.bootstrap},
            "topics": {"include": [name]}, "engine": {"status_interval_s": 1}})
        Replicator(plan, source.client_config(), target.client_config()).run(max_seconds=30, until_caught_up=True)
        plans.append(plan)

    def overview(views: list[FlowView]) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(views)) as pool:  # as the cockpit reads them
            rows = list(pool.map(overview_row, views))
        pages.overview_rows([{**row, "stage": "-"} for row in rows], "/kafka-migrations/")
        return time.perf_counter() - started

    views = [FlowView(plan, source.client_config(), target.client_config()) for plan in plans]
    cold = overview(views)
    flow_view.FRESH_FOR_S = 0  # every round reads anew, as a page refreshed after the cache expired
    warm = [overview(views) for _ in range(rounds)]
    for view in views:
        view.close()
    print(f"overview of {plans_wanted} plans: cold {cold:.2f} s; warm median {statistics.median(warm):.2f} s "
          f"(min {min(warm):.2f}, max {max(warm):.2f}, {rounds} rounds)")


def _rows(html: str) -> int:
    """Table rows of a page, headers left out."""
    return html.count("<tr>") - html.count("<tr><th>")


def _timed(action: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """(median seconds of `rounds` calls, the last call's result)."""
    times, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _wait_for_engine(plan: Any, target: KafkaCluster, total: int, engine: EngineProcess,
                     timeout_s: float = 600) -> dict[str, Any]:
    """The engine's status once it is live, copies all `total` partitions and has no lag left."""
    deadline = time.monotonic() + timeout_s
    while True:
        engine.check_alive()
        statuses = [s for s in read_worker_statuses(plan, target.client_config(), window_s=60) if is_live(s)]
        if statuses and sum(partition_count(s) for s in statuses) == total and sum(s["lag"] for s in statuses) == 0:
            return statuses[-1]
        if time.monotonic() > deadline:
            raise RuntimeError(f"the engine did not copy every one of {total} partitions within {timeout_s:.0f} s")
        time.sleep(2)


def one_shape(shape: Shape, source: KafkaCluster, target: KafkaCluster, workdir: Path,
              rounds: int) -> dict[str, Any]:
    from kafka_migration.cockpit import migration_pages, pages

    prefix = f"c{shape.total_partitions}"
    names = [f"{prefix}.t{i:05d}" for i in range(shape.topics)]
    logging.info("%s: building on the source", shape)
    create_topics(source, names, shape.partitions)
    produce_records(source, names, shape.partitions, RECORDS)
    commit_groups(source, prefix, names, shape, RECORDS)
    data = {"name": f"cockpit-{shape.total_partitions}", "source": cluster_section("src", source),
            "target": cluster_section("tgt", target), "topics": {"include": [rf"{prefix}\..*"]},
            "groups": {"include": [f"{prefix}-g.*"]}, "engine": {"run_checkpoints": True},
            "cutover": {"checkpoint_interval_s": 5}}
    plan_file = workdir / f"{prefix}.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    # The target's topics first, served before the engine starts (as a migration's prepare stage does).
    subprocess.run([sys.executable, "-m", "mirror_engine.cli", "prepare", "--plan", str(plan_file)], check=True,
                   capture_output=True, timeout=600)
    wait_until_served(AdminClient(target.client_config()), names, timeout_s=300)
    for attempt in range(3):
        engine = EngineProcess("run", plan_file, workdir / f"{prefix}-run-{attempt}.log")
        try:
            status = _wait_for_engine(plan, target, shape.total_partitions, engine)
            break
        except RuntimeError as error:  # an engine that stopped at start-up is started again, as a supervisor would
            logging.warning("%s: %s", shape, str(error)[-600:])
            engine.stop()
    else:
        raise RuntimeError(f"{shape}: the engine stopped at start-up three times")
    try:
        time.sleep(2 * plan.cutover.checkpoint_interval_s)  # a checkpoint round or two of every group
        flow_view.FRESH_FOR_S = 0  # every round reads anew, as a page refreshed after the cache expired
        started = time.perf_counter()
        view = FlowView(plan, source.client_config(), target.client_config())
        view.snapshot()
        cold = time.perf_counter() - started

        def overview() -> str:
            row = overview_row(view)
            return pages.overview_rows([{**row, "stage": "-"}], "/kafka-migrations/")

        def migration() -> str:
            if hasattr(view, "page_of"):
                return migration_pages.migration_page(view.page_of(view.snapshot()), "", "/kafka-migrations/")
            return migration_pages.migration_page(view.snapshot(), "", "/kafka-migrations/")  # an older version

        if os.environ.get("COCKPIT_PROFILE"):  # where a page's time goes, printed per shape
            import cProfile
            import pstats

            profile = cProfile.Profile()
            profile.runcall(migration)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
        overview_s, overview_html = _timed(overview, rounds)
        migration_s, migration_html = _timed(migration, rounds)
        overview_json = json.dumps([{**overview_row(view), "stage": "-"}])
        snapshot = view.snapshot()
        migration_json = json.dumps(page_of(view, snapshot))
        view.close()
        # The summary against the engine's own status record.
        agrees = (snapshot["partition_count"] == partition_count(status) and len(snapshot["engines"]) == 1
                  and snapshot["lag"] == status["lag"] == 0)
    finally:
        engine.stop()
    return {"shape": shape, "cold": cold, "overview_s": overview_s, "migration_s": migration_s,
            "overview_rows": _rows(overview_html), "overview_kib": len(overview_html) / 1024,
            "overview_json_kib": len(overview_json) / 1024,
            "migration_rows": _rows(migration_html), "migration_kib": len(migration_html) / 1024,
            "migration_json_kib": len(migration_json) / 1024, "agrees": agrees}


def shapes_part(shapes: list[Shape], source: KafkaCluster, target: KafkaCluster, workdir: Path,
                rounds: int) -> None:
    results = []
    for shape in shapes:
        results.append(one_shape(shape, source, target, workdir, rounds))
        logging.info("%s", results[-1])
    load = os.getloadavg()
    print_table(
        f"cockpit pages of one plan while its engine runs (median of {rounds} rounds; load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f})",
        ["shape", "first view s", "overview s", "rows", "KiB", "JSON KiB", "migration page s", "rows", "KiB",
         "JSON KiB", "summary = status"],
        [[str(r["shape"]), f"{r['cold']:.2f}", f"{r['overview_s']:.3f}", str(r["overview_rows"]),
          f"{r['overview_kib']:.1f}", f"{r['overview_json_kib']:.1f}", f"{r['migration_s']:.3f}",
          str(r["migration_rows"]), f"{r['migration_kib']:.1f}", f"{r['migration_json_kib']:.1f}",
          "yes" if r["agrees"] else "NO"] for r in results],
        ["overview / migration page: a fresh snapshot of the flow (the source's ends, the stored progress, the "
         "status topic) and the page's HTML; JSON: /api/overview's row and /api/plans/{plan}'s first page"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plans", type=int, default=10)
    parser.add_argument("--shape", action="append", type=Shape.parse, help="TOPICSxPARTITIONSxGROUPS")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.shape:
        raise_file_limit(max(args.shape, key=lambda s: s.total_partitions))
    with tempfile.TemporaryDirectory() as folder:
        source, target = start_pair(Path(folder))
        try:
            if args.shape:
                shapes_part(args.shape, source, target, Path(folder), args.rounds)
            else:
                many_plans(source, target, args.plans, args.rounds)
        finally:
            stop_clusters([source, target])


if __name__ == "__main__":
    main()
