"""The plan's schema registries (`schemas:`): a source and a target registry, what of them moves, and how records
stay readable on the target: their schema ids kept, or translated by every writer of the target."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from mirror_engine.plan.clusters import resolve_env
from mirror_engine.plan.errors import PlanError
from mirror_engine.plan.field_checks import StrictModel, check_regexes
from mirror_engine.security import REGISTRY_CLIENT_KEYS, SecurityError, read_registry_security


class RegistrySpec(StrictModel):
    """One side's registry: its Confluent-compatible API (`url`, e.g. `http://host:8081`, or Apicurio's
    `http://host:8080/apis/ccompat/v7`) and its client settings (`${ENV}` allowed), or an Airflow connection of
    type `schema_registry` (read by the Airflow glue, which hands the engine its settings)."""

    url: str | None = None
    conn_id: str | None = None
    client: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _checked(self) -> RegistrySpec:
        if not self.url and not self.conn_id:
            raise ValueError("give url (the registry's Confluent-compatible API) or conn_id (an Airflow connection)")
        if self.url and not self.url.startswith(("http://", "https://", "${")):
            raise ValueError(f"url {self.url!r} is not an http:// or https:// address")
        unknown = sorted(set(self.client) - REGISTRY_CLIENT_KEYS)
        if unknown:
            raise ValueError(f"client: unknown setting {unknown[0]!r}; a registry client takes "
                             f"{', '.join(sorted(REGISTRY_CLIENT_KEYS))}")
        return self

    def settings(self, where: str) -> dict[str, str]:
        """`url` and the client settings, `${ENV}` references resolved."""
        if not self.url:
            raise PlanError(where, [f"{where} names only the Airflow connection '{self.conn_id}': give url to use "
                                    "it outside Airflow"])
        settings = {"url": resolve_env(self.url, f"{where}.url").rstrip("/")}
        for key, value in self.client.items():
            settings[key] = resolve_env(value, f"{where}.client.{key}")
        try:  # read as a client reads them: a sentence naming the key now, before any request
            read_registry_security(where, settings)
        except SecurityError as error:
            raise PlanError(where, [f"{where}.client.{problem}" for problem in error.problems]) from None
        return settings


class SchemasSpec(StrictModel):
    """What moves from the source registry to the target's, and how copied records keep pointing at it."""

    source: RegistrySpec
    target: RegistrySpec
    # keep: the target holds each schema under the source's id (an empty Apicurio target through its admin
    # export/import, or a registry in IMPORT mode); translate: the target gives its own ids and every writer of
    # the target rewrites bytes 1-4 of each framed key and value.
    ids: Literal["keep", "translate"] = "translate"
    # How the migrated topics' subjects are named: topic_name (<topic>-key, <topic>-value); under the record-name
    # strategies a subject does not name its topic, so `subjects` chooses them.
    subject_strategy: Literal["topic_name", "record_name", "topic_record_name"] = "topic_name"
    subjects: list[str] = Field(default_factory=list)
    # A framed record whose id the source registry does not know, or an unframed one, in translate mode:
    # copied as it is, or its partition stopped before it with the offset named.
    unknown_ids: Literal["copy", "stop"] = "stop"
    compatibility: bool = True
    soft_deleted: bool = False

    _check = field_validator("subjects")(check_regexes)

    @model_validator(mode="after")
    def _subjects_chosen(self) -> SchemasSpec:
        if self.subject_strategy != "topic_name" and not self.subjects:
            raise ValueError(f"subject_strategy {self.subject_strategy} names subjects after records, not topics: "
                             "list the subjects to move in subjects (regexes)")
        return self

    def registry_settings(self) -> tuple[dict[str, str], dict[str, str]]:
        """(source, target) registry settings, their secrets remembered (masked in every log): from the
        environment when a launcher (an Airflow task) put them there as JSON in MIRROR_ENGINE_SOURCE_REGISTRY /
        MIRROR_ENGINE_TARGET_REGISTRY, else from the plan."""
        import json

        from mirror_engine.security import remember_secrets

        found = []
        for side, spec in (("source", self.source), ("target", self.target)):
            given = os.environ.get(f"MIRROR_ENGINE_{side.upper()}_REGISTRY")
            settings = {k: str(v) for k, v in json.loads(given).items()} if given \
                else spec.settings(f"schemas.{side}")
            remember_secrets(settings)
            found.append(settings)
        return found[0], found[1]
