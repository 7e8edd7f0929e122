"""Moving subjects from the source registry to the target's: plan (what the target lacks, and what it holds that
stops a subject), a dry run's lines, then apply; and the same for one schema id met in a record mid-run.

A subject moves as a whole, every version in order, the subjects its versions reference first. The target may
already hold some of it: only as the source's first versions in the same order (a target subject holding
anything else is refused with a sentence, and nothing of it changes). Under `ids: translate` the target gives
its own ids and the writers rewrite records (`IdTranslation`); under `ids: keep` an empty Apicurio target takes
the source's admin export whole, and any other registry takes each version with its id in IMPORT mode.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from mirror_engine.plan import SchemasSpec, compile_any
from mirror_engine.schemas.framing import TopicFraming, UnmappedRecord
from mirror_engine.schemas.registry_client import Reference, RegistryClient, RegistryError, SubjectVersion

__all__ = ["SchemaMovePlan", "SchemaMover", "SubjectMove"]

log = logging.getLogger(__name__)

IN_FLIGHT = 8  # subjects read or moved at a time


@dataclass
class SubjectMove:
    """One subject: its source versions in order, the target version of each already there, what stops it."""

    subject: str
    versions: list[SubjectVersion]
    on_target: dict[int, int] = field(default_factory=dict)  # source version -> target version
    compatibility: str | None = None  # the source subject's own level, to set on the target
    target_compatibility: str | None = None
    refused: str | None = None

    @property
    def missing(self) -> list[SubjectVersion]:
        return [v for v in self.versions if v.version not in self.on_target]


@dataclass
class SchemaMovePlan:
    subjects: list[SubjectMove]  # referenced subjects before those referencing them
    compatibility: tuple[str | None, str | None] = (None, None)  # the global level: source's, target's
    import_whole: bool = False  # keep ids: the target takes the source's admin export
    refused: str | None = None  # the whole move cannot be done (a sentence naming the choice that works)

    def lines(self) -> list[str]:
        """What applying it would change, a line each, for the dry run."""
        if self.refused:
            return [f"schemas: refused: {self.refused}"]
        lines = []
        if self.import_whole:
            lines.append("schemas: import the source registry's export into the empty target (every subject, "
                         "version and id as on the source)")
        source_level, target_level = self.compatibility
        if source_level and source_level != target_level:
            lines.append(f"schemas: set the global compatibility to {source_level} (target: {target_level})")
        for move in self.subjects:
            if move.refused:
                lines.append(f"schemas: subject {move.subject}: refused: {move.refused}")
                continue
            missing = move.missing
            if missing and not self.import_whole:
                lines.append(f"schemas: subject {move.subject}: register version(s) "
                             f"{', '.join(str(v.version) for v in missing)} (source ids "
                             f"{', '.join(str(v.schema_id) for v in missing)})")
            if move.compatibility and move.compatibility != move.target_compatibility:
                lines.append(f"schemas: subject {move.subject}: set compatibility {move.compatibility}")
        return lines

    @property
    def versions(self) -> int:
        return sum(len(m.versions) for m in self.subjects if not m.refused)


class SchemaMover:
    """The plan's registries (`spec`), as clients; what the migrated topics' records need of them."""

    def __init__(self, spec: SchemasSpec, source: RegistryClient, target: RegistryClient) -> None:
        self.spec, self.source, self.target = spec, source, target
        self._source_subjects: set[str] | None = None
        self._source_level: str | None = None  # the source's global compatibility, read once per plan
        self.moved: dict[tuple[str, int], int] = {}  # (subject, source version) -> target version, once moved
        self.ids: dict[int, int] = {}  # source id -> target id, of the versions found or registered on the target

    # Which subjects.
    def source_subjects(self) -> set[str]:
        if self._source_subjects is None:
            self._source_subjects = set(self.source.subjects(deleted=self.spec.soft_deleted))
        return self._source_subjects

    def subjects_of(self, topics: list[str]) -> list[str]:
        """The subjects of the migrated topics' records, as the plan's strategy names them."""
        known = self.source_subjects()
        if self.spec.subject_strategy == "topic_name":
            return sorted(s for t in topics for s in (f"{t}-key", f"{t}-value") if s in known)
        chosen = compile_any(self.spec.subjects)
        return sorted(s for s in known if chosen is not None and chosen.fullmatch(s))

    def framing(self, topic: str) -> TopicFraming:
        """Which parts of the topic's records are framed, for the rewrite."""
        if self.spec.subject_strategy == "topic_name":
            known = self.source_subjects()
            return TopicFraming(key=f"{topic}-key" in known, value=f"{topic}-value" in known)
        return TopicFraming(key=False, value=True)

    # Plan.
    def plan(self, subjects: list[str]) -> SchemaMovePlan:
        self._source_level = self.source.compatibility() if self.spec.compatibility else None
        # Each subject read on both registries, IN_FLIGHT subjects at a time: a registry answers requests side by
        # side, and a thousand subjects asked one after the other took minutes.
        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            read = dict(zip(subjects, pool.map(self._subject_move, subjects), strict=True))
        moves: dict[str, SubjectMove] = {}
        order: list[SubjectMove] = []

        def visit(subject: str, path: tuple[str, ...]) -> None:
            if subject in moves or subject in path:
                return
            move = read.get(subject) or self._subject_move(subject)
            for version in move.versions:
                for reference in version.schema.references:
                    visit(reference.subject, (*path, subject))
            moves[subject] = move
            order.append(move)

        for subject in subjects:
            visit(subject, ())
        for move in order:  # a subject whose references are refused is refused too
            blocked = sorted({r.subject for v in move.versions for r in v.schema.references
                              if moves[r.subject].refused})
            if blocked and not move.refused:
                move.refused = f"it references {', '.join(blocked)}, which cannot move"
        plan = SchemaMovePlan(order, (self.source.compatibility(), self.target.compatibility())
                              if self.spec.compatibility else (None, None))
        if self.spec.ids == "keep":
            self._plan_keep(plan)
        return plan

    def _subject_move(self, subject: str) -> SubjectMove:
        live = set(self.source.versions(subject))
        listed = sorted(live | set(self.source.versions(subject, deleted=True))) if self.spec.soft_deleted \
            else sorted(live)
        versions = [self.source.version(subject, v, deleted=True) for v in listed]
        versions = [SubjectVersion(v.subject, v.version, v.schema_id, v.schema, v.version not in live)
                    for v in versions]
        move = SubjectMove(subject, versions)
        if self.spec.compatibility:
            own = self.source.compatibility(subject)
            move.compatibility = own if own != self._source_level else None
            move.target_compatibility = self.target.compatibility(subject)
        held = self.target.versions(subject, deleted=True)
        if not held:
            return move
        # The target's versions must be the source's first ones, in order.
        for version in versions[:len(held)]:
            found = self._on_target(subject, version)
            if found is None:
                break
            move.on_target[version.version] = found
        if sorted(move.on_target.values()) != held or list(move.on_target) != [v.version for v in
                                                                              versions[:len(move.on_target)]]:
            move.refused = (f"the target's subject {subject} already holds version(s) {held} that are not the "
                            f"source's first versions in order: it holds something else, and nothing of it was "
                            "changed (delete it on the target, or leave its topic out of the plan)")
            move.on_target = {}
            return move
        first_missing = next((v for v in versions if v.version not in move.on_target), None)
        if first_missing is not None and not self._compatible_on_target(subject, first_missing):
            move.refused = (f"the target refuses version {first_missing.version} of subject {subject} (source id "
                            f"{first_missing.schema_id}): it is incompatible with the subject's latest version "
                            f"under the target's compatibility ({self.target.compatibility(subject)}); nothing of "
                            "the subject was changed")
        return move

    def _on_target(self, subject: str, version: SubjectVersion) -> int | None:
        references = self._target_references(version)
        if references is None:
            return None
        found = self.target.lookup(subject, version.schema, references)
        if found is None:
            return None
        self.ids[version.schema_id] = found[0]
        return found[1]

    def _compatible_on_target(self, subject: str, version: SubjectVersion) -> bool:
        references = self._target_references(version)
        try:
            return self.target.compatible_with_latest(subject, version.schema, references or ())
        except RegistryError:
            return True  # a registry without the check: the registration itself says so

    def _target_references(self, version: SubjectVersion) -> tuple[Reference, ...] | None:
        """The version's references with the target's version numbers, None while one is not on the target."""
        mapped = []
        for reference in version.schema.references:
            target_version = self.moved.get((reference.subject, reference.version))
            if target_version is None:
                referenced = self.source.version(reference.subject, reference.version, deleted=True)
                found = self.target.lookup(reference.subject, referenced.schema, self._target_references(referenced))
                if found is None:
                    return None
                target_version = self.moved[(reference.subject, reference.version)] = found[1]
            mapped.append(Reference(reference.name, reference.subject, target_version))
        return tuple(mapped)

    def _plan_keep(self, plan: SchemaMovePlan) -> None:
        if self.target.is_apicurio():
            already = all(v.version in m.on_target for m in plan.subjects for v in m.versions)
            if not self.target.subjects(deleted=True):
                if not self.source.is_apicurio():
                    plan.refused = ("ids: keep into an Apicurio registry takes the source's admin export, and the "
                                    "source is not an Apicurio registry: choose ids: translate")
                else:
                    plan.import_whole = True
            elif not already:
                plan.refused = ("ids: keep into an Apicurio registry needs an empty target (its Confluent API "
                                "ignores explicit ids; only its admin import keeps them), and the target holds "
                                "subjects: choose ids: translate, or empty the target")
            return
        try:
            self.target.mode()
        except RegistryError as error:
            plan.refused = (f"ids: keep needs a target registry that takes explicit ids in IMPORT mode, and the "
                            f"target has no /mode ({error}): choose ids: translate")

    # Apply.
    def apply(self, plan: SchemaMovePlan) -> list[str]:
        """Make the target hold what the plan says; the sentences of the subjects that could not move."""
        if plan.refused:
            raise RegistryError(plan.refused)
        if plan.import_whole:
            self.target.import_all(self.source.export_all())
            log.info("schemas: the target imported the source registry's export (ids kept)")
        source_level, target_level = plan.compatibility
        if source_level and source_level != target_level:
            self.target.set_compatibility(source_level)
        # The subjects others reference first, one by one in order; then the rest, IN_FLIGHT at a time (each
        # subject's versions in order).
        referenced = {r.subject for m in plan.subjects for v in m.versions for r in v.schema.references}
        first = [m for m in plan.subjects if m.subject in referenced]
        rest = [m for m in plan.subjects if m.subject not in referenced]
        refused = [sentence for move in first if (sentence := self._apply_or_refuse(move, plan.import_whole))]
        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            refused += [s for s in pool.map(lambda m: self._apply_or_refuse(m, plan.import_whole), rest) if s]
        return refused

    def _apply_or_refuse(self, move: SubjectMove, imported: bool) -> str:
        """The subject made to hold the source's versions; "" or the sentence of why it could not."""
        if move.refused:
            return f"subject {move.subject}: {move.refused}"
        try:
            self._apply_subject(move, imported)
        except RegistryError as error:
            move.refused = str(error)
            return f"subject {move.subject}: {error}"
        return ""

    def _apply_subject(self, move: SubjectMove, imported: bool) -> None:
        for version in move.versions:
            known = move.on_target.get(version.version)
            if known is None and not imported:
                known = self._register(move.subject, version)
            if known is not None:
                self.moved[(move.subject, version.version)] = known
        if move.compatibility and move.compatibility != move.target_compatibility:
            self.target.set_compatibility(move.compatibility, move.subject)

    def _register(self, subject: str, version: SubjectVersion) -> int:
        references = self._target_references(version)
        if references is None:
            raise RegistryError(f"version {version.version} of subject {subject} references a schema the target "
                                "does not hold")
        if self.spec.ids == "keep":
            self.target.set_mode("IMPORT")
            try:
                given = self.target.register(subject, version.schema, references, version.schema_id,
                                             version.version)
            finally:
                self.target.set_mode("READWRITE")
            if given != version.schema_id:
                raise RegistryError(f"the target gave version {version.version} of subject {subject} id {given}, "
                                    f"not the source's {version.schema_id}: it does not keep explicit ids; choose "
                                    "ids: translate")
        else:
            self.target.register(subject, version.schema, references)
        found = self.target.lookup(subject, version.schema, references)
        if found is None:
            raise RegistryError(f"the target does not show version {version.version} of subject {subject} after "
                                "registering it")
        self.ids[version.schema_id] = found[0]
        if version.deleted:
            self.target.soft_delete(subject, found[1])
        return found[1]

    # Reading only: what a comparison of both sides needs.
    def known_target_id(self, source_id: int) -> int | None:
        """The target's id of a source schema id when the target holds its schema (under the subject the source
        holds it under first), else None; changes nothing."""
        schema = self.source.schema(source_id)
        holders = self.source.subject_versions_of(source_id) if schema is not None else []
        for subject, version in holders:
            source_version = self.source.version(subject, version, deleted=True)
            references = self._target_references(source_version)
            found = None if references is None else self.target.lookup(subject, source_version.schema, references)
            if found is not None:
                return found[0]
        return None

    # Mid-run: one id met in a record.
    def target_id_of(self, source_id: int) -> int | None:
        """The target's id of a source schema id, its subjects moved first if the target lacks them (in order,
        references first); None for an id the source registry does not know. A subject the target refuses
        raises `UnmappedRecord` with the sentence, for the partition that needs it only."""
        schema = self.source.schema(source_id)
        if schema is None:
            return None
        holders = self.source.subject_versions_of(source_id)
        self._source_subjects = None  # a schema registered since the start: its subject may be new
        plan = self.plan(sorted({subject for subject, _ in holders}))
        problems = [m.refused for m in plan.subjects if m.refused]
        if plan.refused or problems:
            raise UnmappedRecord(f"schema id {source_id} cannot move to the target registry: "
                                 f"{plan.refused or problems[0]}")
        plan.import_whole = False  # mid-run, a keep target takes versions one by one (IMPORT mode)
        refused = self.apply(plan)
        if refused:
            raise UnmappedRecord(f"schema id {source_id} cannot move to the target registry: {refused[0]}")
        subject, version = holders[0]
        target_version = self.moved[(subject, version)]
        target_id = self.target.version(subject, target_version, deleted=True).schema_id
        if self.spec.ids == "keep" and target_id != source_id:
            raise UnmappedRecord(f"schema id {source_id}, registered on the source during the migration, has id "
                                 f"{target_id} on the target: ids: keep cannot hold it; choose ids: translate")
        log.info("schemas: source schema id %d is id %d on the target (subject %s version %d)", source_id,
                 target_id, subject, target_version)
        return target_id
