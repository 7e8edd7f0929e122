"""What `mirror-engine run --mm2-config FILE` imports before it copies its first records, kept from growing back.

The start of a small migration is mostly imports and the first requests (`bench/small_migration.py`,
`bench/startup_trace.py`): a module added to that path costs every run its import. This test runs the CLI on real
brokers, records the modules loaded when the copy is given its first records, and compares them with the list
below. A module that joins the list must earn it (import it where it is used, if only some paths need it); one that
leaves it is taken off, so the list stays what the start really loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from tests.integration.plans import create_topics

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# The project's modules, and the top-level packages of its dependencies, loaded once the first records are consumed.
EXPECTED = {
    "project": [
        "mirror_engine", "mirror_engine.cli", "mirror_engine.cutover", "mirror_engine.cutover.catch_up",
        "mirror_engine.cutover.checkpoint_loop", "mirror_engine.cutover.checkpoints",
        "mirror_engine.cutover.group_batch", "mirror_engine.cutover.group_switch", "mirror_engine.cutover.outlook",
        "mirror_engine.cutover.producer_switch", "mirror_engine.cutover.proof", "mirror_engine.cutover.readiness",
        "mirror_engine.cutover.readiness_base", "mirror_engine.cutover.ready_to_switch",
        "mirror_engine.cutover.schema_readiness",
        "mirror_engine.cutover.switched", "mirror_engine.cutover.waiting", "mirror_engine.flow",
        "mirror_engine.flow.control", "mirror_engine.flow.internal_topics", "mirror_engine.flow.mapping",
        "mirror_engine.flow.offset_map", "mirror_engine.flow.progress", "mirror_engine.flow.work_units",
        "mirror_engine.kafka", "mirror_engine.kafka.acls", "mirror_engine.kafka.batches",
        "mirror_engine.kafka.clusters", "mirror_engine.kafka.concurrent_reads", "mirror_engine.kafka.fencing",
        "mirror_engine.kafka.groups", "mirror_engine.kafka.internal_reader", "mirror_engine.kafka.internal_writer",
        "mirror_engine.kafka.old_brokers", "mirror_engine.kafka.partitions", "mirror_engine.kafka.record_sizes",
        "mirror_engine.kafka.topic_names", "mirror_engine.kafka.topic_reader", "mirror_engine.kafka.topics",
        "mirror_engine.mm2", "mirror_engine.mm2.client_settings", "mirror_engine.mm2.config_providers",
        "mirror_engine.mm2.flow_set", "mirror_engine.mm2.flows", "mirror_engine.mm2.formats",
        "mirror_engine.mm2.naming", "mirror_engine.mm2.plan_builder", "mirror_engine.mm2.plan_reference",
        "mirror_engine.mm2.properties",
        "mirror_engine.mm2.reader", "mirror_engine.mm2.settings", "mirror_engine.mm2.values", "mirror_engine.observe",
        "mirror_engine.observe.flow_view", "mirror_engine.observe.flow_watch", "mirror_engine.observe.heartbeats",
        "mirror_engine.observe.http", "mirror_engine.observe.readout", "mirror_engine.observe.reports",
        "mirror_engine.observe.status", "mirror_engine.observe.validation_page", "mirror_engine.plan",
        "mirror_engine.plan.clusters", "mirror_engine.plan.errors", "mirror_engine.plan.field_checks",
        "mirror_engine.plan.filters", "mirror_engine.plan.model", "mirror_engine.plan.policy",
        "mirror_engine.plan.principals", "mirror_engine.plan.regexes", "mirror_engine.plan.registries",
        "mirror_engine.plan.schedules",
        "mirror_engine.plan.sections", "mirror_engine.plan.times", "mirror_engine.prepare",
        "mirror_engine.prepare.actions", "mirror_engine.prepare.applying", "mirror_engine.prepare.reading",
        "mirror_engine.prepare.schemas", "mirror_engine.prepare.sequence", "mirror_engine.prepare.source_access",
        "mirror_engine.prepare.target_configs",
        "mirror_engine.replication", "mirror_engine.replication.assigner", "mirror_engine.replication.beside_the_copy",
        "mirror_engine.replication.clients", "mirror_engine.replication.copier",
        "mirror_engine.replication.copy_contract", "mirror_engine.replication.delivery",
        "mirror_engine.replication.engine", "mirror_engine.replication.faults",
        "mirror_engine.replication.flow_control", "mirror_engine.replication.flow_run",
        "mirror_engine.replication.flow_set_run", "mirror_engine.replication.limits_gate",
        "mirror_engine.replication.membership", "mirror_engine.replication.memory",
        "mirror_engine.replication.metadata_sync", "mirror_engine.replication.offset_syncs",
        "mirror_engine.replication.partition_state", "mirror_engine.replication.reconcile",
        "mirror_engine.replication.record_producers", "mirror_engine.replication.refresh",
        "mirror_engine.replication.side_records", "mirror_engine.replication.start_positions",
        "mirror_engine.replication.status_reporter", "mirror_engine.replication.supervision",
        "mirror_engine.replication.target_topics", "mirror_engine.replication.target_upkeep", "mirror_engine.scheduler",
        # Small and standard-library only: urllib and ssl load at a registry's first request, never without one.
        "mirror_engine.schemas", "mirror_engine.schemas.framing", "mirror_engine.schemas.moves",
        "mirror_engine.schemas.registry_client", "mirror_engine.schemas.rewrites",
        "mirror_engine.security", "mirror_engine.security.jaas", "mirror_engine.security.java_client",
        "mirror_engine.security.job_files", "mirror_engine.security.keystores", "mirror_engine.security.librdkafka",
        "mirror_engine.security.model", "mirror_engine.security.msk_iam", "mirror_engine.security.reader",
        "mirror_engine.security.registry",
        "mirror_engine.security.secrets", "mirror_engine.version",
    ],
    "dependencies": [
        "annotated_types", "confluent_kafka", "javaproperties", "pydantic", "pydantic_core", "re2", "typing_extensions",
        "typing_inspection",
    ],
}

# Runs the CLI's main() with the copy's first call recorded: the modules loaded then go to the file named first.
RECORDING_RUN = """
import json, sys
from pathlib import Path

out = Path(sys.argv.pop(1))
from mirror_engine.replication import copier

original = copier.RecordCopier.copy

def copy(self, messages):
    if messages and not out.exists():
        out.with_suffix(".part").write_text(json.dumps(sorted(sys.modules)))
        out.with_suffix(".part").replace(out)  # whole when seen
    return original(self, messages)

copier.RecordCopier.copy = copy
from mirror_engine.cli import main
sys.argv[0] = "mirror-engine"
sys.exit(main())
"""


def loaded_at_first_copy(modules: list[str]) -> dict[str, list[str]]:
    project = sorted(name for name in modules if name == "mirror_engine" or name.startswith("mirror_engine."))
    tops = {name.split(".")[0] for name in modules}
    dependencies = sorted(top for top in tops
                          if top not in sys.stdlib_module_names and not top.startswith("_") and top != "mirror_engine")
    return {"project": project, "dependencies": dependencies}


def test_run_loads_only_the_listed_modules_before_its_first_copy(kafka_pair, unique_name, tmp_path):
    source, target = kafka_pair
    topic = f"{unique_name}-orders"
    create_topics(source, [NewTopic(topic, 2, 1)])
    producer = Producer(source.client_config())
    for i in range(10):
        producer.produce(topic, b"%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    config = tmp_path / "mm2.properties"
    config.write_text("\n".join([
        "clusters = imp, tgt",
        f"imp.bootstrap.servers = {source.bootstrap}",
        f"tgt.bootstrap.servers = {target.bootstrap}",
        "imp->tgt.enabled = true",
        f"imp->tgt.topics = {topic}",
        "sync.topic.acls.enabled = false",
        "replication.factor = 1",
        *(f"{name}.replication.factor = 1" for name in
          ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic")),
        "",
    ]))
    recorded = tmp_path / "modules.json"
    log = tmp_path / "run.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-c", RECORDING_RUN, str(recorded), "run", "--mm2-config", str(config)],
            cwd=ROOT, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not recorded.exists():
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no records copied within 90 s:\n" + log.read_text()[-3000:]
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(60)
    loaded = loaded_at_first_copy(json.loads(recorded.read_text()))
    for kind, expected in EXPECTED.items():
        added = sorted(set(loaded[kind]) - set(expected))
        gone = sorted(set(expected) - set(loaded[kind]))
        assert not added, (f"`run` now loads {added} before its first copy: import them where they are used if a "
                           "copy does not need them, or add them to EXPECTED here")
        assert not gone, f"`run` no longer loads {gone} before its first copy: take them off EXPECTED here"
