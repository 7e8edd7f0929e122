"""The rewrite of copied records under the plan's schema registries, for every writer of the target (the engine,
the Spark backfill) and every reader comparing both sides (reconciliation, proofs, validation): one per topic,
(key, value) -> (key, value), or None where a plan has no registries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mirror_engine.plan import MigrationPlan, SchemasSpec
from mirror_engine.schemas.framing import CopyUnmapped, IdTranslation, StopAtUnmapped
from mirror_engine.schemas.moves import SchemaMover
from mirror_engine.schemas.registry_client import RegistryClient

__all__ = ["RecordRewrite", "RecordRewrites", "mover_for"]

RecordRewrite = Callable[[bytes | None, bytes | None], tuple[bytes | None, bytes | None]]


def mover_for(spec: SchemasSpec) -> SchemaMover:
    """The plan's registries as clients, and what moves between them."""
    source, target = spec.registry_settings()
    return SchemaMover(spec, RegistryClient(source, name="source"), RegistryClient(target, name="target"))


class RecordRewrites:
    """Each topic's rewrite: its framed parts' ids translated, the schemas they name moved to the target first
    (mid-run too). Asks the registries nothing until a topic's first record."""

    def __init__(self, mover: SchemaMover, read_only: bool = False) -> None:
        """`read_only`: for comparing both sides (validation): ids are looked up on the target, never moved, and a
        part whose id does not map is compared as it is (counted in `unmapped`)."""
        self.mover = mover
        rule = CopyUnmapped() if read_only or mover.spec.unknown_ids == "copy" else StopAtUnmapped()
        self.translation = IdTranslation(mover.known_target_id if read_only else mover.target_id_of, rule, mover.ids)
        self._of: dict[str, RecordRewrite] = {}

    @classmethod
    def for_plan(cls, plan: MigrationPlan) -> RecordRewrites | None:
        return None if plan.schemas is None else cls(mover_for(plan.schemas))

    @staticmethod
    def shipped(plan: MigrationPlan) -> dict[str, Any] | None:
        """What a process elsewhere (a Spark task) builds the plan's rewrites from (`from_shipped`): the section and
        both registries' settings, resolved here, where the plan's environment is."""
        if plan.schemas is None:
            return None
        source, target = plan.schemas.registry_settings()
        return {"spec": plan.schemas.model_dump(), "source": source, "target": target}

    @classmethod
    def from_shipped(cls, shipped: dict[str, Any] | None, read_only: bool = False) -> RecordRewrites | None:
        if shipped is None:
            return None
        spec = SchemasSpec.model_validate(shipped["spec"])
        return cls(SchemaMover(spec, RegistryClient(shipped["source"], name="source"),
                               RegistryClient(shipped["target"], name="target")),
                   read_only)

    def of(self, topic: str) -> RecordRewrite:
        rewrite = self._of.get(topic)
        if rewrite is None:
            rewrite = self._of[topic] = self.translation.record_rewrite(self.mover.framing(topic))
        return rewrite

    @property
    def unmapped(self) -> int:
        """Records copied as they were because their id did not map (`schemas.unknown_ids: copy`)."""
        return getattr(self.translation.rule, "count", 0)
