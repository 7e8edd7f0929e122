"""Schemas move with the data, on real brokers and real registries (Apicurio, Confluent-compatible API): records
written with confluent-kafka's own serializers on the source are read with them on the target, against the target
registry, value for value; in `ids: translate` the target's ids differ and the copies' bytes 1-4 say so, in
`ids: keep` they are the source's. A subject the target holds otherwise is refused with a sentence, unchanged."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path

import yaml
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafka_local.registry import start_registry
from mirror_engine.cli import main
from mirror_engine.cutover import GroupSwitcher
from mirror_engine.observe import FlowView
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import Replicator
from mirror_engine.schemas import RegistryClient, framed_id
from tests.integration.kafka_data import end_offsets, read_partition
from tests.integration.plans import create_topics, plan_dict

PARTITIONS = 2
ADDRESS = {"type": "record", "name": "Address", "namespace": "shop",
           "fields": [{"name": "street", "type": "string"}, {"name": "city", "type": "string"}]}
ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "long"}, {"name": "ship_to", "type": "shop.Address"}]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "note", "type": ["null", "string"],
                                                        "default": None}]}
EVENT = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
         "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind", "n"]}


PROTOBUF = {"use.deprecated.format": False}


@cache
def _payment_type() -> type:
    """A Protobuf message type as an application's generated code has it: `shop.Payment` (shop/payment.proto)
    imports `shop.Money` (shop/money.proto), which the serializer registers as a reference of its own."""
    pool = descriptor_pool.DescriptorPool()
    money = descriptor_pb2.FileDescriptorProto(name="shop/money.proto", package="shop", syntax="proto3")
    fields = money.message_type.add(name="Money").field
    fields.add(name="cents", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=1)
    fields.add(name="currency", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    pool.Add(money)
    payment = descriptor_pb2.FileDescriptorProto(name="shop/payment.proto", package="shop", syntax="proto3",
                                                 dependency=["shop/money.proto"])
    fields = payment.message_type.add(name="Payment").field
    fields.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    fields.add(name="amount", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
               type_name=".shop.Money", label=1)
    pool.Add(payment)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Payment"))


def _payments(count: int) -> list:
    payment_type = _payment_type()
    found = []
    for i in range(count):
        payment = payment_type(id=f"p{i}")
        payment.amount.cents, payment.amount.currency = 100 + i, "EUR"
        found.append(payment)
    return found


def _protobuf_reader(registry_url: str):
    """Reads a framed Protobuf value as confluent-kafka's deserializer does, from the registry's schema of its id.

    Not the deserializer itself: it asks for `/schemas/ids/N?format=serialized`, which Apicurio 3.3.3's
    Confluent-compatible API answers with a 500 for the base64 form the Python serializer registers (on the source
    registry alike, before any migration). The schema of the id must be the message's file, its reference the
    registry's `shop/money.proto`."""
    registry = RegistryClient({"url": registry_url})

    def read(data: bytes, _context: SerializationContext) -> tuple:
        schema = registry.schema(framed_id(data) or -1)
        assert schema is not None and schema.schema_type == "PROTOBUF"
        described = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema.text))
        assert described.name == "shop/payment.proto" and [r.subject for r in schema.references] == \
            ["shop/money.proto"]
        assert data[5] == 0  # message indexes [0]: the file's first message
        return described.message_type[0].name, _payment_type().FromString(data[6:])

    return read


def _schema_plan(source, target, registries, prefix: str, **schemas) -> dict:
    source_registry, target_registry = registries
    data = plan_dict(source, target, prefix)
    data["schemas"] = {"source": {"url": source_registry.url}, "target": {"url": target_registry.url}, **schemas}
    return data


def _avro_producer(cluster, registry_url: str, subject_prefix: str, order_schema: dict, version: int):
    """An application's producer of orders: the Order schema references Address (its own subject)."""
    client = SchemaRegistryClient({"url": registry_url})
    client.register_schema(f"{subject_prefix}-address", Schema(json.dumps(ADDRESS), "AVRO"))
    reference = SchemaReference("shop.Address", f"{subject_prefix}-address", 1)
    client.register_schema(f"{subject_prefix}-orders-value", Schema(json.dumps(order_schema), "AVRO", [reference]))
    registered = client.get_version(f"{subject_prefix}-orders-value", version)
    serializer = AvroSerializer(client, registered.schema, conf={"auto.register.schemas": False,
                                                                 "use.schema.id": registered.schema_id})
    return serializer


def _produce(cluster, topic: str, serializer, values: list[dict]) -> None:
    producer = Producer({**cluster.client_config(), "linger.ms": 5})
    for i, value in enumerate(values):
        data = serializer(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, data, f"k{i}".encode(), i % PARTITIONS)
    assert producer.flush(60) == 0


def _read_values(cluster, topic: str, deserializer) -> list[list]:
    """Every partition's values, deserialized, in order."""
    found = []
    for partition in range(PARTITIONS):
        found.append([deserializer(r.value, SerializationContext(topic, MessageField.VALUE))
                      for r in read_partition(cluster, topic, partition)])
    return found


def _wait_copied(target, topic: str, wanted: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(end_offsets(target, topic, PARTITIONS)) < wanted:
        assert time.monotonic() < deadline, f"{topic}: fewer than {wanted} records on the target in {timeout_s} s"
        time.sleep(0.2)


def test_translated_ids_keep_every_record_readable_on_the_target_and_new_schemas_arrive_mid_run(
        kafka_pair, registry_pair, unique_name, tmp_path, capsys):
    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    orders, events, payments = f"{unique_name}-orders", f"{unique_name}-events", f"{unique_name}-payments"
    create_topics(source, [NewTopic(t, PARTITIONS, 1) for t in (orders, events, payments)])
    # The target registry already holds other schemas: the ids it gives differ from the source's.
    for n in range(3):
        RegistryClient({"url": target_registry.url}).register(
            f"{unique_name}-other-{n}-value", _avro_schema({"type": "record", "name": f"Other{n}", "fields": []}))

    serializer = _avro_producer(source, source_registry.url, unique_name, ORDER_V1, 1)
    first = [{"id": i, "ship_to": {"street": f"s{i}", "city": "c"}} for i in range(200)]
    _produce(source, orders, serializer, first)
    source_client = SchemaRegistryClient({"url": source_registry.url})
    json_serializer = JSONSerializer(json.dumps(EVENT), source_client, conf={"auto.register.schemas": True})
    event_values = [{"kind": "click", "n": i} for i in range(100)]
    _produce(source, events, json_serializer, event_values)
    _produce(source, payments, ProtobufSerializer(_payment_type(), source_client, PROTOBUF), _payments(80))

    # A subject's own compatibility level moves with it.
    RegistryClient({"url": source_registry.url}).set_compatibility("FORWARD", f"{unique_name}-events-value")

    data = _schema_plan(source, target, registry_pair, unique_name)
    plan = plan_from_dict(data)

    # The dry run names what the target lacks and changes nothing; then the move.
    plan_path = _write_plan(data, tmp_path)
    assert main(["schemas", "--plan", str(plan_path), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert f"subject {unique_name}-address: register version(s) 1" in dry, dry
    assert f"subject {unique_name}-orders-value: register version(s) 1" in dry, dry
    assert not RegistryClient({"url": target_registry.url}).versions(f"{unique_name}-orders-value")
    assert main(["schemas", "--plan", str(plan_path)]) == 0
    assert RegistryClient({"url": target_registry.url}).versions(f"{unique_name}-orders-value") == [1]
    assert RegistryClient({"url": target_registry.url}).compatibility(f"{unique_name}-events-value") == "FORWARD"
    # What moved is kept on the target, where the cockpit's plan page reads it.
    view = FlowView(plan, source.client_config(), target.client_config())
    try:
        moved = view.snapshot()["schemas"]
    finally:
        view.close()
    assert moved["subjects"] >= 4 and moved["ids_total"] == moved["translated"] >= 4, moved

    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 180})
    runner.start()
    try:
        _wait_copied(target, orders, len(first))
        # A schema registered on the source while the migration runs: its records follow, and it reaches the
        # target registry before the first of them is copied.
        serializer_v2 = _avro_producer(source, source_registry.url, unique_name, ORDER_V2, 2)
        second = [{"id": 1000 + i, "ship_to": {"street": "x", "city": "y"}, "note": f"n{i}"} for i in range(100)]
        _produce(source, orders, serializer_v2, second)
        _wait_copied(target, orders, len(first) + len(second))
        _wait_copied(target, events, len(event_values))
        _wait_copied(target, payments, 80)
        # A group that stopped on the source switches with its proof: the records before and at its position
        # compared on both clusters, the source's as their copies were written (ids translated).
        group = f"{unique_name}-app"
        committer = Consumer({**source.client_config(), "group.id": group})
        committer.commit(offsets=[TopicPartition(orders, n, 60 + n) for n in range(PARTITIONS)], asynchronous=False)
        committer.close()
        report = GroupSwitcher(plan, source.client_config(), target.client_config()).switch(group, timeout_s=60)
        assert report.ok, report.render()
        assert [row.target_offset for row in report.partitions] == [60 + n for n in range(PARTITIONS)]
    finally:
        replicator.stop()
        runner.join(60)
    assert not replicator.faults.fatal

    # Every record read on the target with the target registry equals the source's, value for value, in order.
    target_client = SchemaRegistryClient({"url": target_registry.url})
    assert _read_values(target, orders, AvroDeserializer(target_client)) == \
        _read_values(source, orders, AvroDeserializer(source_client))
    assert _read_values(target, events, JSONDeserializer(None, schema_registry_client=target_client)) == \
        _read_values(source, events, JSONDeserializer(None, schema_registry_client=source_client))
    assert _read_values(target, payments, _protobuf_reader(target_registry.url)) == \
        _read_values(source, payments, _protobuf_reader(source_registry.url))
    assert RegistryClient({"url": target_registry.url}).versions("shop/money.proto") == [1]  # its reference
    # The ids were translated (the target's differ), and only bytes 1-4 changed; no offset moved.
    source_records = read_partition(source, orders, 0)
    target_records = read_partition(target, orders, 0)
    assert [r.offset for r in target_records] == [r.offset for r in source_records]
    pairs = {(framed_id(s.value), framed_id(t.value)) for s, t in zip(source_records, target_records, strict=True)}
    assert len(pairs) == 2 and all(s != t for s, t in pairs), pairs
    assert all(s.value[5:] == t.value[5:] and s.key == t.key for s, t in zip(source_records, target_records,
                                                                             strict=True))
    assert RegistryClient({"url": target_registry.url}).versions(f"{unique_name}-orders-value") == [1, 2]


def test_kept_ids_move_the_whole_registry_into_an_empty_target(kafka_pair, registry_pair, unique_name, tmp_path,
                                                               capsys):
    source, target = kafka_pair
    source_registry, _ = registry_pair
    empty_target = start_registry(tmp_path / "registry")
    try:
        orders, events, payments = f"{unique_name}-orders", f"{unique_name}-events", f"{unique_name}-payments"
        create_topics(source, [NewTopic(t, PARTITIONS, 1) for t in (orders, events, payments)])
        serializer = _avro_producer(source, source_registry.url, unique_name, ORDER_V1, 1)
        values = [{"id": i, "ship_to": {"street": "s", "city": f"c{i}"}} for i in range(50)]
        _produce(source, orders, serializer, values)
        source_client = SchemaRegistryClient({"url": source_registry.url})
        _produce(source, events, JSONSerializer(json.dumps(EVENT), source_client), [{"kind": "k", "n": 1}] * 20)
        _produce(source, payments, ProtobufSerializer(_payment_type(), source_client, PROTOBUF), _payments(30))
        # Into a target that already holds subjects (the session's), Apicurio cannot keep ids: refused first.
        not_empty = _write_plan(_schema_plan(source, target, registry_pair, unique_name, ids="keep"), tmp_path)
        before = RegistryClient({"url": registry_pair[1].url}).subjects()
        assert main(["schemas", "--plan", str(not_empty)]) == 1
        assert "choose ids: translate" in capsys.readouterr().err
        assert RegistryClient({"url": registry_pair[1].url}).subjects() == before
        data = _schema_plan(source, target, (source_registry, empty_target), unique_name, ids="keep")
        plan_path = _write_plan(data, tmp_path)
        assert main(["schemas", "--plan", str(plan_path), "--dry-run"]) == 0
        assert "import the source registry's export" in capsys.readouterr().out
        assert main(["schemas", "--plan", str(plan_path)]) == 0
        # A second move finds every version there, under the same ids: nothing to do.
        assert main(["schemas", "--plan", str(plan_path)]) == 0

        assert Replicator(plan_from_dict(data), source.client_config(), target.client_config()).run(
            until_caught_up=True, max_seconds=120).records == len(values) + 20 + 30
        for topic in (orders, events, payments):  # bytes as they were: the ids are the target's too
            for partition in range(PARTITIONS):
                assert [r.content() for r in read_partition(target, topic, partition)] == \
                    [r.content() for r in read_partition(source, topic, partition)]
        target_client = SchemaRegistryClient({"url": empty_target.url})
        assert _read_values(target, orders, AvroDeserializer(target_client)) == \
            _read_values(source, orders, AvroDeserializer(source_client))
        assert _read_values(target, events, JSONDeserializer(None, schema_registry_client=target_client)) == \
            _read_values(source, events, JSONDeserializer(None, schema_registry_client=source_client))
        assert _read_values(target, payments, _protobuf_reader(empty_target.url)) == \
            _read_values(source, payments, _protobuf_reader(source_registry.url))
    finally:
        empty_target.stop()


def test_a_subject_the_target_holds_otherwise_is_refused_with_a_sentence_and_left_unchanged(
        kafka_pair, registry_pair, unique_name, tmp_path, capsys):
    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    orders = f"{unique_name}-orders"
    create_topics(source, [NewTopic(orders, PARTITIONS, 1)])
    _avro_producer(source, source_registry.url, unique_name, ORDER_V1, 1)
    held = _avro_schema({"type": "record", "name": "Unrelated", "fields": [{"name": "x", "type": "int"}]})
    target_client = RegistryClient({"url": target_registry.url})
    target_client.register(f"{unique_name}-orders-value", held)
    before = target_client.versions(f"{unique_name}-orders-value")

    plan_path = _write_plan(_schema_plan(source, target, registry_pair, unique_name), tmp_path)
    assert main(["schemas", "--plan", str(plan_path)]) == 1
    out = capsys.readouterr().out
    assert f"subject {unique_name}-orders-value" in out and "holds something else" in out, out
    assert target_client.versions(f"{unique_name}-orders-value") == before
    # The subject it references moved: it stands alone.
    assert target_client.versions(f"{unique_name}-address") == [1]


def _avro_schema(schema: dict):
    from mirror_engine.schemas import Schema as RegistrySchema

    return RegistrySchema(json.dumps(schema))


def _write_plan(data: dict, folder: Path) -> Path:
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


KILL_PARTITIONS = 4
KILL_RECORDS = 400_000


def test_kill_9_during_a_translating_copy_leaves_each_record_once_with_the_target_id(
        kafka_pair, registry_pair, unique_name, tmp_path):
    """At-least-once: each restart checks the target's tail past the stored progress against the source's records
    as rewritten, and counts it as copied; compared as bytes, the tail would not match and be copied again."""
    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    topic = f"{unique_name}-crash"
    create_topics(source, [NewTopic(topic, KILL_PARTITIONS, 1)])
    for n in range(2):  # the target's ids differ from the source's
        RegistryClient({"url": target_registry.url}).register(
            f"{unique_name}-filler-{n}-value", _avro_schema({"type": "record", "name": f"F{n}", "fields": []}))
    reading = _avro_schema({"type": "record", "name": "Reading", "fields": [{"name": "v", "type": "long"}]})
    source_id = RegistryClient({"url": source_registry.url}).register(f"{topic}-value", reading)
    producer = Producer({**source.client_config(), "linger.ms": 20, "batch.size": 1 << 20})
    for i in range(KILL_RECORDS):
        while True:
            try:
                producer.produce(topic, b"\x00" + source_id.to_bytes(4, "big") + i.to_bytes(8, "big"),
                                 b"k%d" % i, i % KILL_PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0

    data = _schema_plan(source, target, registry_pair, topic)
    data["engine"] = {"progress_interval_s": 0.25}  # kills after a stored progress land early in the copy
    plan_path = _write_plan(data, tmp_path)
    command = [sys.executable, "-m", "mirror_engine.cli", "run", "--plan", str(plan_path)]
    logs = []
    for kill, share in enumerate((0.0, 0.2, 0.5)):
        log_file = tmp_path / f"run-{kill}.log"
        logs.append(log_file)
        with log_file.open("w") as log:
            engine = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        threshold = max(1, int(share * KILL_RECORDS))  # the first records written, then a fifth, then half
        deadline = time.monotonic() + 120
        while engine.poll() is None and time.monotonic() < deadline and (
                topic not in _target_topics(target) or sum(end_offsets(target, topic, KILL_PARTITIONS)) < threshold):
            time.sleep(0.005)
        assert engine.poll() is None, f"the engine exited on its own:\n{log_file.read_text()[-3000:]}"
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait()
    assert sum(end_offsets(target, topic, KILL_PARTITIONS)) < KILL_RECORDS, "the kills came too late"
    final = subprocess.run([*command, "--until-caught-up", "--max-seconds", "300"], capture_output=True, text=True,
                           timeout=400)
    assert final.returncode == 0, final.stderr[-3000:]
    restarts = [log.read_text() for log in logs[1:]] + [final.stderr]
    assert sum("counted as copied" in text for text in restarts) >= 2, restarts[-1][-3000:]
    assert not any("copying on from the stored progress" in text for text in restarts)

    target_id = RegistryClient({"url": target_registry.url}).lookup(f"{topic}-value", reading)
    assert target_id is not None and target_id[0] != source_id
    framed_target = b"\x00" + target_id[0].to_bytes(4, "big")
    for partition in range(KILL_PARTITIONS):
        expected = [(r.offset, r.key, framed_target + r.value[5:], r.timestamp)
                    for r in read_partition(source, topic, partition)]
        copied = [(r.offset, r.key, r.value, r.timestamp) for r in read_partition(target, topic, partition)]
        assert copied == expected, f"partition {partition}: {len(copied)} records for {len(expected)}"


def _target_topics(cluster) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient(cluster.client_config()).list_topics(timeout=5).topics)


def test_the_dag_waits_for_a_registry_that_does_not_answer_then_moves_the_schemas(
        kafka_pair, registry_pair, unique_name, tmp_path, monkeypatch, airflow_db, capfd):
    """`prepare.registries_answer` waits while the target registry is down and says so; once it answers,
    `prepare.schemas` moves the subjects and `prepare.schemas_on_target` finds them there. The target registry is
    an Airflow connection's."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.state import DagRunState, TaskInstanceState

    from kafka_local.cluster import free_port

    source, target = kafka_pair
    source_registry, _ = registry_pair
    orders = f"{unique_name}-orders"
    create_topics(source, [NewTopic(orders, PARTITIONS, 1)])
    _avro_producer(source, source_registry.url, unique_name, ORDER_V1, 1)
    port = free_port()
    late_url = f"http://127.0.0.1:{port}/apis/ccompat/v7"
    data = plan_dict(source, target, unique_name, name=f"schemas-{unique_name[-8:]}")
    # The target registry named by an Airflow connection (a host name, its port, the API's path as its schema).
    data["schemas"] = {"source": {"url": source_registry.url}, "target": {"conn_id": "late_registry"}}
    monkeypatch.setenv("AIRFLOW_CONN_LATE_REGISTRY", json.dumps({
        "conn_type": "schema_registry", "host": "127.0.0.1", "port": port, "schema": "apis/ccompat/v7"}))
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "plan.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("KAFKA_MIGRATION_PLANS", str(plans))

    # The target registry starts once the DAG first asked it (on its port, nothing answered then).
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(120)
    started = []

    def start_when_asked() -> None:
        asked, _ = listener.accept()
        asked.close()
        listener.close()
        started.append(start_registry(tmp_path / "late", port=port))

    late = threading.Thread(target=start_when_asked)
    late.start()
    try:
        dag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags")).get_dag(
            f"kafka_migration__{data['name']}")
        assert {"prepare.registries_answer", "prepare.schemas", "prepare.schemas_on_target"} <= set(dag.task_dict)
        run = dag.test(run_conf={"stages": ["preflight", "prepare"], "wait_timeout_s": 120})
        logged = "".join(capfd.readouterr())
        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        assert run.state == DagRunState.SUCCESS, states
        assert states["prepare.schemas"] == TaskInstanceState.SUCCESS
        assert states["prepare.schemas_on_target"] == TaskInstanceState.SUCCESS
        assert "waiting for the target schema registry" in logged, logged[-3000:]
        late.join(60)
        assert RegistryClient({"url": late_url}).versions(f"{unique_name}-orders-value") == [1]
        assert RegistryClient({"url": late_url}).versions(f"{unique_name}-address") == [1]
    finally:
        if not started:
            listener.close()
        late.join(60)
        for registry in started:
            registry.stop()


def test_the_spark_backfill_translates_ids_as_the_engine_does_and_the_validation_compares_modulo_the_ids(
        kafka_pair, registry_pair, spark, unique_name, tmp_path):
    from spark_jobs import backfill, validate
    from tests.integration.test_backfill import _wait_for_snapshot

    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    topic = f"{unique_name}-history"
    create_topics(source, [NewTopic(topic, PARTITIONS, 1)])
    for n in range(2):  # the target's ids differ from the source's
        RegistryClient({"url": target_registry.url}).register(
            f"{unique_name}-filler-{n}-value", _avro_schema({"type": "record", "name": f"H{n}", "fields": []}))
    reading = _avro_schema({"type": "record", "name": "Sample", "fields": [{"name": "v", "type": "long"}]})
    source_id = RegistryClient({"url": source_registry.url}).register(f"{topic}-value", reading)
    framed = [(i % PARTITIONS, b"k%d" % i, b"\x00" + source_id.to_bytes(4, "big") + i.to_bytes(8, "big"))
              for i in range(20_000)]
    _produce_raw(source, topic, framed)
    # A record whose id the source registry does not know is copied as it is (`unknown_ids: copy`).
    data = _schema_plan(source, target, registry_pair, topic, unknown_ids="copy")
    data["backfill"], data["engine"] = {"topics": [topic]}, {"refresh_interval_s": 1}
    plan_path = _write_plan(data, tmp_path)

    replicator = Replicator(plan_from_dict(data), source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 300}, daemon=True)
    runner.start()
    try:
        _wait_for_snapshot(data, target, topic)
        _produce_raw(source, topic, [(p, b"new", b"\x00" + source_id.to_bytes(4, "big") + b"n")
                                     for p in range(PARTITIONS)])  # after the snapshot: the engine's share
        _produce_raw(source, topic, [(0, b"unknown", b"\x00" + (999_999).to_bytes(4, "big") + b"u")])
        assert backfill.main(["--plan", str(plan_path)]) == 0
        _wait_copied(target, topic, len(framed) + PARTITIONS + 1)
    finally:
        replicator.stop()
        runner.join(60)

    target_id = RegistryClient({"url": target_registry.url}).lookup(f"{topic}-value", reading)
    assert target_id is not None and target_id[0] != source_id
    for partition in range(PARTITIONS):
        expected = [(r.offset, r.key, r.value if r.key == b"unknown" else
                     b"\x00" + target_id[0].to_bytes(4, "big") + r.value[5:], r.timestamp)
                    for r in read_partition(source, topic, partition)]
        assert [(r.offset, r.key, r.value, r.timestamp) for r in read_partition(target, topic, partition)] == expected
    # Both sides compared as the copies carry the records: clean, in Spark.
    reports = tmp_path / "reports"
    assert validate.main(["--plan", str(plan_path), "--report-dir", str(reports)]) == 0
    report = json.loads(next(reports.glob("*.json")).read_text())
    assert report["totals"]["source_records"] == len(framed) + PARTITIONS + 1, report["totals"]
    assert report["totals"]["unmapped"] == 1 and report["clean"], report["totals"]


def _produce_raw(cluster, topic: str, records: list[tuple[int, bytes, bytes]]) -> None:
    producer = Producer({**cluster.client_config(), "linger.ms": 20})
    for partition, key, value in records:
        assert partition < PARTITIONS
        while True:
            try:
                producer.produce(topic, value, key, partition)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0


def test_a_registry_of_more_than_a_thousand_subjects_is_listed_whole(tmp_path):
    """Apicurio lists 1,000 subjects unless asked for more: the 1,001st subject's topic must still be moved."""
    from concurrent.futures import ThreadPoolExecutor

    registry = start_registry(tmp_path / "registry")
    try:
        client = RegistryClient({"url": registry.url})
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: client.register(f"topic-{n:04d}-value", _avro_schema(
                {"type": "record", "name": f"R{n}", "fields": []})), range(1005)))
        assert len(client.subjects()) == 1005
    finally:
        registry.stop()



def test_a_version_the_target_would_refuse_as_incompatible_is_refused_first_and_soft_deleted_ones_move(
        kafka_pair, registry_pair, unique_name, tmp_path, capsys):
    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    strict, loose = f"{unique_name}-strict", f"{unique_name}-loose"
    create_topics(source, [NewTopic(strict, PARTITIONS, 1), NewTopic(loose, PARTITIONS, 1)])
    source_client, target_client = RegistryClient({"url": source_registry.url}), RegistryClient(
        {"url": target_registry.url})
    first = _avro_schema({"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]})
    second = _avro_schema({"type": "record", "name": "S", "fields": [{"name": "b", "type": "string"}]})
    source_client.set_compatibility("NONE", f"{strict}-value")
    for schema in (first, second):  # the source took a second version that breaks the first
        source_client.register(f"{strict}-value", schema)
    target_client.register(f"{strict}-value", first)
    target_client.set_compatibility("BACKWARD", f"{strict}-value")
    # A subject whose first version was soft-deleted on the source.
    source_client.register(f"{loose}-value", first)
    source_client.set_compatibility("NONE", f"{loose}-value")
    source_client.register(f"{loose}-value", second)
    source_client.soft_delete(f"{loose}-value", 1)

    data = _schema_plan(source, target, registry_pair, unique_name, compatibility=False, soft_deleted=True)
    plan_path = _write_plan(data, tmp_path)
    assert main(["schemas", "--plan", str(plan_path)]) == 1
    out = capsys.readouterr().out
    assert f"subject {strict}-value" in out and "incompatible" in out, out
    assert target_client.versions(f"{strict}-value") == [1]  # unchanged
    assert target_client.versions(f"{loose}-value") == [2] and target_client.versions(f"{loose}-value",
                                                                                      deleted=True) == [1, 2]


def test_a_schema_the_target_refuses_mid_run_stops_only_the_partition_that_needs_it(
        kafka_pair, registry_pair, unique_name):
    source, target = kafka_pair
    source_registry, target_registry = registry_pair
    strict, other = f"{unique_name}-strict", f"{unique_name}-other"
    create_topics(source, [NewTopic(strict, PARTITIONS, 1), NewTopic(other, PARTITIONS, 1)])
    source_client, target_client = RegistryClient({"url": source_registry.url}), RegistryClient(
        {"url": target_registry.url})
    first = _avro_schema({"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]})
    breaking = _avro_schema({"type": "record", "name": "T", "fields": [{"name": "b", "type": "string"}]})
    source_client.set_compatibility("NONE", f"{strict}-value")
    first_id = source_client.register(f"{strict}-value", first)
    other_id = source_client.register(f"{other}-value", first)

    def frame(schema_id: int) -> bytes:
        return b"\x00" + schema_id.to_bytes(4, "big")

    _produce_raw(source, strict, [(p, b"k", frame(first_id) + b"1") for p in range(PARTITIONS)])
    plan = plan_from_dict(_schema_plan(source, target, registry_pair, unique_name, compatibility=False))
    replicator = Replicator(plan, source.client_config(), target.client_config())
    runner = threading.Thread(target=replicator.run, kwargs={"max_seconds": 120})
    runner.start()
    try:
        _wait_copied(target, strict, PARTITIONS)
        # The target's rules are stricter than the source's: the source's next version breaks them.
        target_client.set_compatibility("BACKWARD", f"{strict}-value")
        breaking_id = source_client.register(f"{strict}-value", breaking)
        _produce_raw(source, strict, [(0, b"k", frame(breaking_id) + b"2"), (1, b"k", frame(first_id) + b"3")])
        _produce_raw(source, other, [(p, b"k", frame(other_id) + b"4") for p in range(PARTITIONS)])
        _wait_copied(target, other, PARTITIONS)
        deadline = time.monotonic() + 60
        while not replicator.states[(strict, 0)].failed and time.monotonic() < deadline:
            time.sleep(0.1)
        _wait_copied(target, strict, PARTITIONS + 1)  # partition 1's new record: its schema moved long ago
        stopped = replicator.states[(strict, 0)].failed
        assert f"{strict}[0]: the record at offset 1 cannot be copied" in stopped, stopped
        assert "incompatible" in stopped, stopped
        assert not replicator.states[(strict, 1)].failed and not replicator.faults.fatal
        assert end_offsets(target, strict, PARTITIONS) == [1, 2]
    finally:
        replicator.stop()
        runner.join(60)
    assert target_client.versions(f"{strict}-value") == [1]  # the refused version was not registered


def test_registries_over_mtls_and_client_credentials_tokens(kafka_pair, registry_pair, oauth_server, unique_name,
                                                            tmp_path, capsys):
    """The source registry behind mTLS (a client certificate required), the target requiring bearer tokens of an
    OpenID issuer: subjects move with the settings Confluent's clients take, from a plan and from an MM2 file
    (Java's JKS stores, converted as a cluster's are); a missing certificate or a refused client is a sentence
    naming the key, with no secret in it and nothing changed."""
    from kafka_local.tls import KEY_PASSWORD, STORE_PASSWORD, make_tls_files
    from kafka_local.tls_front import TlsFront
    from tests.integration.plans import cluster_section

    source, target = kafka_pair
    files = make_tls_files(tmp_path / "tls")
    front = TlsFront(files, registry_pair[0].port)
    guarded = start_registry(tmp_path / "oidc-registry", oauth_issuer=oauth_server.issuer)
    try:
        subject = f"{unique_name}-orders-value"
        RegistryClient({"url": registry_pair[0].url}).register(
            subject, _avro_schema({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}))
        create_topics(source, [NewTopic(f"{unique_name}-orders", 1, 1)])
        source_tls = {"ssl.ca.location": str(files.ca), "ssl.certificate.location": str(files.client_certificate),
                      "ssl.key.location": str(files.client_key), "ssl.key.password": KEY_PASSWORD}
        tokens = {"bearer.auth.credentials.source": "OAUTHBEARER",
                  "bearer.auth.issuer.endpoint.url": oauth_server.token_url,
                  "bearer.auth.client.id": "mirror", "bearer.auth.client.secret": "registry-secret-4711",
                  "bearer.auth.scope": "registry"}
        data = plan_dict(source, target, unique_name)
        data["schemas"] = {"source": {"url": front.url("/apis/ccompat/v7"), "client": source_tls},
                           "target": {"url": guarded.url, "client": tokens}}

        assert main(["schemas", "--plan", str(_write_plan(data, tmp_path))]) == 0, capsys.readouterr()
        with_token = RegistryClient({"url": guarded.url, **tokens})
        assert with_token.versions(subject) == [1]

        # Without its client certificate the source refuses the handshake; without a login the target answers 401.
        for side, client in (("source", {"ssl.ca.location": str(files.ca)}), ("target", {})):
            refused = json.loads(json.dumps(data))
            refused["schemas"][side]["client"] = client
            assert main(["schemas", "--dry-run", "--plan", str(_write_plan(refused, tmp_path))]) == 3
            said = capsys.readouterr()
            assert ("did not answer" if side == "source" else "401") in said.out + said.err, said
        wrong = json.loads(json.dumps(data))
        wrong["schemas"]["target"]["client"]["bearer.auth.client.secret"] = ""
        assert main(["schemas", "--dry-run", "--plan", str(_write_plan(wrong, tmp_path))]) != 0
        said = capsys.readouterr()
        assert "schemas.target.client.bearer.auth.client.secret" in said.out + said.err, said

        # The same flow from an MM2 file: the source registry's Java keystore and truststore (JKS).
        second = f"{unique_name}-invoices-value"
        RegistryClient({"url": registry_pair[0].url}).register(
            second, _avro_schema({"type": "record", "name": "Invoice", "fields": []}))
        create_topics(source, [NewTopic(f"{unique_name}-invoices", 1, 1)])
        prefix = "mirror-engine.schema.registry"
        mm2 = tmp_path / "mm2.properties"
        mm2.write_text("\n".join([
            "clusters = src, tgt",
            f"src.bootstrap.servers = {cluster_section('src', source)['bootstrap_servers']}",
            f"tgt.bootstrap.servers = {cluster_section('tgt', target)['bootstrap_servers']}",
            "src->tgt.enabled = true",
            f"src->tgt.topics = {unique_name}-invoices",
            f"src.{prefix}.url = {front.url('/apis/ccompat/v7')}",
            f"src.{prefix}.ssl.keystore.location = {files.client_keystore_jks}",
            f"src.{prefix}.ssl.keystore.password = {STORE_PASSWORD}",
            f"src.{prefix}.ssl.truststore.location = {files.truststore_jks}",
            f"src.{prefix}.ssl.truststore.password = {STORE_PASSWORD}",
            f"tgt.{prefix}.url = {guarded.url}",
            *(f"tgt.{prefix}.{key} = {value}" for key, value in tokens.items()), ""]))
        assert main(["schemas", "--mm2-config", str(mm2), "--flow", "src->tgt"]) == 0, capsys.readouterr()
        assert with_token.versions(second) == [1]
        said = capsys.readouterr()
        for secret in ("registry-secret-4711", STORE_PASSWORD, KEY_PASSWORD):
            assert secret not in said.out + said.err
    finally:
        front.stop()
        guarded.stop()
