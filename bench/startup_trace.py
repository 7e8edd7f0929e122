"""`mirror-engine` with a time stamp on each of its start-up steps, for `startup_and_switch.py`.

    python bench/startup_trace.py run --plan FILE            # as `mirror-engine run --plan FILE`

It imports the CLI (timed), wraps the functions that make up the start-up of `run` and of `switch-group`
so that each call prints one line to stderr when it returns, then runs the CLI's `main()` unchanged:

    TRACE <ms since launch> <ms the call took> <step>

"Since launch" counts from `STARTUP_TRACE_LAUNCHED_AT` (a `time.time()` the launching script sets just
before it starts the process), so the first line shows the interpreter's own start. Steps that do not
exist in the code being traced (it moves) are skipped; the engine's first consumed batch is marked once.
A wrapper costs a few microseconds per call.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LAUNCHED_AT = float(os.environ.get("STARTUP_TRACE_LAUNCHED_AT") or time.time())

# (module, attribute path, step name). A function imported by name into another module is wrapped where
# it is called from. Indented steps happen inside the one below them.
STEPS = [
    ("mirror_engine.cli", "load_plan_argument", "load the plan"),
    ("mirror_engine.cli", "describe_plan_clusters", "describe both clusters (CLI)"),
    ("mirror_engine.cutover.checkpoints", "Checkpointer.__init__", "  checkpointer built"),
    ("mirror_engine.cutover.checkpoint_loop", "CheckpointLease.__init__", "  checkpoint lease joined"),
    ("mirror_engine.replication.beside_the_copy", "BesideTheCopy.__init__", "what runs beside the copy built"),
    ("mirror_engine.replication.clients", "describe_cluster", "  describe one cluster (engine)"),
    ("mirror_engine.replication.clients", "ensure_internal_topics", "  internal topics check"),
    ("mirror_engine.replication.clients", "topic_limits", "  internal topics' limits"),
    ("mirror_engine.replication.clients", "EngineClients.connect", "engine clients built"),
    ("mirror_engine.flow.control", "ControlChannel.load", "control topic loaded"),
    ("mirror_engine.replication.assigner", "PartitionAssigner.load_progress", "progress loaded"),
    ("mirror_engine.prepare.reading", "describe_plan_clusters", "  describe both clusters (preparation)"),
    ("mirror_engine.prepare.reading", "list_topic_metadata", "    one cluster's topics listed"),
    ("mirror_engine.prepare.reading", "describe_topic_configs", "    topic configs described"),
    ("mirror_engine.prepare.reading", "read_acls", "    ACLs read"),
    ("mirror_engine.prepare.reading", "partition_bounds", "    target partitions' bounds"),
    ("mirror_engine.prepare.reading", "read_source_state", "  source state read"),
    ("mirror_engine.prepare.reading", "read_target_state", "  target state read"),
    ("mirror_engine.prepare.sequence", "plan_preparation", "  target preparation planned"),
    ("mirror_engine.prepare.sequence", "apply_actions", "  target changes applied"),
    ("mirror_engine.replication.target_upkeep", "TargetUpkeep.prepare", "target prepared"),
    ("mirror_engine.replication.assigner", "PartitionAssigner.plan_partitions", "source partitions listed"),
    ("mirror_engine.replication.membership", "SingleProcess.check_no_other_kind_runs", "no workers beside"),
    ("mirror_engine.replication.status_reporter", "StatusReporter.start_server", "status server started"),
    ("mirror_engine.replication.assigner", "_topic_ids", "    source topic ids"),
    ("mirror_engine.replication.assigner", "partition_bounds", "    source partitions' bounds"),
    ("mirror_engine.replication.assigner", "_learn_leaders", "    consumer's metadata"),
    ("mirror_engine.replication.target_topics", "TargetTopics.producers_ahead", "    producers' metadata"),
    ("mirror_engine.replication.assigner", "PartitionAssigner.read_ahead",
     "  (beside) source partitions, ids, offsets, leaders; producers"),
    ("mirror_engine.replication.assigner", "at_once", "  source ids and offsets, target ends and limits, at once"),
    ("mirror_engine.replication.target_topics", "TargetTopics.producers_know", "  producers' metadata"),
    ("mirror_engine.replication.target_topics", "read_limits", "  (beside) target topics' record limits read"),
    ("mirror_engine.replication.limits_gate", "read_limits", "  (beside) a batch of target topics' record limits read"),
    ("mirror_engine.replication.limits_gate", "LimitsGate._learn", "  record limits learned (a batch)"),
    ("mirror_engine.replication.assigner", "PartitionAssigner._fresh_starts", "  fresh partitions' starts"),
    ("mirror_engine.replication.assigner", "PartitionAssigner._reconcile", "  target tails reconciled"),
    # (the same two steps in `start_positions`, where they are since; the lines above time older versions)
    ("mirror_engine.replication.start_positions", "StartPositions.fresh", "  fresh partitions' starts"),
    ("mirror_engine.replication.start_positions", "StartPositions.reconcile", "  target tails reconciled"),
    ("mirror_engine.replication.record_producers", "RecordProducers.spread", "    record producers given topics"),
    ("mirror_engine.replication.side_records", "SideRecordWriter.write_progress", "    progress records produced"),
    ("mirror_engine.replication.record_producers", "RecordProducers.flush", "    producers flushed"),
    ("mirror_engine.replication.delivery", "AtLeastOnce.store_start", "  start of the new partitions stored"),
    ("mirror_engine.replication.delivery", "Transactional.store_start", "  start of the new partitions stored"),
    ("mirror_engine.replication.assigner", "PartitionAssigner.assign_new", "partitions assigned"),
    # switch-group
    ("mirror_engine.cutover.group_switch", "GroupSwitcher.__init__", "switcher built"),
    ("mirror_engine.cutover.group_switch", "describe_group", "  group described"),
    ("mirror_engine.cutover.ready_to_switch", "group_stopped", "  group stopped? (one poll)"),
    ("mirror_engine.cutover.ready_to_switch", "committed_offsets", "  group offsets read"),
    ("mirror_engine.cutover.group_switch", "FlowMapping.refresh", "  mapping refreshed"),
    ("mirror_engine.cutover.group_switch", "wait_until_ready", "stopped on the source and copied past its offsets"),
    ("mirror_engine.cutover.group_switch", "commit_offsets", "offsets committed on the target"),
    ("mirror_engine.cutover.group_switch", "list_offsets", "  source ends listed"),
    ("mirror_engine.cutover.group_switch", "GroupSwitcher._prove_all", "every partition proven"),
    ("mirror_engine.observe.reports", "ReportStore.read", "  stored reports read"),
    ("mirror_engine.cutover.group_switch", "GroupSwitcher._store", "report stored"),
]

Sink = Callable[[str, float, float], None]  # (step, began, ended), time.time() stamps


def mark(step: str, began: float, ended: float | None = None) -> None:
    ended = time.time() if ended is None else ended
    print(f"TRACE {(ended - LAUNCHED_AT) * 1000:.0f} {(ended - began) * 1000:.0f} {step}", file=sys.stderr,
          flush=True)


def _wrap(function: Callable[..., Any], step: str, sink: Sink) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            sink(step, began, time.time())

    return timed


def in_this_version(module_name: str) -> bool:
    """Whether the `mirror_engine` being traced has this module. Asked before importing one: a module missing from
    an older version's folder would else be imported from this checkout (the project's editable install finds it)
    and mix two versions in one process."""
    import mirror_engine

    relative = Path(*module_name.split(".")[1:])
    return any((Path(folder) / relative).with_suffix(".py").is_file()
               or (Path(folder) / relative / "__init__.py").is_file() for folder in mirror_engine.__path__)


def install(steps: list[tuple[str, str, str]], sink: Sink = mark) -> None:
    """Wrap each step's function so that every call reports to `sink` when it returns."""
    for module_name, path, step in steps:
        if not in_this_version(module_name):
            continue
        try:
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent)
            function = getattr(owner, name)
        except (ImportError, AttributeError):
            continue
        if isinstance(owner, type) and isinstance(owner.__dict__.get(name), staticmethod):
            setattr(owner, name, staticmethod(_wrap(function, step, sink)))
        else:
            setattr(owner, name, _wrap(function, step, sink))


def mark_first_copy(sink: Sink = mark) -> None:
    """One mark when the engine first hands consumed records to its copier."""
    if not in_this_version("mirror_engine.replication"):
        return
    from mirror_engine.replication import RecordCopier

    copy = RecordCopier.copy
    seen: list[bool] = []

    def first(self: Any, messages: list[Any]) -> None:
        if not seen and any(message.error() is None for message in messages):
            seen.append(True)
            now = time.time()
            sink(f"first records consumed ({len(messages)}; the process's CPU so far {time.process_time():.2f} s)",
                 now, now)
        copy(self, messages)

    RecordCopier.copy = first  # type: ignore[method-assign]


def mark_first_acknowledged(sink: Sink = mark) -> None:
    """One mark when the target first acknowledges a copied record (the time between the two marks is the
    producers' own start: their connections, ids and the target topics' metadata)."""
    if not in_this_version("mirror_engine.replication"):
        return
    from mirror_engine.replication import PartitionState

    callback = PartitionState.callback
    seen: list[bool] = []

    def first(self: Any, *args: Any) -> Any:
        delivered = callback(self, *args)

        def acknowledged(error: Any, message: Any) -> None:
            if not seen and error is None:
                seen.append(True)
                now = time.time()
                sink("first record acknowledged by the target", now, now)
            delivered(error, message)

        return acknowledged

    PartitionState.callback = first  # type: ignore[method-assign]


def main() -> int:
    mark("python started", LAUNCHED_AT)
    began = time.time()
    cli = importlib.import_module("mirror_engine.cli")
    mark("import mirror_engine.cli", began)
    began = time.time()
    switch = "switch-group" in sys.argv
    candidates = (["mirror_engine.cutover.group_switch", "mirror_engine.switch"] if switch
                  else ["mirror_engine.replication.engine", "mirror_engine.engine"])
    importlib.import_module(next(name for name in candidates if in_this_version(name)))
    mark("import the command's modules", began)
    install(STEPS)
    mark_first_copy()
    mark_first_acknowledged()
    sys.argv = ["mirror-engine", *sys.argv[1:]]
    return int(cli.main())


if __name__ == "__main__":
    sys.exit(main())
