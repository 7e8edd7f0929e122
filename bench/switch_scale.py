"""What the migration DAG costs per consumer group: its parse, its switch of many groups, one `switch-group`.

Three parts, each comparing a small and a large count in the same run (`--part` runs one of them):

- `parse`: the migration DAG file parsed (`bench/scale.py`'s `dag_parse_seconds`: a fresh process, Airflow's
  import included) with a plan naming 10 and 1,000 groups in `cutover.groups`, and the DagBag fill alone;
- `switch`: on local clusters, topics of 4 partitions copied by a running `mirror-engine run`, groups stopped
  half-way on 1 to 3 topics each (as `bench/scale.py` has them); the migration DAG run with `dag.test()` (every
  task in this process, the switch_groups stage only: each group fenced or not, waited for, switched and
  proven) for 10 and then 100 groups; the cost of one more group is the difference over 90;
- `scheduler`: the same stage under the real Airflow (api-server, scheduler, dag-processor, triggerer, LocalExecutor
  with 4 slots; `switch_scheduler.py`) for this checkout's HEAD and, with `--baseline REV`, an earlier revision,
  both exported with `git archive` and run on the same clusters and engine (each run its own stopped groups);
- `one`: `mirror-engine switch-group` of one group when the source holds 10 groups, and again after 1,000 more.

    .venv/bin/python bench/switch_scale.py                     # parse, one, switch
    .venv/bin/python bench/switch_scale.py --part switch --groups 10 --groups 100
    .venv/bin/python bench/switch_scale.py --part scheduler --groups 10 --groups 100 --groups 1000 \
        --baseline 0a2987b --baseline-groups 10 --baseline-groups 100
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from harness import EngineProcess, cluster_section, print_table, stop_clusters
from scale import Shape, commit_groups, create_topics, dag_parse_seconds, produce_records

from kafka_local.cluster import KafkaCluster, start_pair
from mirror_engine.kafka import wait_until_served
from mirror_engine.observe import is_live, read_worker_statuses
from mirror_engine.plan import plan_from_dict

ROOT = Path(__file__).resolve().parent.parent
RECORDS = 100  # per partition
PARTITIONS = 4
MAX_TOPICS = 250  # groups share topics past this (1,000 partitions on the source)
ENGINE = [sys.executable, "-m", "mirror_engine.cli"]
log = logging.getLogger("switch_scale")


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f}"


# ---------------------------------------------------------------------------- parse
FILL = """
import sys, time
sys.path.insert(0, {plugins!r})
from airflow.dag_processing.dagbag import DagBag
DagBag(dag_folder={dag_file!r})  # the project's modules imported once, as in a running DAG processor
cpu = []
for _ in range(5):
    started = time.process_time()
    bag = DagBag(dag_folder={dag_file!r})
    cpu.append(time.process_time() - started)
    assert not bag.import_errors, bag.import_errors
print(sum(cpu) / len(cpu))
"""


def parse_part(workdir: Path, counts: list[int]) -> None:
    rows = []
    env = {**os.environ, "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    for n in counts:
        data = {"name": f"parse{n}", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
                "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}, "topics": {"include": [r"s\..*"]},
                "groups": {"include": ["g.*"]}, "cutover": {"groups": [f"app-{i:04d}" for i in range(n)]}}
        plan_file = workdir / f"parse{n}.yaml"
        plan_file.write_text(yaml.safe_dump(data))
        whole = dag_parse_seconds(plan_file, workdir, env)
        fill = subprocess.run([sys.executable, "-c", FILL.format(plugins=str(ROOT / "plugins"),
                                                                  dag_file=str(ROOT / "dags" / "migrations.py"))],
                              env={**env, "KAFKA_MIGRATION_PLANS": str(workdir / f"plans-parse{n}")},
                              capture_output=True, text=True, timeout=600, cwd=workdir)
        fill_s = float(fill.stdout.strip().splitlines()[-1]) if fill.returncode == 0 else None
        rows.append([f"{n:,} groups", f"{whole:.2f}" if whole else "failed", f"{fill_s:.3f}" if fill_s else "failed"])
    print_table(f"DAG file parse, one plan ({_load()})", ["plan", "parse s (process)", "DagBag fill CPU s"], rows,
                ["parse: wall time of a fresh process importing Airflow and filling a DagBag from dags/migrations.py;"
                 " fill: CPU time of the DagBag alone (mean of 5), Airflow and the plugins imported before, as in "
                 "the DAG processor"])


# ---------------------------------------------------------------------------- switch
def _wait_copied(plan: Any, target: KafkaCluster, partitions: int, engine: EngineProcess) -> None:
    deadline = time.monotonic() + 600
    while True:
        engine.check_alive()
        try:
            live = [s for s in read_worker_statuses(plan, target.client_config(), window_s=60) if is_live(s)]
        except KafkaException as error:  # a loaded broker answers late: ask again
            log.warning("status not read: %s", error)
            live = []
        if live and sum(s.get("partition_count") or len(s["partitions"]) for s in live) == partitions \
                and sum(s["lag"] for s in live) == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("the engine did not copy every partition in 10 minutes")
        time.sleep(2)


def _airflow_home(workdir: Path) -> None:
    """A fresh Airflow home with its metadata DB, set before Airflow is imported in this process."""
    home = workdir / "airflow"
    home.mkdir()
    os.environ.update({"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                       "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
                       "KAFKA_MIGRATION_PLANS": str(workdir / "plans")})
    subprocess.run([str(Path(sys.executable).parent / "airflow"), "db", "migrate"], check=True,
                   capture_output=True)


def _dag_run(dag_id: str, groups: list[str]) -> tuple[float, dict[str, Any]]:
    """(seconds, figures) of one dag.test() run of the switch_groups stage for `groups`."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState

    bag = DagBag(dag_folder=str(ROOT / "dags" / "migrations.py"))
    dag = bag.get_dag(dag_id)
    started = time.monotonic()
    run = dag.test(run_conf={"stages": ["switch_groups"], "groups": groups, "wait_timeout_s": 300})
    seconds = time.monotonic() - started
    tis = run.get_task_instances()
    states: dict[str, int] = {}
    busy: dict[str, float] = {}
    for ti in tis:
        states[f"{ti.task_id} {ti.state}"] = states.get(f"{ti.task_id} {ti.state}", 0) + 1
        if ti.start_date and ti.end_date and ti.task_id.startswith("switch_groups."):
            name = ti.task_id.split(".", 1)[1]
            busy[name] = busy.get(name, 0.0) + (ti.end_date - ti.start_date).total_seconds()
    assert run.state == DagRunState.SUCCESS, states
    switched = states.get("switch_groups.switch success", 0)
    assert switched == len(groups), states
    return seconds, {"busy": busy, "states": states}


def _switch_shape(source: KafkaCluster, target: KafkaCluster, workdir: Path, counts: list[int]
                  ) -> tuple[dict[str, Any], Path, list[str]]:
    """Topics of 4 partitions on the source (one per group, at most MAX_TOPICS: groups read 1 to 3 of them) and the
    plan of the run; returns (plan data, plans folder, topic names)."""
    topics = min(max(counts), MAX_TOPICS)
    names = [f"w.t{i:04d}" for i in range(topics)]
    create_topics(source, names, PARTITIONS)
    produce_records(source, names, PARTITIONS, RECORDS)
    plans = workdir / "plans"
    plans.mkdir()
    data = {"name": "switchscale", "source": cluster_section("src", source), "target": cluster_section("tgt", target),
            "topics": {"include": [r"w\..*"]}, "cutover": {"wait_timeout_s": 600}}
    (plans / "switchscale.yaml").write_text(yaml.safe_dump(data))
    prepared = subprocess.run([*ENGINE, "prepare", "--plan", str(plans / "switchscale.yaml")], capture_output=True,
                              text=True, timeout=600, cwd=ROOT)
    assert prepared.returncode == 0, prepared.stdout[-2000:] + prepared.stderr[-2000:]
    wait_until_served(AdminClient(target.client_config()), names, timeout_s=120)
    return data, plans, names


def _copying_engine(plan: Any, plan_file: Path, target: KafkaCluster, partitions: int, log_file: Path
                    ) -> EngineProcess:
    """A `mirror-engine run` that copied every partition; started again (up to twice) when a loaded machine makes
    its start-up fail (a broker still electing leaders answers "not leader")."""
    for attempt in range(3):
        engine = EngineProcess("run", plan_file, log_file.with_suffix(f".{attempt}.log"))
        try:
            _wait_copied(plan, target, partitions, engine)
            return engine
        except RuntimeError as error:
            engine.stop()
            if attempt == 2:
                raise
            log.warning("the engine did not start, once more: %s", str(error)[-300:])
    raise AssertionError("unreachable")


def _stopped_groups(source: KafkaCluster, prefix: str, names: list[str], n: int) -> list[str]:
    """`n` groups stopped half-way on 1 to 3 topics each (commit_groups picks them among `names`)."""
    commit_groups(source, prefix, names[:n], Shape(n, PARTITIONS, n), RECORDS)
    return [f"{prefix}-g{g}" for g in range(n)]


def switch_part(source: KafkaCluster, target: KafkaCluster, workdir: Path, counts: list[int]) -> None:
    _airflow_home(workdir)
    data, plans, names = _switch_shape(source, target, workdir, counts)
    plan = plan_from_dict(data)
    partitions = len(names) * PARTITIONS
    rows = []
    engine = _copying_engine(plan, plans / "switchscale.yaml", target, partitions, workdir / "switch-run.log")
    try:
        for n in counts:
            groups = _stopped_groups(source, f"sw{n}", names, n)
            seconds, figures = _dag_run("kafka_migration__switchscale", groups)
            rows.append((n, seconds, figures))
            log.info("%d groups: %.1f s %s", n, seconds, figures)
    finally:
        engine.stop()
    (small, small_s, _), (large, large_s, _) = rows[0], rows[-1]
    per_group = (large_s - small_s) / max(1, large - small)
    tasks = sorted({task for _n, _s, f in rows for task in f["busy"]})
    table = [[f"{n:,} groups", f"{s:.1f}", f"{s / n:.2f}", *(f"{f['busy'].get(task, 0.0) / n:.2f}" for task in tasks)]
             for n, s, f in rows]
    print_table(f"switch_groups stage by dag.test(), one engine copying {partitions:,} partitions ({_load()})",
                ["run", "seconds", "s per group", *(f"{task} s/group" for task in tasks)], table,
                [f"one more group costs {per_group:.2f} s in a dag.test() run (from {small} to {large} groups); "
                 f"1,000 groups: about {small_s + per_group * (1000 - small):.0f} s in one process"])


def export_checkout(revision: str, folder: Path) -> Path:
    """The project's files at `revision` (git archive: no worktree, no git state) in `folder`."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def scheduler_part(source: KafkaCluster, target: KafkaCluster, workdir: Path, counts: list[int],
                   baseline: str | None, baseline_counts: list[int]) -> None:
    """The switch_groups stage under the real scheduler (LocalExecutor), this checkout's HEAD and `baseline` (a git
    revision), each exported, on the same clusters and engine, each group its own (stopped on the source,
    switched once)."""
    from switch_scheduler import SchedulerRunner

    data, plans, names = _switch_shape(source, target, workdir, counts + baseline_counts)
    plan = plan_from_dict(data)
    partitions = len(names) * PARTITIONS
    # This checkout as committed (HEAD), so that edits meanwhile do not mix into the figures.
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    # This checkout first: on a loaded machine its figures come even if the baseline's larger runs do not end.
    checkouts = [(head, export_checkout(head, workdir / "after"), counts)] \
        + ([(baseline, export_checkout(baseline, workdir / "before"), baseline_counts)] if baseline else [])
    rows = []
    engine = _copying_engine(plan, plans / "switchscale.yaml", target, partitions, workdir / "switch-run.log")
    try:
        for label, checkout, sizes in checkouts:
            runner = SchedulerRunner(checkout, workdir / f"airflow-{label}", plans, {})
            label = "before" if label == baseline else f"after ({label})"
            try:
                runner.start("kafka_migration__switchscale")
                for n in sizes:
                    groups = _stopped_groups(source, f"{label.split()[0]}{n}", names, n)
                    load = _load()
                    run = runner.switch("kafka_migration__switchscale", plan, target.client_config(), groups)
                    log.info("%s, %d groups: %s (%s)", label, n, run, load)
                    rows.append([label, f"{n:,}", f"{run.run_s:.1f}", f"{run.stage_s:.1f}",
                                 f"{run.stage_s / n:.2f}", f"{run.task_instances:,}", f"{run.verified:,}", load])
            finally:
                runner.stop()
    finally:
        engine.stop()
    print_table(f"switch_groups stage under the real scheduler, LocalExecutor (4 slots), one engine copying "
                f"{partitions:,} partitions", ["code", "groups", "run s", "stage s", "stage s/group",
                                               "task instances", "verified", "load at start"], rows,
                ["run: trigger to the run's end (the other stages' tasks skip); stage: first start to last end of "
                 "the switch_groups tasks; verified: groups whose stored switch report is verified"])


def one_part(source: KafkaCluster, target: KafkaCluster, workdir: Path, many: int) -> None:
    names = [f"o.t{i:04d}" for i in range(10)]
    create_topics(source, names, PARTITIONS)
    produce_records(source, names, PARTITIONS, RECORDS)
    data = {"name": "oneswitch", "source": cluster_section("src", source), "target": cluster_section("tgt", target),
            "topics": {"include": [r"o\..*"]}, "cutover": {"wait_timeout_s": 120}}
    plan_file = workdir / "oneswitch.yaml"
    plan_file.write_text(yaml.safe_dump(data))
    plan = plan_from_dict(data)
    commit_groups(source, "few", names, Shape(10, PARTITIONS, 10), RECORDS)
    rows = []
    engine = EngineProcess("run", plan_file, workdir / "one-run.log")
    try:
        _wait_copied(plan, target, 10 * PARTITIONS, engine)
        for label, group in (("10 groups on the source", "few-g0"), (f"{many + 10:,} groups on the source",
                                                                       "few-g1")):
            if group == "few-g1":
                commit_groups(source, "many", names, Shape(10, PARTITIONS, many), RECORDS)
            times = []
            for _attempt in range(3):  # the first switches; the next two find it switched and prove it again
                started = time.monotonic()
                done = subprocess.run([*ENGINE, "switch-group", "--plan", str(plan_file), "--group", group],
                                      capture_output=True, text=True, timeout=300, cwd=ROOT)
                times.append(time.monotonic() - started)
                assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            rows.append([label, f"{times[0]:.2f}", f"{min(times[1:]):.2f}"])
    finally:
        engine.stop()
    print_table(f"mirror-engine switch-group of one group ({_load()})", ["cluster", "switch s", "repeated s"], rows,
                ["a process each (imports included); repeated: the same command again, which finds the stored "
                 "report and proves it"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["parse", "switch", "scheduler", "one"], action="append")
    parser.add_argument("--groups", type=int, action="append", help="groups per dag.test() run (default 10, 100)")
    parser.add_argument("--parse-groups", type=int, action="append", help="default 10, 1000")
    parser.add_argument("--many", type=int, default=1000, help="groups added before the second switch-group")
    parser.add_argument("--baseline", help="scheduler part: a git revision to run before this checkout")
    parser.add_argument("--baseline-groups", type=int, action="append",
                        help="scheduler part: groups per run of the baseline (default: as --groups)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parts = args.part or ["parse", "one", "switch"]
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        if "parse" in parts:
            parse_part(workdir, args.parse_groups or [10, 1000])
        if {"one", "switch", "scheduler"} & set(parts):
            source, target = start_pair(workdir / "clusters")
            try:
                if "one" in parts:
                    one_part(source, target, workdir, args.many)
                if "switch" in parts:
                    switch_part(source, target, workdir, args.groups or [10, 100])
                if "scheduler" in parts:
                    scheduler_part(source, target, workdir, args.groups or [10, 100], args.baseline,
                                   (args.baseline_groups or args.groups or [10, 100]) if args.baseline else [])
            finally:
                stop_clusters([source, target])


if __name__ == "__main__":
    main()
