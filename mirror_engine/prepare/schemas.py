"""Preparing the target registry: the subjects of the plan's topics, every version in order (references first)
and the compatibility levels, planned, shown as a dry run, then applied (`prepare_schemas`, which the CLI's
`schemas` command calls)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mirror_engine.kafka import admin_client
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.schemas import SchemaMovePlan, mover_for

__all__ = ["SchemaPreparation", "prepare_schemas"]


SHOWN_IDS = 200  # id pairs a stored report lists; the rest are counted


@dataclass
class SchemaPreparation:
    subjects: list[str]
    plan: SchemaMovePlan
    applied: bool = False
    refused: list[str] = field(default_factory=list)  # a sentence per subject that could not move
    ids: dict[int, int] = field(default_factory=dict)  # source id -> target id, of the versions on the target

    def report(self) -> dict[str, Any]:
        """What the cockpit shows of the move (stored as the plan's `schemas` report): small at any size."""
        pairs = sorted(self.ids.items())
        return {"subjects": len(self.plan.subjects), "versions": self.plan.versions, "ids_total": len(pairs),
                "translated": sum(1 for source, target in pairs if source != target),
                "ids": [list(pair) for pair in pairs[:SHOWN_IDS]], "refused": self.refused[:SHOWN_IDS]}

    def lines(self) -> list[str]:
        moved = self.plan.versions
        summary = (f"schemas: {len(self.plan.subjects)} subject(s), {moved} version(s) for the plan's topics"
                   + (" (applied)" if self.applied else ""))
        return [summary, *self.plan.lines()] if not self.applied else [summary, *self.refused]


def prepare_schemas(plan: MigrationPlan, source_config: dict[str, str], apply: bool,
                    topics: list[str] | None = None, target_config: dict[str, str] | None = None,
                    ) -> SchemaPreparation:
    """Plan the move of the subjects of the plan's source topics (`topics`, else those of the source now) and,
    with `apply`, make the target registry hold them; refused as a whole before any change where the plan's
    choice of ids cannot be kept (`SchemaMovePlan.refused`). Applied with `target_config`, its report is stored
    on the target (`ReportStore`, kind `schemas`), where the cockpit reads it."""
    if plan.schemas is None:
        raise PlanError("schemas", ["schemas: the plan names no schema registries"])
    if topics is None:
        listed = admin_client(source_config).list_topics(timeout=30).topics
        topics = sorted(name for name in listed if plan.replicates_topic(name))
    mover = mover_for(plan.schemas)
    subjects = mover.subjects_of(topics)
    moves = mover.plan(subjects)
    preparation = SchemaPreparation(subjects, moves)
    if apply and not moves.refused:
        preparation.refused = mover.apply(moves)
        preparation.applied = True
        preparation.ids = dict(mover.ids)
        if target_config is not None:
            store = ReportStore(plan, target_config)
            try:
                store.put("schemas", "move", preparation.report())
            finally:
                store.close()
    return preparation
