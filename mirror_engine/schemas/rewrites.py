"""The rewrite of copied records under the plan's schema registries, for every writer of the target (the engine,
the Spark backfill) and every reader comparing both sides (reconciliation, proofs, validation): one per topic,
(key, value) -> (key, value), or None where a plan has no registries."""

from __future__ import annotations

from collections.abc import Callable

from mirror_engine.plan import MigrationPlan, SchemasSpec
from mirror_engine.schemas.framing import CopyUnmapped, IdTranslation, StopAtUnmapped
from mirror_engine.schemas.moves import SchemaMover
from mirror_engine.schemas.registry_client import RegistryClient

__all__ = ["RecordRewrite", "RecordRewrites", "mover_for"]

RecordRewrite = Callable[[bytes | None, bytes | None], tuple[bytes | None, bytes | None]]


def mover_for(spec: SchemasSpec) -> SchemaMover:
    """The plan's registries as clients, and what moves between them."""
    source, target = spec.registry_settings()
    return SchemaMover(spec, RegistryClient(source), RegistryClient(target))


class RecordRewrites:
    """Each topic's rewrite: its framed parts' ids translated, the schemas they name moved to the target first
    (mid-run too). Asks the registries nothing until a topic's first record."""

    def __init__(self, mover: SchemaMover) -> None:
        self.mover = mover
        rule = CopyUnmapped() if mover.spec.unknown_ids == "copy" else StopAtUnmapped()
        self.translation = IdTranslation(mover.target_id_of, rule, mover.ids)
        self._of: dict[str, RecordRewrite] = {}

    @classmethod
    def for_plan(cls, plan: MigrationPlan) -> RecordRewrites | None:
        return None if plan.schemas is None else cls(mover_for(plan.schemas))

    def of(self, topic: str) -> RecordRewrite:
        rewrite = self._of.get(topic)
        if rewrite is None:
            rewrite = self._of[topic] = self.translation.record_rewrite(self.mover.framing(topic))
        return rewrite

    @property
    def unmapped(self) -> int:
        """Records copied as they were because their id did not map (`schemas.unknown_ids: copy`)."""
        return getattr(self.translation.rule, "count", 0)
