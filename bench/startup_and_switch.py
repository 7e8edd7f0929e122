"""How soon `mirror-engine run` copies its first record, and how fast a group switches, timed from outside.

Both parts start their own pair of local clusters (one broker each, as the demo's).

**start-up**: a plan with one topic of `--partitions` partitions, already copied once (its internal topics,
target topic and progress exist: an engine restarting) and a backlog of `--backlog` new records waiting on
the source. Each run launches `mirror-engine run --plan FILE` as a child process and polls the target's end
offsets until the first new record is there; then the engine is stopped with SIGTERM (it stores its
progress, and the next run's backlog comes on top of what it left). A second scenario, `new plan`, launches
each run with a plan never run before, on a topic of its own: the engine creates the plan's internal topics
and its target topic first.

**switch**: the engine (`mirror-engine run`) copies a topic of `--partitions` partitions while a producer
writes `--rate` records/s to it. Each run, a fresh consumer group reads the live topic for a second (so it
stops at the live end, as consumers that kept up do), commits and leaves; from that moment each way of
switching it is timed:
- `CLI`: `mirror-engine switch-group --plan FILE --group G` launched as a child process, until it exits;
- `in-process`: `GroupSwitcher.switch(G)` in a process that built the switcher beforehand (as an Airflow
  worker that has imported the project), until it returns.
`proven s` is until the offsets are committed on the target, read back and every partition proven (the
report stored after that is not included), `exit s` until the process exited (or `switch()` returned).

Each figure is measured for every `--code` given (a folder holding a `mirror_engine` package, e.g. an
earlier commit exported with `git archive`; default: this checkout), runs alternating between them, and with
two states of Python's bytecode cache: `cached` (every module imported from its compiled bytecode, as on a
machine that ran the command before) and `none` (the installed packages and the project compiled from
source at every start, as here after `uv pip install` with PYTHONDONTWRITEBYTECODE=1; the standard library
from its bytecode). Neither depends on what the checkout's or the virtualenv's `__pycache__` hold: each
state is a `PYTHONPYCACHEPREFIX` of its own.

Where the time goes comes from `bench/startup_trace.py` (the CLI with a time stamp on each start-up step):
the start-up part makes `--traced-runs` more runs through it; every CLI switch goes through it (the moment
its proof is done is seen only from inside). The in-process switches time the same steps.

    .venv/bin/python bench/startup_and_switch.py                        # 5 runs of each
    .venv/bin/python bench/startup_and_switch.py --part switch --runs 3
    .venv/bin/python bench/startup_and_switch.py --code before=/tmp/before --code after=/tmp/after
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from harness import (
    EndOffsets,
    create_topics,
    launch,
    print_table,
    stop,
    stop_clusters,
    wait_for_group_coordinator,
    write_plan,
)
from scale_figures import Code

from kafka_local.cluster import KafkaCluster, start_pair

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
ENGINE_COMMAND = str(Path(sys.executable).parent / "mirror-engine")
TRACER = str(BENCH / "startup_trace.py")
BYTECODE_STATES = ("cached", "none")
# What `run` and `switch-group` import, in both layouts the code has had (those a version lacks are left out).
WARMED_MODULES = ("cli", "replication.engine", "cutover.group_switch", "prepare.sequence", "engine", "switch",
                  "prepare")

log = logging.getLogger("startup_and_switch")


# ------------------------------------------------------------------ what runs: code and bytecode
class Bytecode:
    """One `PYTHONPYCACHEPREFIX` per bytecode state, filled once: `cached` holds every module the commands import,
    `none` only the standard library's."""

    def __init__(self, workdir: Path, codes: list[Code]) -> None:
        self.prefixes = {state: workdir / f"pycache-{state}" for state in BYTECODE_STATES}
        for code in codes:
            subprocess.run([sys.executable, "-c", self._warm(code)], check=True, cwd=workdir,
                           env=self._env(code, self.prefixes["cached"], write=True))
        stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
        shutil.copytree(self.prefixes["cached"] / stdlib.relative_to("/"),
                        self.prefixes["none"] / stdlib.relative_to("/"))

    @staticmethod
    def _warm(code: Code) -> str:
        """The import of the modules the commands use, in the layout `code` has (the package layout since 2026-11,
        or the flat one before it): a module the version lacks is not imported from this checkout instead."""
        root = (code.path or ROOT) / "mirror_engine"
        modules = [name for name in WARMED_MODULES
                   if (root / name.replace(".", "/")).with_suffix(".py").is_file()
                   or (root / name.replace(".", "/") / "__init__.py").is_file()]
        return "import " + ", ".join(f"mirror_engine.{name}" for name in modules)

    def env(self, code: Code, state: str) -> dict[str, str]:
        return self._env(code, self.prefixes[state], write=False)

    @staticmethod
    def _env(code: Code, prefix: Path, write: bool) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        env["PYTHONPYCACHEPREFIX"] = str(prefix)
        if write:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        if code.path is not None:
            env["PYTHONPATH"] = str(code.path)
        return env


def parse_trace(path: Path) -> list[tuple[float, float, str]]:
    """(s since launch, s taken, step) of each TRACE line a traced child wrote."""
    steps = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("TRACE "):
            _, at, took, step = line.split(" ", 3)
            steps.append((int(at) / 1000, int(took) / 1000, step))
    return steps


@dataclass
class Samples:
    """Seconds per run of one configuration; traced runs add their steps."""

    values: list[float] = field(default_factory=list)
    steps: list[list[tuple[float, float, str]]] = field(default_factory=list)

    def cells(self, values: list[float] | None = None) -> list[str]:
        values = self.values if values is None else values
        if not values:
            return ["-", "-", "-"]
        return [f"{statistics.median(values):.2f}", f"{min(values):.2f}", f"{max(values):.2f}"]


def step_table(traces: list[list[tuple[float, float, str]]], until: dict[str, list[float]]) -> list[list[str]]:
    """Median time since launch at which each step ended and its median duration, in the order of the first trace;
    a step called several times in a run is summed. `until` adds measured end points (e.g. seen from outside)."""
    order: list[str] = []
    ends: dict[str, list[float]] = {}
    took: dict[str, list[float]] = {}
    for trace in traces:
        runs: dict[str, tuple[float, float]] = {}
        for at, duration, step in trace:
            if step not in order:
                order.append(step)
            last, total = runs.get(step, (0.0, 0.0))
            runs[step] = (max(last, at), total + duration)
        for step, (at, duration) in runs.items():
            ends.setdefault(step, []).append(at)
            took.setdefault(step, []).append(duration)
    rows = [[step, f"{statistics.median(ends[step]):.3f}", f"{statistics.median(took[step]):.3f}",
             f"{len(ends[step])}/{len(traces)}"] for step in order]
    rows += [[name, f"{statistics.median(values):.3f}", "", f"{len(values)}/{len(traces)}"]
             for name, values in until.items() if values]
    return rows


# ------------------------------------------------------------------ the clusters' side
def write_records(cluster: KafkaCluster, topic: str, count: int, partitions: int, start: int = 0) -> None:
    producer = Producer({**cluster.client_config(), "linger.ms": 20, "acks": "all"})
    for i in range(start, start + count):
        producer.produce(topic, b"%08d" % i + b"x" * 92, b"k%d" % i, i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60):
        raise RuntimeError(f"records for {topic} were not acknowledged within 60 s")


class LiveProducer(threading.Thread):
    """Writes `rate` records/s to `topic` until `halt` is set."""

    def __init__(self, cluster: KafkaCluster, topic: str, partitions: int, rate: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.partitions, self.rate = cluster, topic, partitions, rate
        self.halt = threading.Event()

    def run(self) -> None:
        producer = Producer({**self.cluster.client_config(), "linger.ms": 5})
        i = 0
        while not self.halt.is_set():
            for _ in range(max(1, self.rate // 20)):
                producer.produce(self.topic, b"live-%d" % i, b"k%d" % i, i % self.partitions)
                i += 1
            producer.poll(0)
            time.sleep(0.05)
        producer.flush(30)


def stop_at_live_end(cluster: KafkaCluster, group: str, topic: str, read_s: float = 1.0) -> float:
    """A group reads the live topic from its end for `read_s`, commits, and leaves: the monotonic time it is gone."""
    consumer = Consumer({**cluster.client_config(), "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "latest", "log_level": 0})
    consumer.subscribe([topic])
    started = None
    while started is None or time.monotonic() - started < read_s:
        for message in consumer.consume(500, timeout=0.1):
            if started is None and message.error() is None:
                started = time.monotonic()
    consumer.commit(asynchronous=False)
    consumer.close()
    return time.monotonic()


# ------------------------------------------------------------------ start-up
@dataclass
class StartupSetup:
    workdir: Path
    source: KafkaCluster
    target: KafkaCluster
    partitions: int
    backlog: int
    ends: EndOffsets
    written: int = 0
    fresh: int = 0

    def restart_plan(self) -> Path:
        return write_plan(self.workdir / "startup.yaml", self.source, self.target, name="startup",
                          topics={"include": ["orders"]})

    def new_plan(self) -> tuple[Path, str]:
        self.fresh += 1
        topic = f"fresh-{self.fresh}"
        create_topics(self.source, [topic], self.partitions)
        write_records(self.source, topic, self.backlog, self.partitions)
        plan = write_plan(self.workdir / f"{topic}.yaml", self.source, self.target, name=topic.replace("-", ""),
                          topics={"include": [topic]})
        return plan, topic


def first_record(setup: StartupSetup, scenario: str, command: list[str], env: dict[str, str],
                 log_file: Path) -> float:
    """Launch the engine with a backlog waiting; seconds from the launch to its first record on the target."""
    if scenario == "restart":
        write_records(setup.source, "orders", setup.backlog, setup.partitions, setup.written)
        setup.written += setup.backlog
        plan, topic = setup.restart_plan(), "orders"
    else:
        plan, topic = setup.new_plan()
    before = setup.ends.total(topic, setup.partitions)
    process, launched = launch([*command, "run", "--plan", str(plan)], env, setup.workdir, log_file)
    try:
        seen = setup.ends.wait_beyond(topic, setup.partitions, before, lambda: process.poll() is None)
    finally:
        code = stop(process)
    if code not in (0, -signal.SIGTERM):
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-20:])
        raise RuntimeError(f"the engine exited with {code}:\n{tail}")
    return seen - launched


def startup_part(args: argparse.Namespace, workdir: Path, source: KafkaCluster, target: KafkaCluster,
                 codes: list[Code], bytecode: Bytecode) -> None:
    setup = StartupSetup(workdir, source, target, args.partitions, args.backlog, EndOffsets(target))
    create_topics(source, ["orders"], args.partitions)
    write_records(source, "orders", args.backlog, args.partitions)
    setup.written = args.backlog
    # The flow's first run: its internal topics, target topic and progress exist from here on.
    subprocess.run([ENGINE_COMMAND, "run", "--plan", str(setup.restart_plan()), "--until-caught-up"], check=True,
                   cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=bytecode.env(Code("this checkout", None), "cached"))
    results: dict[tuple[str, str, str], Samples] = {}
    traces: dict[str, Samples] = {}
    log_file = workdir / "engine-startup.log"
    for run in range(args.runs + args.traced_runs):
        traced = run >= args.runs
        for code in codes if run % 2 == 0 else codes[::-1]:
            for scenario in ("restart", "new plan"):
                for state in BYTECODE_STATES if not traced else ("cached",):
                    command = [sys.executable, TRACER] if traced else [ENGINE_COMMAND]
                    seconds = first_record(setup, scenario, command, bytecode.env(code, state), log_file)
                    log.info("start-up %s, %s, bytecode %s%s: first record after %.2f s", code.label, scenario,
                             state, " (traced)" if traced else "", seconds)
                    if traced:
                        samples = traces.setdefault(f"{code.label}, {scenario}", Samples())
                        samples.steps.append(parse_trace(log_file))
                        samples.values.append(seconds)
                    else:
                        results.setdefault((code.label, scenario, state), Samples()).values.append(seconds)
    print_table(
        f"start-up: `mirror-engine run` to its first record on the target ({args.partitions} partitions, "
        f"{args.backlog:,} records waiting; {args.runs} runs each)",
        ["code", "scenario", "bytecode", "median s", "min s", "max s"],
        [[code, scenario, state, *samples.cells()] for (code, scenario, state), samples in results.items()],
        ["restart: the plan's flow ran before (internal topics, target topic and progress exist); new plan: a plan "
         "never run, on a topic of its own (its internal topics and target topic are created first)",
         "bytecode cached: every module from its compiled bytecode; none: the installed packages and the project "
         "compiled from source at each start (the standard library from its bytecode)"])
    for name, samples in traces.items():
        print_table(f"where the start-up time goes: {name}, bytecode cached ({len(samples.steps)} traced runs, "
                    "medians)", ["step", "done at s", "took s", "in runs"],
                    step_table(samples.steps, {"first record seen on the target (from outside)": samples.values}))


# ------------------------------------------------------------------ switch
SERVE_SWITCH = "--serve-switch"


def serve_switch(plan_file: str) -> int:
    """The in-process way: build a GroupSwitcher once, then switch each group named on stdin, one JSON line each."""
    from startup_trace import STEPS, install

    from mirror_engine.cutover import GroupSwitcher
    from mirror_engine.kafka import describe_plan_clusters
    from mirror_engine.plan import load_plan

    plan = load_plan(plan_file)
    source_config, target_config = plan.client_configs()
    describe_plan_clusters(plan, source_config, target_config)
    steps: list[tuple[str, float, float]] = []
    install([step for step in STEPS if step[0] in ("mirror_engine.cutover.group_switch",
                                                   "mirror_engine.cutover.ready_to_switch",
                                                   "mirror_engine.observe.reports")
             and "__init__" not in step[1]],
            lambda step, began, ended: steps.append((step, began, ended)))
    switcher = GroupSwitcher(plan, source_config, target_config)
    print(json.dumps({"ready": True}), flush=True)
    while group := sys.stdin.readline().strip():
        steps.clear()
        began = time.time()
        report = switcher.switch(group, timeout_s=120)
        ended = time.time()
        print(json.dumps({"ok": report.ok, "report": json.loads(report.to_json()),
                          "steps": [(step, (end - began), (end - start)) for step, start, end in steps],
                          "seconds": ended - began}), flush=True)
    return 0


class SwitchServer:
    """A child process running `serve_switch` with one version of the code."""

    def __init__(self, code: Code, env: dict[str, str], plan: Path, workdir: Path) -> None:
        self.code = code
        with open(workdir / f"serve-{code.label}.log", "wb") as errors:
            self.process = subprocess.Popen([sys.executable, str(BENCH / "startup_and_switch.py"), SERVE_SWITCH,
                                             str(plan)], env=env, cwd=workdir, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=errors, text=True, start_new_session=True)
        if not json.loads(self._line())["ready"]:
            raise RuntimeError("the switch server did not start")

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the switch server ({self.code.label}) exited: see its log")
        return line

    def switch(self, group: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(group + "\n")
        self.process.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        stop(self.process, 30)


Steps = list[tuple[float, float, str]]  # (s since the group left the source, s taken, step)


@dataclass
class Switched:
    exit_s: float  # the process exited, or switch() returned
    proven_s: float  # the offsets committed, read back and every partition proven
    report: dict[str, Any]
    steps: Steps


def switch_by_cli(code: Code, env: dict[str, str], plan: Path, group: str, left_at: float, workdir: Path) -> Switched:
    """`mirror-engine switch-group`, through the tracer (the CLI with a time stamp per step)."""
    report_file, log_file = workdir / f"{group}.json", workdir / f"{group}.log"
    process, launched = launch([sys.executable, TRACER, "switch-group", "--plan", str(plan), "--group", group,
                                "--timeout", "120", "--report", str(report_file)], env, workdir, log_file)
    exit_code = process.wait(180)
    done = time.monotonic()
    if exit_code != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-20:])
        raise RuntimeError(f"switch-group ({code.label}) exited with {exit_code}:\n{tail}")
    steps = [(at + launched - left_at, took, step) for at, took, step in parse_trace(log_file)]
    steps.append((done - left_at, 0.0, "process exited"))
    return Switched(done - left_at, _proven(steps), json.loads(report_file.read_text()), steps)


def switch_in_process(server: SwitchServer, group: str, left_at: float) -> Switched:
    answer = server.switch(group)
    done = time.monotonic()
    began = done - answer["seconds"] - left_at
    steps = [(began + end, took, step) for step, end, took in answer["steps"]]
    steps.append((done - left_at, 0.0, "switch() returned"))
    return Switched(done - left_at, _proven(steps), answer["report"], steps)


def _proven(steps: Steps) -> float:
    return max((at for at, _took, step in steps if step == "every partition proven"), default=float("nan"))


def switch_part(args: argparse.Namespace, workdir: Path, source: KafkaCluster, target: KafkaCluster,
                codes: list[Code], bytecode: Bytecode) -> None:
    topic = "payments"
    create_topics(source, [topic], args.partitions)
    write_records(source, topic, 1000, args.partitions)
    for cluster in (source, target):
        wait_for_group_coordinator(cluster)
    settings = {"progress_interval_s": args.progress_interval} if args.progress_interval else {}
    plan = write_plan(workdir / "switch.yaml", source, target, name="switch", topics={"include": [topic]},
                      groups={"include": ["sw-.*"]}, engine=settings)
    engine_env = bytecode.env(Code("this checkout", None), "cached")
    engine, _ = launch([ENGINE_COMMAND, "run", "--plan", str(plan)], engine_env, workdir, workdir / "engine-switch.log")
    live = LiveProducer(source, topic, args.partitions, args.rate)
    servers: list[SwitchServer] = []
    results: dict[tuple[str, str, str], list[Switched]] = {}
    groups = 0
    try:
        EndOffsets(target).wait_beyond(topic, args.partitions, 999, lambda: engine.poll() is None)
        live.start()
        servers = [SwitchServer(code, bytecode.env(code, "cached"), plan, workdir) for code in codes]
        ways = [("CLI", state) for state in BYTECODE_STATES] + [("in-process", "cached")]
        pairs = list(zip(codes, servers, strict=True))
        for run in range(args.runs):
            for code, server in pairs if run % 2 == 0 else pairs[::-1]:
                for way, state in ways:
                    groups += 1
                    group = f"sw-{groups}"
                    left_at = stop_at_live_end(source, group, topic)
                    if way == "CLI":
                        switched = switch_by_cli(code, bytecode.env(code, state), plan, group, left_at, workdir)
                    else:
                        switched = switch_in_process(server, group, left_at)
                    if not switched.report["ok"]:
                        raise RuntimeError(f"group {group} was switched but not proven: {switched.report}")
                    log.info("switch %s, %s, bytecode %s: proven %.2f s, exit %.2f s", code.label, way, state,
                             switched.proven_s, switched.exit_s)
                    results.setdefault((code.label, way, state if way == "CLI" else "-"), []).append(switched)
    finally:
        live.halt.set()
        for server in servers:
            server.close()
        stop(engine)
    rows = []
    for (code_label, way, state), runs in results.items():
        proven, exits = Samples([r.proven_s for r in runs]), Samples([r.exit_s for r in runs])
        report = [r.report for r in runs]
        rows.append([code_label, way, state, *proven.cells(), exits.cells()[0],
                     f"{statistics.median(r['wait_copied_s'] for r in report):.2f}",
                     f"{statistics.median(r['switch_s'] - r['committed_s'] for r in report):.2f}"])
    print_table(
        f"switch: a group over {args.partitions} partitions, stopped at the live end ({args.rate:,} records/s written; "
        f"engine.progress_interval_s {args.progress_interval or 'default'}; {args.runs} runs each)",
        ["code", "way", "bytecode", "proven median s", "min s", "max s", "exit median s", "waited for copy s",
         "proof s"],
        rows,
        ["times from the group leaving the source; proven: its offsets committed on the target, read back and every "
         "partition proven; exit: the process exited (CLI, with the report stored) or switch() returned",
         "waited for copy: until the engine's stored progress covered the group's offsets (the engine stores it "
         "every engine.progress_interval_s); proof: reading the records before and at each position on both "
         "clusters"])
    for (code_label, way, state), runs in results.items():
        if state != "none":
            print_table(f"where the switch's time goes: {code_label}, {way} ({len(runs)} runs, medians, from the group "
                        "leaving the source)", ["step", "done at s", "took s", "in runs"],
                        step_table([r.steps for r in runs], {}))


# ------------------------------------------------------------------ main
def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == SERVE_SWITCH:
        sys.exit(serve_switch(sys.argv[2]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("startup", "switch", "all"), default="all")
    parser.add_argument("--runs", type=int, default=5, help="runs of each configuration")
    parser.add_argument("--traced-runs", type=int, default=3, help="more runs through bench/startup_trace.py")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--backlog", type=int, default=20_000, help="records waiting when the engine starts")
    parser.add_argument("--rate", type=int, default=1_000, help="records/s written while groups switch")
    parser.add_argument("--progress-interval", type=float,
                        help="the switch part's engine.progress_interval_s (default: the plan's default)")
    parser.add_argument("--code", type=Code.parse, action="append", default=[],
                        help="LABEL=FOLDER: also run the mirror_engine package in FOLDER (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, plans, reports)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each run")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s")
    codes = args.code or [Code("this checkout", None)]
    workdir = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    source = target = None
    try:
        bytecode = Bytecode(workdir, codes)
        source, target = start_pair(workdir / "clusters")
        if args.part in ("startup", "all"):
            startup_part(args, workdir, source, target, codes, bytecode)
        if args.part in ("switch", "all"):
            switch_part(args, workdir, source, target, codes, bytecode)
    finally:
        if source is not None and target is not None:
            stop_clusters([source, target])
        if args.keep:
            print(f"\nwork folder kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
