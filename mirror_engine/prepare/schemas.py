"""Preparing the target registry: the subjects of the plan's topics, every version in order (references first)
and the compatibility levels, planned, shown as a dry run, then applied (`prepare_schemas`, which the CLI's
`schemas` command calls)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mirror_engine.kafka import admin_client
from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.schemas import SchemaMovePlan, mover_for

__all__ = ["SchemaPreparation", "prepare_schemas"]


@dataclass
class SchemaPreparation:
    subjects: list[str]
    plan: SchemaMovePlan
    applied: bool = False
    refused: list[str] = field(default_factory=list)  # a sentence per subject that could not move

    def lines(self) -> list[str]:
        moved = self.plan.versions
        summary = (f"schemas: {len(self.plan.subjects)} subject(s), {moved} version(s) for the plan's topics"
                   + (" (applied)" if self.applied else ""))
        return [summary, *self.plan.lines()] if not self.applied else [summary, *self.refused]


def prepare_schemas(plan: MigrationPlan, source_config: dict[str, str], apply: bool,
                    topics: list[str] | None = None) -> SchemaPreparation:
    """Plan the move of the subjects of the plan's source topics (`topics`, else those of the source now) and,
    with `apply`, make the target registry hold them; refused as a whole before any change where the plan's
    choice of ids cannot be kept (`SchemaMovePlan.refused`)."""
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
    return preparation
