"""The waits of the target registry's preparation: both registries answer, then the target holds every version
of the plan's subjects (`mirror_engine.prepare.prepare_schemas`, planned only: a check changes nothing)."""

from __future__ import annotations

from mirror_engine.cutover.readiness_base import Readiness, ReadinessCheck, named
from mirror_engine.plan import MigrationPlan
from mirror_engine.prepare import prepare_schemas
from mirror_engine.schemas import RegistryClient, RegistryError


class RegistriesAnswer(ReadinessCheck):
    """Both schema registries answer (one small request each: their global compatibility)."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str]) -> None:
        super().__init__(plan, source_config, target_config)
        if plan.schemas is None:
            raise ValueError("the plan names no schema registries")
        source, target = plan.schemas.registry_settings()
        self._registries = {side: RegistryClient(settings, timeout_s=5, name=side)
                            for side, settings in (("source", source), ("target", target))}

    def check(self) -> Readiness:
        silent = []
        for side, registry in self._registries.items():
            try:
                registry.compatibility()
            except RegistryError as error:
                silent.append(f"the {side} schema registry ({error})")
        if silent:
            return Readiness(False, "waiting for " + " and ".join(silent) + " to answer")
        return Readiness(True, "both schema registries answer: " + ", ".join(
            f"{side} at {registry.url}" for side, registry in self._registries.items()))


class SchemasOnTarget(ReadinessCheck):
    """The target registry holds every version of the subjects of the plan's topics; fails at once for a subject
    that cannot move (the target holds it otherwise, or refuses its next version)."""

    def check(self) -> Readiness:
        try:
            preparation = prepare_schemas(self.plan, self.source_config, apply=False)
        except RegistryError as error:
            return Readiness(False, f"waiting for the schema registries to answer ({error})")
        moves = preparation.plan
        if moves.refused:
            return Readiness(False, "", failed=moves.refused)
        refused = [f"subject {m.subject}: {m.refused}" for m in moves.subjects if m.refused]
        if refused:
            return Readiness(False, "", failed="; ".join(refused))
        lacking = [m for m in moves.subjects if m.missing and not moves.import_whole]
        if lacking or moves.import_whole:
            count = sum(len(m.missing) for m in moves.subjects)
            return Readiness(False, f"the target registry lacks {count} version(s) of "
                                    f"{len(lacking) or len(moves.subjects)} subject(s): "
                                    f"{named([m.subject for m in lacking or moves.subjects])}")
        return Readiness(True, f"the target registry holds every version of the {len(moves.subjects)} subject(s) "
                               f"of the plan's topics ({moves.versions} version(s))",
                         detail={"subjects": len(moves.subjects), "versions": moves.versions})
