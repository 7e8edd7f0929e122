"""MirrorMaker 2 compatibility: reading MM2 properties files into a plan (settings catalogue, naming, Java properties,
config providers, client settings), MM2's record formats, and plan references (a YAML plan or a flow of an MM2
file, as the DAGs name them)."""

from mirror_engine.mm2.config_providers import ConfigProviderError, ConfigProviders
from mirror_engine.mm2.formats import Checkpoint, Heartbeat, Mm2FormatError, OffsetSync
from mirror_engine.mm2.plan_reference import MM2_SUFFIX, PlanReference, flow_references
from mirror_engine.mm2.properties import PropertiesError, load_properties, parse_properties_text
from mirror_engine.mm2.reader import (
    Mm2Import,
    Mm2PlanError,
    import_mm2_flows,
    import_mm2_properties,
    load_mm2_config,
    parse_properties,
    plan_from_mm2_properties,
    read_mm2_config,
    read_mm2_flows,
)
from mirror_engine.mm2.settings import CONNECTOR, SECURITY

__all__ = [
    "CONNECTOR",
    "MM2_SUFFIX",
    "SECURITY",
    "Checkpoint",
    "ConfigProviderError",
    "ConfigProviders",
    "Heartbeat",
    "Mm2FormatError",
    "Mm2Import",
    "Mm2PlanError",
    "OffsetSync",
    "PlanReference",
    "PropertiesError",
    "flow_references",
    "import_mm2_flows",
    "import_mm2_properties",
    "load_mm2_config",
    "load_properties",
    "parse_properties",
    "parse_properties_text",
    "plan_from_mm2_properties",
    "read_mm2_config",
    "read_mm2_flows",
]
