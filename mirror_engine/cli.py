"""`mirror-engine`: the command line of the migration engine."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from mirror_engine.clusters import ClusterUnreachable, describe_cluster


def _cmd_describe(args: argparse.Namespace) -> int:
    info = describe_cluster(args.alias, {"bootstrap.servers": args.bootstrap})
    print(json.dumps(info.__dict__))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mirror-engine", description="Kafka cluster migration engine")
    parser.add_argument("-v", "--verbose", action="store_true")
    commands = parser.add_subparsers(dest="command", required=True)

    describe = commands.add_parser("describe", help="ask a cluster for its id, brokers and topic count")
    describe.add_argument("--bootstrap", required=True)
    describe.add_argument("--alias", default="cluster")
    describe.set_defaults(handler=_cmd_describe)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        return args.handler(args)
    except (ClusterUnreachable, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
