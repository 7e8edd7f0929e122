"""Schema registries: their Confluent-compatible API, moving the migrated topics' subjects to the target registry
(plan, dry run, apply; mid-run too), and the rewrite of the schema ids in copied records (Confluent framing)."""

from mirror_engine.schemas.framing import (
    MAGIC_BYTE,
    IdTranslation,
    TopicFraming,
    UnmappedRecord,
    framed_id,
)
from mirror_engine.schemas.moves import SchemaMovePlan, SchemaMover, SubjectMove
from mirror_engine.schemas.registry_client import Reference, RegistryClient, RegistryError, Schema, SubjectVersion
from mirror_engine.schemas.rewrites import RecordRewrite, RecordRewrites, mover_for

__all__ = [
    "MAGIC_BYTE",
    "IdTranslation",
    "RecordRewrite",
    "RecordRewrites",
    "Reference",
    "RegistryClient",
    "RegistryError",
    "Schema",
    "SchemaMovePlan",
    "SchemaMover",
    "SubjectMove",
    "SubjectVersion",
    "TopicFraming",
    "UnmappedRecord",
    "framed_id",
    "mover_for",
]
