"""What a finished switch left behind, read back so that a retried or cleared cutover step repeats nothing.

A group switch is finished when its verified report is stored on the target (the report is stored last, after
the commit and the proof). While the group's committed offsets on the source are still the ones that report
switched, the switch is done: doing it again would move the group back on the target to where it was switched
(records it read there since would be read again), so a second run returns the stored report and commits
nothing. A step killed before the report was stored left at most the same commit behind, and repeats it.

A producer switch is recorded in the flow's control topic; the engines never copy the topic again. A second run
commits nothing either: it proves that the source holds nothing past what was copied, or says what it holds.
"""

from __future__ import annotations

from typing import Any

from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan


def stored_report(plan: MigrationPlan, target_config: dict[str, str], kind: str, name: str,
                  store: ReportStore | None = None) -> dict[str, Any] | None:
    """The report of kind `kind` ("group-switch", "producer-switch") stored for `name`, or None; read through
    `store` when given (it reads only what is new since its last read), else through a store of its own."""
    reader = store or ReportStore(plan, target_config)
    try:
        record = reader.read(kind).get(f"{kind}:{name}")
    finally:
        if store is None:
            reader.close()
    return None if record is None else record["report"]


def switched_offsets(plan: MigrationPlan, report: dict[str, Any] | None) -> dict[TopicPartitionKey, int] | None:
    """The source offsets a stored, verified group switch from the plan's source to its target moved, or None
    when the report is not one (a rollback, a switch not verified, a report cut down to fit the store)."""
    if (report is None or report.get("truncated") or not report.get("ok")
            or report.get("direction") != f"{plan.source.alias}->{plan.target.alias}"):
        return None
    return {(row["topic"], int(row["partition"])): int(row["source_offset"]) for row in report.get("partitions", [])}


def group_already_switched(plan: MigrationPlan, target_config: dict[str, str], group: str,
                           source_offsets: dict[TopicPartitionKey, int],
                           store: ReportStore | None = None) -> dict[str, Any] | None:
    """The stored report of `group`'s switch when that switch is finished and the group has not committed on the
    source since (`source_offsets` are its committed offsets there now), else None."""
    report = stored_report(plan, target_config, "group-switch", group, store)
    switched = switched_offsets(plan, report)
    return report if switched and switched == source_offsets else None
