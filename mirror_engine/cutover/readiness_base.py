"""What a readiness check answers, and the base every check builds on: the conditions behind Airflow's sensors and
the switches' waits, asked one poll at a time (`readiness`, `ready_to_switch`).

Each check holds its clients open from its first `check()` to `close()`, reads only what changed since the
last poll where it can (the flow's mapping, control and status topics), and answers a `Readiness`: done or
not, one line saying what it waits for and how far it is, and a reason when the wait can never end well
(a stopped partition, a group active on the target), so a wait fails at once instead of at its timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AclBindingFilter, AdminClient

from mirror_engine.kafka import Acl
from mirror_engine.observe import FlowWatch
from mirror_engine.plan import MigrationPlan

SHOWN = 8  # partitions or groups named in one progress line; the rest are counted
RUN_FENCE = "fence (the run's fence param)"  # how a migration run asks for fences


@dataclass(frozen=True)
class Readiness:
    done: bool
    progress: str  # what is waited for and how far it is, for a person reading the task log
    failed: str = ""  # set when waiting longer cannot help
    detail: dict[str, Any] = field(default_factory=dict)  # small and JSON-able (it becomes the sensor's XCom)


def named(items: list[str]) -> str:
    more = len(items) - SHOWN
    return ", ".join(items[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def acl_in_force(admin: AdminClient, acl: Acl) -> bool:
    binding = acl.to_binding()
    query = AclBindingFilter(binding.restype, binding.name, binding.resource_pattern_type, binding.principal,
                             binding.host, binding.operation, binding.permission_type)
    return bool(admin.describe_acls(query, request_timeout=15).result())


class ReadinessCheck:
    """Base: built from the plan and both clusters' settings; `check()` once per poll; `close()` at the end.

    A check given a `watch` (several checks of one flow polled together, e.g. the groups of a batch) reads
    through it and leaves it open: its owner closes it."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 watch: FlowWatch | None = None) -> None:
        self.plan = plan
        self.source_config, self.target_config = source_config, target_config
        self._watch: FlowWatch | None = watch
        self._owns_watch = watch is None

    @property
    def watch(self) -> FlowWatch:
        if self._watch is None:
            self._watch = FlowWatch(self.plan, self.source_config, self.target_config)
        return self._watch

    def check(self) -> Readiness:
        raise NotImplementedError

    def close(self) -> None:
        if self._watch is not None and self._owns_watch:
            self._watch.close()

