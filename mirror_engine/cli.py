"""`mirror-engine`: the command line of the migration engine."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException

from mirror_engine.flow import FLOW_ACTIONS
from mirror_engine.kafka import ClusterInfo, ClusterUnreachable, describe_cluster, describe_plan_clusters
from mirror_engine.plan import MigrationPlan, PlanError, load_plan
from mirror_engine.security import RedactingFilter, masked, printable, printable_lines, redact
from mirror_engine.version import version_line

if TYPE_CHECKING:
    from mirror_engine.failback import Failback
    from mirror_engine.prepare import ApplyResult, PreparePlan


def load_plan_argument(args: argparse.Namespace) -> MigrationPlan:
    """The plan named by --plan (YAML) or --mm2-config (a MirrorMaker 2 properties file). The MM2 reader's
    warnings are printed, one line each, also when it refuses the file (they may say why)."""
    if args.mm2_config:
        from mirror_engine.mm2 import Mm2PlanError, read_mm2_config

        try:
            imported = read_mm2_config(args.mm2_config, flow=args.flow)
        except Mm2PlanError as error:
            _print_warnings(args, error.warnings)
            raise
        _print_warnings(args, imported.warnings)
        return imported.plan
    return load_plan(args.plan)


def _failback_of(args: argparse.Namespace, trips: int | None = None) -> Failback:
    """The way back of the plan of --plan or --mm2-config (`mirror_engine.failback`); after `trips` ways (each
    --failback one more: twice, the way forward again after a way back), the last one's."""
    from mirror_engine.failback import Failback

    plan = load_plan_argument(args)
    way = Failback(plan, *_reachable(plan))
    for _trip in range(1, trips or args.failback):
        way = Failback(way.plan, *way.client_configs())
    return way


def _plan_and_clusters(args: argparse.Namespace) -> tuple[MigrationPlan, dict[str, str], dict[str, str]]:
    """The command's plan and both clusters' settings, once both answered; with --failback, the way back's plan and
    settings (it reads what was switched from the forward plan's target)."""
    if args.failback:
        way_back = _failback_of(args)
        return way_back.plan, *way_back.client_configs()
    plan = load_plan_argument(args)
    return plan, *_reachable(plan)


def load_plans_argument(args: argparse.Namespace) -> list[MigrationPlan]:
    """The plan of --plan, or of --mm2-config's --flow; without --flow, one for every flow the MM2 file enables
    (a file that enables several: active/active, hubs), as MM2's dedicated mode runs them all."""
    if not args.mm2_config or args.flow:
        return [load_plan_argument(args)]
    from mirror_engine.mm2 import Mm2PlanError, read_mm2_flows

    try:
        imports = read_mm2_flows(args.mm2_config)
    except Mm2PlanError as error:
        _print_warnings(args, error.warnings)
        raise
    if len(imports) == 1:
        _print_warnings(args, imports[0].warnings)
    return [imported.plan for imported in imports]


def _print_warnings(args: argparse.Namespace, warnings: tuple[str, ...]) -> None:
    for warning in warnings:
        print(f"warning: {printable(_in_file(args, redact(warning)))}", file=sys.stderr)


def _described(plan: MigrationPlan) -> tuple[dict[str, str], dict[str, str], tuple[ClusterInfo, ClusterInfo]]:
    """Both clusters' client settings and what they said of themselves, once each has answered (a clear error naming
    the one that did not) and they proved to be two clusters. Every command that acts on a plan's clusters starts
    here, and passes the description on rather than asking again."""
    source_config, target_config = plan.client_configs()
    log = logging.getLogger("mirror_engine.cli")
    log.debug("source '%s' client settings: %s", plan.source.alias, masked(source_config))
    log.debug("target '%s' client settings: %s", plan.target.alias, masked(target_config))
    return source_config, target_config, describe_plan_clusters(plan, source_config, target_config)


def _reachable(plan: MigrationPlan) -> tuple[dict[str, str], dict[str, str]]:
    source_config, target_config, _clusters = _described(plan)
    return source_config, target_config


def _cmd_describe(args: argparse.Namespace) -> int:
    info = describe_cluster(args.alias, {"bootstrap.servers": args.bootstrap})
    print(json.dumps(info.__dict__))
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from mirror_engine.prepare import prepare_target, render_actions, to_json

    plan = load_plan_argument(args)
    source_config, target_config, clusters = _described(plan)
    prepared = prepare_target(plan, source_config, target_config, clusters=clusters).prepared
    if args.json:
        print(to_json(prepared))
    else:
        print(f"plan '{plan.name}': {plan.source.alias} -> {plan.target.alias}, "
              f"{len(prepared.source_topics)} topic(s) replicated")
        _print_source_access(prepared)
        print(render_actions(prepared.actions))
        _print_internal_topics(prepared)
        for problem in prepared.problems:
            print(f"problem: {_in_file(args, problem)}", file=sys.stderr)
    return 1 if prepared.problems else 0


def _print_internal_topics(prepared: PreparePlan) -> None:
    """The flow's internal topics that `prepare` creates with the target topics."""
    if prepared.internal_topics:
        print(f"the flow's internal topics to create ({len(prepared.internal_topics)}, one partition each): "
              + ", ".join(sorted(prepared.internal_topics)))


def _print_source_access(prepared: PreparePlan) -> None:
    """Which syncs the source's permissions allow (stdout), and each one skipped for want of a right (stderr)."""
    if prepared.source_access:
        print(prepared.source_access.statement())
    for warning in prepared.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for note in prepared.config_notes:
        print(f"note: {note}")


def _cmd_prepare(args: argparse.Namespace) -> int:
    from mirror_engine.prepare import prepare_target, render_actions, render_result, to_json

    def planned(prepared: PreparePlan) -> None:
        _print_source_access(prepared)
        print(render_actions(prepared.actions))
        _print_internal_topics(prepared)
        for problem in prepared.problems:
            print(f"problem: {_in_file(args, problem)}", file=sys.stderr)
        if prepared.problems:
            print("nothing applied: fix the problems above first", file=sys.stderr)

    def done(result: ApplyResult) -> None:
        print(("dry-run (validated by the target, nothing changed): " if args.dry_run else "") + render_result(result))
        if args.json:
            print(to_json(result))

    plan = load_plan_argument(args)
    source_config, target_config, clusters = _described(plan)
    preparation = prepare_target(plan, source_config, target_config, clusters=clusters, dry_run=args.dry_run,
                                 apply=not args.dry_run, on_planned=planned, on_checked=done, on_applied=done)
    return 1 if preparation.refused or preparation.failed else 0


def _cmd_schemas(args: argparse.Namespace) -> int:
    from mirror_engine.prepare import prepare_schemas
    from mirror_engine.schemas import RegistryError

    plan = load_plan_argument(args)
    source_config, target_config = _reachable(plan)
    try:
        preparation = prepare_schemas(plan, source_config, apply=not args.dry_run, target_config=target_config)
    except RegistryError as error:
        print(f"error: {_in_file(args, redact(str(error)))}", file=sys.stderr)
        return 3
    for line in preparation.lines():
        print(redact(line))
    if preparation.plan.refused:
        print(f"error: {_in_file(args, preparation.plan.refused)}", file=sys.stderr)
        return 1
    return 1 if preparation.refused else 0


def _cmd_run(args: argparse.Namespace) -> int:
    """The flow's copy and what runs beside it, as MM2's dedicated mode (`run_flow`); SIGTERM stops it cleanly. An MM2
    file of several enabled flows, without --flow: each flow in a process of its own (`_run_flow_set`)."""
    from mirror_engine.replication import EngineError, default_worker_id, run_flow

    if args.failback:  # the way back's start stored first (once: a rerun goes on from its progress)
        way_back = _failback_of(args)
        print(way_back.prepare().render())
        plans = [way_back.plan]
    else:
        plans = load_plans_argument(args)
    if len(plans) > 1:
        return _run_flow_set(args, [f"{plan.source.alias}->{plan.target.alias}" for plan in plans])
    plan = plans[0]
    overrides = {name: value for name, value in (("status_port", args.status_port), ("status_host", args.status_host))
                 if value is not None}
    if overrides:
        plan = plan.model_copy(update={"engine": plan.engine.model_copy(update=overrides)})
    worker_id = (args.worker_id or default_worker_id()) if args.command == "worker" else None
    if args.failback:
        source_config, target_config = way_back.client_configs()
        clusters = describe_plan_clusters(plan, source_config, target_config)
    else:
        source_config, target_config, clusters = _described(plan)
    try:
        summary = run_flow(plan, source_config, target_config, worker_id=worker_id, clusters=clusters,
                           max_seconds=args.max_seconds, until_caught_up=args.until_caught_up)
    except EngineError as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 1
    print(json.dumps({"records": summary.records, "seconds": round(summary.seconds, 1),
                      "failed_partitions": summary.failed_partitions}))
    return 0 if summary.ok else 1


def _run_flow_set(args: argparse.Namespace, flows: list[str]) -> int:
    """`run` (or `worker`) of each flow, in a child process each, until every one has ended; 0 if all ended well."""
    from mirror_engine.replication import FlowSetRun

    if args.status_port not in (None, 0):
        print(f"error: {args.mm2_config}: --status-port {args.status_port}: {len(flows)} flows cannot share one port; "
              "leave it out (each flow serves on a free port, named in its log) or run each flow with --flow",
              file=sys.stderr)
        return 2
    options = [*(["--log-level", args.log_level] if args.log_level else []), *(["-v"] if args.verbose else [])]
    command_options = [
        *(["--max-seconds", str(args.max_seconds)] if args.max_seconds is not None else []),
        *(["--until-caught-up"] if args.until_caught_up else []),
        *(["--status-host", args.status_host] if args.status_host else []),
        *(["--worker-id", args.worker_id] if args.command == "worker" and args.worker_id else []),
    ]

    def command_of(flow: str) -> list[str]:
        return [sys.executable, "-m", "mirror_engine.cli", *options, args.command, "--mm2-config", args.mm2_config,
                "--flow", flow, *command_options]

    statuses = FlowSetRun(flows, command_of).run()
    return 0 if all(code == 0 for code in statuses.values()) else 1


def _cmd_latency(args: argparse.Namespace) -> int:
    import time

    from mirror_engine.observe import LatencyError, last_heartbeat, measure_latency

    plan = load_plan_argument(args)
    source_config, target_config = _reachable(plan)
    beat = last_heartbeat(target_config, plan)
    result: dict[str, object] = {
        "flow": f"{plan.source.alias}->{plan.target.alias}",
        "last_heartbeat_age_s": round(time.time() - beat.timestamp_ms / 1000, 1) if beat else None,
    }
    try:
        latency = measure_latency(plan, source_config, target_config, timeout_s=args.timeout)
    except LatencyError as error:
        print(json.dumps(result))
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 1
    result.update(replica=latency.replica_topic, latency_ms=round(latency.latency_ms, 1))
    print(json.dumps(result))
    return 0


def _cmd_checkpoint(args: argparse.Namespace) -> int:
    """The checkpoint loop alone. It writes only while it holds the flow's checkpoint lease (`checkpoint_loop`):
    beside a `run` or `worker` that runs the loop itself (engine.run_checkpoints) it stands by, and `--once`
    refuses, naming the process that writes them."""
    from dataclasses import asdict

    from mirror_engine.cutover import CheckpointLoop, LeaseRefused
    from mirror_engine.replication import default_worker_id

    plan = load_plan_argument(args)
    loop = CheckpointLoop(plan, *_reachable(plan), holder=f"mirror-engine-checkpoint-{default_worker_id()}")
    try:
        if not args.once:
            import signal

            signal.signal(signal.SIGTERM, lambda *_: loop.stop())
            signal.signal(signal.SIGINT, lambda *_: loop.stop())
            loop.run(max_seconds=args.max_seconds)
            return 0
        try:
            results = loop.run_once()
        except LeaseRefused as error:
            print(f"error: {redact(str(error))}", file=sys.stderr)
            return 1
    finally:
        loop.close()
    for result in results:
        print(json.dumps({**asdict(result), "committed": {f"{t}[{p}]": o for (t, p), o in result.committed.items()}}))
    return 0


def _switch_output(report: object, path: str | None) -> None:
    print(report.render())  # type: ignore[attr-defined]
    if path:
        from pathlib import Path

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(report.to_json())  # type: ignore[attr-defined]
        print(f"report written to {path}")


def _cmd_switch_group(args: argparse.Namespace) -> int:
    from mirror_engine.cutover import GroupSwitcher, SwitchError

    if args.failback and args.rollback:
        print("error: --rollback and --failback: a group moved back by the way back comes back to the target with "
              "a new migration, not a rollback; give one of them", file=sys.stderr)
        return 2
    if args.failback:
        from mirror_engine.failback import GroupSwitcherBack as switcher_class
    else:
        switcher_class = GroupSwitcher
    plan, source_config, target_config = _plan_and_clusters(args)
    switcher = switcher_class(plan, source_config, target_config,
                              fence_option="--fence" if args.fence else "cutover.fence: true in the plan")
    try:
        if args.rollback:
            report = switcher.rollback(args.group, timeout_s=args.timeout)
        else:
            report = switcher.switch(args.group, fence=args.fence or plan.cutover.fence, timeout_s=args.timeout)
    except SwitchError as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 1
    _switch_output(report, args.report)
    return 0 if report.ok else 1


def _cmd_switch_producers(args: argparse.Namespace) -> int:
    from mirror_engine.cutover import SwitchError, switch_producers

    plan, source_config, target_config = _plan_and_clusters(args)
    try:
        report = switch_producers(plan, source_config, target_config, args.topic, fence=args.fence,
                                  idle_s=args.idle_seconds, timeout_s=args.timeout)
    except SwitchError as error:
        print(f"error: {redact(str(error))}", file=sys.stderr)
        return 1
    _switch_output(report, args.report)
    return 0


def _cmd_failback(args: argparse.Namespace) -> int:
    """Where the way back of each switched partition starts, stored (or only said, with --dry-run), and the write
    fences of the switched topics lifted on the source; the commands that follow, printed."""
    trips = args.failback + 1  # this command starts the next way: given --failback, the way forward again
    way_back = _failback_of(args, trips)
    preparation = way_back.prepare(dry_run=args.dry_run)
    print(preparation.render())
    if args.json:
        print(json.dumps({"plan": way_back.plan.name, "dry_run": args.dry_run,
                          "starts": [{"topic": s.topic, "partition": s.partition, "target_position": s.target_position,
                                      "records_back": s.records_back, "source_end": s.source_end}
                                     for s in preparation.starts],
                          "already_started": [f"{t}[{p}]" for t, p in preparation.already_started],
                          "unfenced_topics": preparation.unfenced_topics}))
    if not args.dry_run:
        where = f"--plan {args.plan}" if args.plan else f"--mm2-config {args.mm2_config} --flow {args.flow}"
        print(f"next, each with `{where}{' --failback' * trips}`: run (the copy), switch-group --group G (each group), "
              "switch-producers --topic T (each topic), then flows stop")
    return 0


def _cmd_flows(args: argparse.Namespace) -> int:
    from mirror_engine.flow import ControlChannel

    plan, _source, target_config = _plan_and_clusters(args)
    state = FLOW_ACTIONS[args.action]
    ControlChannel(plan, target_config).set_flow_state(state)
    print(f"flow {plan.source.alias}->{plan.target.alias} of plan '{plan.name}': {state} "
          "(every engine of the flow applies it within a second or two)")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from mirror_engine.observe import flow_problems, read_worker_statuses, render_flow_status, replication_lag

    problems = False
    flows = [_plan_and_clusters(args)] if args.failback else \
        [(plan, *_reachable(plan)) for plan in load_plans_argument(args)]  # an MM2 file's every flow, without --flow
    for plan, source_config, target_config in flows:
        statuses = read_worker_statuses(plan, target_config, window_s=args.window)
        if args.json:
            lag = replication_lag(plan, source_config, target_config)
            print(json.dumps({"flow": f"{plan.source.alias}->{plan.target.alias}", "plan": plan.name,
                              "workers": statuses,
                              "stored_lag": {f"{t}[{p}]": n for (t, p), n in sorted(lag.items())}}))
        else:
            print(f"flow {plan.source.alias}->{plan.target.alias} of plan '{plan.name}'")
            print(render_flow_status(statuses))
        problems = problems or bool(flow_problems(statuses))
    return 1 if problems else 0


def _add_failback(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--failback", action="count", default=0,
                        help="act on the plan's way back after its cutover (target to source; see `failback`); "
                             "twice, on the way forward again after a way back, and so on")


def _add_plan_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", help="a migration plan (YAML)")
    source.add_argument("--mm2-config", help="a MirrorMaker 2 properties file")
    parser.add_argument("--flow", help="with --mm2-config: the flow to act on, as source->target (`run`, `worker` "
                                       "and `status` without it: every flow the file enables)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mirror-engine", description="Kafka cluster migration engine")
    parser.add_argument("--version", action="version", version=version_line())
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG (as --log-level DEBUG)")
    parser.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
                        help="the engine's log level (default INFO); credentials are masked at every level")
    commands = parser.add_subparsers(dest="command", required=True)

    describe = commands.add_parser("describe", help="ask a cluster for its id and broker count")
    describe.add_argument("--bootstrap", required=True)
    describe.add_argument("--alias", default="cluster")
    describe.set_defaults(handler=_cmd_describe)

    plan = commands.add_parser("plan", help="validate a plan and print the target changes it needs")
    _add_plan_source(plan)
    plan.set_defaults(handler=_cmd_plan)

    prepare = commands.add_parser("prepare", help="create topics, partitions, configs and ACLs on the target")
    _add_plan_source(prepare)
    prepare.add_argument("--dry-run", action="store_true", help="let the target validate the changes, apply none")
    prepare.set_defaults(handler=_cmd_prepare)

    schemas = commands.add_parser("schemas", help="move the subjects of the plan's topics to the target registry: "
                                                  "every version in order, references first, and compatibility")
    _add_plan_source(schemas)
    schemas.add_argument("--dry-run", action="store_true", help="print what the target registry lacks, change "
                                                                "nothing")
    schemas.set_defaults(handler=_cmd_schemas)

    run = commands.add_parser("run", help="copy all the plan's topics in this one process until stopped "
                                          "(SIGTERM stops cleanly), with heartbeats, topic, config and ACL sync "
                                          "and, with engine.run_checkpoints (an MM2 file), checkpoints and group "
                                          "offset sync, as MM2's dedicated mode")
    worker = commands.add_parser("worker", help="copy the share of the plan's partitions that the flow's worker "
                                                "group gives this process; start as many as needed, anywhere")
    for parser_ in (run, worker):
        _add_plan_source(parser_)
        parser_.add_argument("--max-seconds", type=float, help="stop after this long")
        parser_.add_argument("--status-port", type=int,
                             help="loopback port of /status and /metrics (default engine.status_port; 0: any free)")
        parser_.add_argument("--status-host", help="address to serve them on (default engine.status_host, "
                                                   "127.0.0.1)")
        _add_failback(parser_)
        parser_.set_defaults(handler=_cmd_run)
    run.add_argument("--until-caught-up", action="store_true", help="stop once everything has been copied")
    worker.add_argument("--worker-id",
                        help="this worker's name, stable across restarts in exactly-once mode (a restarted worker "
                             "then fences its predecessor's transaction at once); default host-pid")
    worker.set_defaults(until_caught_up=False)

    flows = commands.add_parser("flows", help="start, pause, resume or stop the plan's flow: every engine of it, "
                                              "wherever it runs, through the flow's control topic")
    flows.add_argument("action", choices=tuple(FLOW_ACTIONS))
    _add_plan_source(flows)
    _add_failback(flows)
    flows.set_defaults(handler=_cmd_flows)

    status = commands.add_parser("status", help="the flow's workers and lag per topic, from the status topic")
    _add_plan_source(status)
    _add_failback(status)
    status.add_argument("--window", type=float, default=300.0, help="seconds of status history to read")
    status.set_defaults(handler=_cmd_status)

    latency = commands.add_parser(
        "latency", help="the age of the flow's last heartbeat on the target, and the time a heartbeat written "
                        "to the source takes to reach the target (needs engine.replicate_heartbeats)")
    _add_plan_source(latency)
    latency.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the heartbeat")
    latency.set_defaults(handler=_cmd_latency)

    checkpoint = commands.add_parser(
        "checkpoint", help="write MM2-format checkpoints of the plan's groups and sync their offsets to the target "
                           "(while a group has no members there), every cutover.checkpoint_interval_s; stands by "
                           "while another process of the flow writes them (a run with engine.run_checkpoints)")
    _add_plan_source(checkpoint)
    checkpoint.add_argument("--once", action="store_true", help="one round, printed as JSON lines")
    checkpoint.add_argument("--max-seconds", type=float, help="stop after this long")
    checkpoint.set_defaults(handler=_cmd_checkpoint)

    switch_group = commands.add_parser(
        "switch-group", help="move a consumer group to the target at exactly its next records, verified")
    _add_plan_source(switch_group)
    _add_failback(switch_group)
    switch_group.add_argument("--group", required=True)
    switch_group.add_argument("--fence", action="store_true",
                              help="deny READ on the group on the source first, so old consumers cannot come back")
    switch_group.add_argument("--rollback", action="store_true",
                              help="move the group back from the target to the source and remove the fence")
    switch_group.add_argument("--timeout", type=float, help="seconds to wait (default cutover.wait_timeout_s)")
    switch_group.add_argument("--report", help="also write the report as JSON to this file")
    switch_group.set_defaults(handler=_cmd_switch_group)

    switch_producers = commands.add_parser(
        "switch-producers", help="wait until a topic is idle on the source (or fence writes), copy it to the end "
                                 "and stop copying it, so its producers can write to the target")
    _add_plan_source(switch_producers)
    _add_failback(switch_producers)
    switch_producers.add_argument("--topic", required=True, help="the topic's name on the source")
    switch_producers.add_argument("--fence", action="store_true", help="deny WRITE on the topic on the source")
    switch_producers.add_argument("--idle-seconds", type=float, help="default cutover.producer_idle_s")
    switch_producers.add_argument("--timeout", type=float, help="seconds to wait (default cutover.wait_timeout_s)")
    switch_producers.add_argument("--report", help="also write the report as JSON to this file")
    switch_producers.set_defaults(handler=_cmd_switch_producers)

    failback = commands.add_parser(
        "failback", help="start the way back after a cutover: each partition of the topics whose producers were "
                         "switched is copied back to the source from the first record the target received since "
                         "(stored here, copied by `run --failback`); the source's write fences of those topics "
                         "are lifted")
    _add_plan_source(failback)
    _add_failback(failback)
    failback.add_argument("--dry-run", action="store_true", help="say where the way back starts, change nothing")
    failback.set_defaults(handler=_cmd_failback)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = args.log_level or ("DEBUG" if args.verbose else "INFO")
    logging.basicConfig(level=getattr(logging, level), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
    try:
        return args.handler(args)
    except PlanError as error:
        print(f"error: {printable_lines(_in_file(args, redact(str(error))))}", file=sys.stderr)
        return 2
    except (ClusterUnreachable, KafkaException) as error:
        print(f"error: {_in_file(args, redact(str(error)))}", file=sys.stderr)
        return 3
    except RuntimeError as error:
        from mirror_engine.failback import FailbackError

        if not isinstance(error, FailbackError):
            raise
        print(f"error: {_in_file(args, redact(str(error)))}", file=sys.stderr)
        return 1


def _in_file(args: argparse.Namespace, message: str) -> str:
    """The message, naming the plan or MM2 file it comes from (once)."""
    where = getattr(args, "plan", None) or getattr(args, "mm2_config", None)
    return message if not where or str(where) in message else f"{where}: {message}"


if __name__ == "__main__":
    sys.exit(main())
