"""Every reader of a flow's small internal topics sees what an exactly-once engine committed and nothing it aborted,
and loses nothing: records written plainly (at-least-once), in committed transactions, and after an aborted
one, on the first read and on the reads that follow (progress, offset-syncs, control, status, reports,
checkpoints, heartbeats and the latency probe's replica). Also where the target's client settings ask for
`isolation.level: read_uncommitted` (a plan's `client:` section may; librdkafka's default is read_committed)."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from mirror_engine.cutover import GroupReadyToSwitch
from mirror_engine.flow import (
    COMPACTED_SEGMENT_BYTES,
    ControlChannel,
    FlowMapping,
    InternalTopics,
    PartitionProgress,
    ProgressFollower,
    ensure_internal_topics,
    load_progress,
    progress_key,
)
from mirror_engine.kafka import (
    InternalTopicReader,
    admin_client,
    commit_offsets,
    describe_topic_configs,
    existing_topics,
    read_to_end,
)
from mirror_engine.mm2 import Checkpoint, Heartbeat, OffsetSync
from mirror_engine.observe import (
    FlowView,
    ReportStore,
    WorkerStatusFeed,
    last_heartbeat,
    measure_latency,
    read_worker_statuses,
)
from mirror_engine.plan import MigrationPlan, plan_from_dict
from tests.integration.plans import cluster_section, create_topics, plan_dict
from tests.integration.test_malformed_internal_records import _status

pytestmark = [pytest.mark.integration]

Record = tuple[str, bytes | None, bytes | None]  # (topic, key, value)


def _plan(source, target, prefix: str, name: str, **sections) -> MigrationPlan:
    """A plan with aliases of its own: the heartbeats topics are shared by every flow on the clusters."""
    data = plan_dict(source, target, prefix, name=name, **sections)
    data["source"] = cluster_section(f"s{name}", source)
    data["target"] = cluster_section(f"t{name}", target)
    return plan_from_dict(data)


def _plain(config: dict, records: list[Record]) -> None:
    """Written as an at-least-once engine writes: idempotent, outside any transaction."""
    producer = Producer({**config, "enable.idempotence": True, "acks": "all"})
    for topic, key, value in records:
        producer.produce(topic, value, key, 0)
    assert producer.flush(30) == 0


def _transaction(producer: Producer, records: list[Record], commit: bool) -> None:
    producer.begin_transaction()
    for topic, key, value in records:
        producer.produce(topic, value, key, 0)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


class _Records:
    """One record of each internal topic per name: a progress, its offset-sync, a control record, a worker's status,
    a report, a checkpoint and a heartbeat."""

    def __init__(self, plan, topics: InternalTopics, position: int) -> None:
        self.plan, self.topics, self.position = plan, topics, position

    def __call__(self, name: str, partition: int, flow_state: str = "paused") -> list[Record]:
        topics, alias = self.topics, self.plan.source.alias
        progress = PartitionProgress("orders", partition, self.position, self.position)
        sync = OffsetSync("orders", partition, 0, 0)
        checkpoint = Checkpoint(f"group-{name}", "orders", partition, self.position, self.position, "")
        beat = Heartbeat(alias, self.plan.target.alias, self.position)
        return [
            (topics.offset_syncs, sync.record_key(), sync.record_value()),
            (topics.progress, progress.key(alias), progress.value()),
            (topics.control, b"flow", f'{{"state": "{flow_state}"}}'.encode()),
            (topics.control, f"topic:{name}".encode(), b'{"state": "switched"}'),
            (topics.status, name.encode(), _status(name)),
            (topics.reports, f"validation:{name}".encode(),
             f'{{"kind": "validation", "name": "{name}", "stored_ms": 1, "report": {{"clean": true}}}}'.encode()),
            (topics.checkpoints, checkpoint.record_key(), checkpoint.record_value()),
            (self.plan.policy().heartbeats_topic(), beat.record_key(), beat.record_value()),
        ]


def test_every_internal_topic_reader_sees_committed_records_only_and_loses_none(kafka_pair, unique_name):
    source, target = kafka_pair
    writer = target.client_config()
    config = {**writer, "isolation.level": "read_uncommitted"}  # what the readers are given
    suffix = uuid.uuid4().hex[:8]
    plan = _plan(source, target, unique_name, f"readers{suffix}")
    topics = InternalTopics.for_plan(plan)
    ensure_internal_topics(admin_client(writer), topics)
    committed, aborted = _Records(plan, topics, 10), _Records(plan, topics, 999)
    producer = Producer({**writer, "transactional.id": f"readers-{suffix}", "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)

    # The first read: a plain record, an aborted transaction, a committed one.
    _plain(writer, committed("a", 0))
    _transaction(producer, aborted("x", 0, flow_state="stopped"), commit=False)
    _transaction(producer, committed("b", 1), commit=True)
    # Followed by readers kept open, as sensors, engines and the cockpit keep them.
    mapping = FlowMapping(plan, config).refresh()
    control = ControlChannel(plan, config)
    control.load()
    feed = WorkerStatusFeed(plan, config)
    reports = ReportStore(plan, config)
    view = FlowView(plan, source.client_config(), config)
    try:
        assert load_progress(config, topics.progress) == {(topic, p): PartitionProgress(topic, p, 10, 10)
                                                          for topic, p in (("orders", 0), ("orders", 1))}
        assert (mapping.copied_position("orders", 0), mapping.copied_position("orders", 1)) == (10, 10)
        assert control.flow_state == "paused" and control.switched_topics == {"a", "b"}
        assert [s["worker"] for s in read_worker_statuses(plan, config)] == ["a", "b"]
        assert [s["worker"] for s in feed.poll()] == ["a", "b"]
        assert sorted(reports.read("validation")) == ["validation:a", "validation:b"]
        assert [c["group"] for c in view.checkpoints()] == ["group-a", "group-b"]
        beat = last_heartbeat(config, plan)
        assert beat is not None and beat.timestamp_ms == 10

        # What comes next: an aborted transaction, then a committed one after it.
        _transaction(producer, aborted("y", 2, flow_state="stopped"), commit=False)
        _transaction(producer, committed("c", 3), commit=True)
        assert mapping.refresh() is mapping
        assert [mapping.copied_position("orders", p) for p in range(4)] == [10, 10, None, 10]
        deadline = time.monotonic() + 15
        while "c" not in control.switched_topics and time.monotonic() < deadline:
            control.poll()
            time.sleep(0.1)
        assert control.switched_topics == {"a", "b", "c"} and control.flow_state == "paused"
        assert [s["worker"] for s in feed.poll()] == ["a", "b", "c"]
        assert sorted(reports.read("validation")) == ["validation:a", "validation:b", "validation:c"]
        assert [c["group"] for c in view.checkpoints()] == ["group-a", "group-b", "group-c"]
        assert load_progress(config, topics.progress)[("orders", 3)].position == 10
        assert ("orders", 2) not in load_progress(config, topics.progress)
    finally:
        for reader in (mapping, control, feed, reports, view):
            reader.close()
        producer.flush(10)


def test_the_latency_probe_sees_the_heartbeat_when_its_copy_is_committed(kafka_pair, unique_name):
    """An exactly-once engine's copy of the probe's heartbeat counts once committed: here the copy is first
    written in a transaction that is aborted, and committed again only `held_s` later."""
    source, target = kafka_pair
    suffix = uuid.uuid4().hex[:8]
    plan = _plan(source, target, unique_name, f"latency{suffix}", engine={"replicate_heartbeats": True})
    policy = plan.policy()
    source_topic = policy.heartbeats_topic()
    replica = policy.format_remote_topic(plan.source.alias, source_topic)
    existing = admin_client(source.client_config()).list_topics(timeout=15).topics
    if source_topic not in existing:
        create_topics(source, [NewTopic(source_topic, 1, 1)])
    create_topics(target, [NewTopic(replica, 1, 1)])
    held_s = 5.0  # far longer than a first fetch takes, even on a loaded machine
    stop = threading.Event()
    copied: list[int] = []

    def copy_like_an_exactly_once_engine() -> None:
        consumer = Consumer({**source.client_config(), "group.id": f"copier-{suffix}", "enable.auto.commit": False})
        consumer.assign([TopicPartition(source_topic, 0, OFFSET_END)])
        producer = Producer({**target.client_config(), "transactional.id": f"copier-{suffix}"})
        producer.init_transactions(30)
        try:
            while not stop.is_set():
                for message in consumer.consume(10, timeout=0.1):
                    if message.error() is not None:
                        continue
                    beat = Heartbeat.from_record(message.key(), message.value())
                    if beat.source_alias != plan.target.alias:  # not the probe's of this flow
                        continue
                    record = [(replica, message.key(), message.value())]
                    _transaction(producer, record, commit=False)
                    time.sleep(held_s)
                    _transaction(producer, record, commit=True)
                    copied.append(beat.timestamp_ms)
        finally:
            consumer.close()

    copier = threading.Thread(target=copy_like_an_exactly_once_engine)
    copier.start()
    try:
        time.sleep(2)  # the copier's consumer is at the end before the probe writes
        latency = measure_latency(plan, source.client_config(),
                                  {**target.client_config(), "isolation.level": "read_uncommitted"}, timeout_s=60)
    finally:
        stop.set()
        copier.join(60)
    assert copied, "the copier saw no heartbeat"
    assert latency.replica_topic == replica
    assert latency.latency_ms >= held_s * 1000, f"the probe counted an aborted copy: {latency.latency_ms:.0f} ms"


def test_progress_and_checkpoints_roll_small_segments_so_compaction_bounds_their_reads(kafka_pair, unique_name):
    """Both are read from their start (a switch, a sensor, a worker's start) and written for every partition or group
    that moved, up to every second: the broker compacts closed segments only, so the target gets segments of
    COMPACTED_SEGMENT_BYTES (its default, 1 GiB, held two hours of a 10,000-partition flow's progress). Compaction
    then keeps the latest record of each partition, and the readers read it back: here with segments rolled every
    second (set for the test alone), for the test to see the cleaner at work."""
    _, target = kafka_pair
    config = target.client_config()
    plan = plan_from_dict(plan_dict(*kafka_pair, unique_name, name=f"roll{unique_name[-8:]}"))
    topics = InternalTopics.for_plan(plan)
    admin = admin_client(config)
    ensure_internal_topics(admin, topics)
    configs = describe_topic_configs(admin, [topics.progress, topics.checkpoints])
    for name in (topics.progress, topics.checkpoints):
        values = {entry.name: entry.value for entry in configs[name]}
        assert values["cleanup.policy"] == "compact"
        assert int(values["segment.bytes"]) == COMPACTED_SEGMENT_BYTES <= 1024 * 1024, (name, values["segment.bytes"])

    faster = ConfigResource(ConfigResource.Type.TOPIC, topics.progress, incremental_configs=[
        ConfigEntry("segment.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([faster])[faster].result()
    follower = ProgressFollower(config, topics.progress)  # a reader kept open while the cleaner works
    producer = Producer({**config, "enable.idempotence": True, "linger.ms": 5})
    rounds, keys = 12, 4
    try:
        follower.catch_up()
        for position in range(1, rounds + 1):  # a segment rolls at the first write a second after its first record
            for partition in range(keys):
                for _ in range(200):
                    producer.produce(topics.progress,
                                     PartitionProgress("orders", partition, position, position).value(),
                                     progress_key(plan.source.alias, "orders", partition), 0)
            assert producer.flush(30) == 0
            time.sleep(0.4)
        time.sleep(1.2)  # the last record of each partition alone in the last segment: every other one cleanable
        for partition in range(keys):
            producer.produce(topics.progress, PartitionProgress("orders", partition, rounds + 1, rounds + 1).value(),
                             progress_key(plan.source.alias, "orders", partition), 0)
        assert producer.flush(30) == 0
        written = rounds * keys * 200 + keys
        deadline = time.monotonic() + 90
        while len(read_to_end(config, topics.progress)) > written // 3:
            assert time.monotonic() < deadline, f"{len(read_to_end(config, topics.progress))} of {written} records " \
                                                "still there: the cleaner did not compact the rolled segments"
            time.sleep(1)
        expected = {("orders", p): PartitionProgress("orders", p, rounds + 1, rounds + 1) for p in range(keys)}
        assert load_progress(config, topics.progress) == expected
        follower.catch_up()
        assert follower.progress_of() == expected
        with FlowMapping(plan, config) as mapping:
            mapping.refresh()
            assert {key: mapping.copied_position(*key) for key in expected} == {key: rounds + 1 for key in expected}
        fresh = ProgressFollower(config, topics.progress)
        try:
            fresh.catch_up()
            assert fresh.progress_of() == expected
            assert fresh.records_read < written // 3
        finally:
            fresh.close()
    finally:
        follower.close()


def test_a_mapping_refresh_decodes_each_partitions_latest_progress_only(kafka_pair, unique_name, monkeypatch):
    """A checkpoint round refreshes the mapping with every progress record the copy stored since the round before
    (at 10,000 partitions and 1 s intervals, 100,000 in 10 s). The topic is compacted, so only each partition's
    latest record counts: only that one is decoded, and the mapping ends as if every record had been read, a reset
    partition (a tombstone) forgotten and one stored again after its reset kept; every offset-sync is kept."""
    _, target = kafka_pair
    config = target.client_config()
    plan = plan_from_dict(plan_dict(*kafka_pair, unique_name, name=f"dedup{unique_name[-8:]}"))
    topics = InternalTopics.for_plan(plan)
    ensure_internal_topics(admin_client(config), topics)
    alias = plan.source.alias

    def progress(partition: int, position: int | None) -> Record:
        key = progress_key(alias, "orders", partition)
        if position is None:
            return topics.progress, key, None
        return topics.progress, key, PartitionProgress("orders", partition, position, position + 1000).value()

    def sync(partition: int, upstream: int) -> Record:
        record = OffsetSync("orders", partition, upstream, upstream + 1000)
        return topics.offset_syncs, record.record_key(), record.record_value()

    decoded_keys: list[bytes | None] = []
    with FlowMapping(plan, config) as mapping:
        original = mapping._decode

        def counting(message):
            decoded_keys.append(message.key())
            return original(message)

        monkeypatch.setattr(mapping, "_decode", counting)
        _plain(config, [sync(p, 0) for p in range(3)] + [progress(p, 10) for p in range(3)])
        mapping.refresh()
        assert {p: mapping.copied_position("orders", p) for p in range(3)} == {0: 10, 1: 10, 2: 10}
        decoded_keys.clear()
        # Ten intervals: partition 0 moves every interval, 1 is reset (a tombstone) in the fifth, 2 is reset and
        # stored again; syncs of partition 0 at two gaps.
        records: list[Record] = []
        for interval in range(1, 11):
            records.append(progress(0, 10 + 10 * interval))
            if interval == 3:
                records.append(sync(0, 35))
            if interval == 5:
                records += [progress(1, None), progress(2, None)]
            elif interval < 5:
                records += [progress(1, 10 + interval), progress(2, 10 + interval)]
            if interval == 8:
                records += [progress(2, 3), sync(0, 95)]
        _plain(config, records)
        mapping.refresh()
        progress_records = sum(1 for topic, _, _ in records if topic == topics.progress)
        assert len(decoded_keys) == 3 < progress_records, decoded_keys  # one progress record per partition
        assert mapping.copied_position("orders", 0) == 110
        assert mapping.copied_position("orders", 1) is None  # reset: forgotten
        assert mapping.copied_position("orders", 2) == 3  # stored again after its reset
        assert load_progress(config, topics.progress) == {  # a fresh read, the same way
            ("orders", 0): PartitionProgress("orders", 0, 110, 1110),
            ("orders", 2): PartitionProgress("orders", 2, 3, 1003)}
        # The syncs of partition 0 all count: 35 -> 1035 and 95 -> 1095 translate exactly, between them linearly.
        assert [mapping.translate("orders", 0, offset) for offset in (0, 35, 40, 95, 110)] == [1000, 1035, 1040, 1095,
                                                                                              1110]
        # All three are on one line (delta 1000): the map holds the first alone.
        partition_map = mapping.offsets.partition("orders", 0)
        assert partition_map is not None and len(partition_map) == 1


def test_one_groups_switch_reads_the_mapping_of_its_own_partitions_and_again_when_it_grows(kafka_pair, unique_name):
    """A switch of one group decodes the offset-syncs of the group's partitions only, and keeps only their progress
    (a flow of 10,000 partitions holds at least 10,000 syncs, about 15 us each to decode): it translates those as the
    whole mapping does, and knows nothing of the others. Should the group come to read another partition before it
    is switched, its check reads the mapping again for that one too, instead of waiting for a copy it would never
    see. The internal topics are found by their names alone, without the whole cluster's metadata."""
    source, target = kafka_pair
    config = target.client_config()
    plan = plan_from_dict(plan_dict(source, target, unique_name, name=f"only{unique_name[-8:]}"))
    topics = InternalTopics.for_plan(plan)
    admin = admin_client(config)
    ensure_internal_topics(admin, topics)
    assert existing_topics(admin, [topics.progress, topics.offset_syncs, f"{unique_name}-absent"]) == {
        topics.progress, topics.offset_syncs}
    topic, alias = unique_name, plan.source.alias
    create_topics(source, [NewTopic(topic, 4, 1)])
    records: list[Record] = []
    for partition in range(4):  # partition p copied to 20: offsets 0..9 at 1000(p+1).., 10.. at 5000(p+1).. (a gap)
        for upstream, downstream in ((0, 1000 * (partition + 1)), (10, 5000 * (partition + 1))):
            sync = OffsetSync(topic, partition, upstream, downstream)
            records.append((topics.offset_syncs, sync.record_key(), sync.record_value()))
        progress = PartitionProgress(topic, partition, 20, 5000 * (partition + 1) + 10)
        records.append((topics.progress, progress.key(alias), progress.value()))
    _plain(config, records)

    with FlowMapping(plan, config) as whole, FlowMapping(plan, config, [(topic, 1), (topic, 3)]) as some:
        whole.refresh()
        some.refresh()
        for partition in (1, 3):
            assert [some.translate(topic, partition, o) for o in (0, 5, 10, 15, 20)] == [
                whole.translate(topic, partition, o) for o in (0, 5, 10, 15, 20)] == [
                *(1000 * (partition + 1) + o for o in (0, 5)), *(5000 * (partition + 1) + o for o in (0, 5, 10))]
            assert some.copied_position(topic, partition) == whole.copied_position(topic, partition) == 20
        for partition in (0, 2):
            assert whole.translate(topic, partition, 15) == 5000 * (partition + 1) + 5
            assert some.translate(topic, partition, 15) is None and some.copied_position(topic, partition) is None
        assert sorted(some.offsets.partitions()) == [(topic, 1), (topic, 3)]

    group = f"{unique_name}-g"
    source_admin = admin_client(source.client_config())
    commit_offsets(source_admin, group, {(topic, 1): 5})
    check = GroupReadyToSwitch(plan, source.client_config(), config, group)
    try:
        assert check.check().done
        remote = plan.policy().format_remote_topic(alias, topic)
        assert check.translation is not None and check.translation.translated == {(remote, 1): 2005}
        commit_offsets(source_admin, group, {(topic, 1): 5, (topic, 2): 15})  # it read another partition
        answer = check.check()
        assert answer.done, answer.progress
        assert check.translation.translated == {(remote, 1): 2005, (remote, 2): 15005}
    finally:
        check.close()


class _FetchCounter:
    """A reader's consumer's Fetch requests as librdkafka's statistics count them, with their time (librdkafka's
    `ts` is the same monotonic clock as `time.monotonic()`, in microseconds). Statistics reach Python when the
    reader consumes: the samples of an idle time are read at the next read."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []

    def __call__(self, raw: str) -> None:
        data = json.loads(raw)
        if data["type"] == "consumer":
            fetches = sum(broker["req"].get("Fetch", 0) for broker in data["brokers"].values())
            self.samples.append((data["ts"] / 1e6, fetches))

    def per_second(self, start: float, end: float) -> float:
        inside = [(at, count) for at, count in self.samples if start <= at <= end]
        assert len(inside) >= 5, self.samples  # a sample every 100 ms
        (first_at, first), (last_at, last) = inside[0], inside[-1]
        return (last - first) / (last_at - first_at)


def test_a_reader_kept_open_fetches_only_while_it_reads(kafka_pair, unique_name):
    """Between reads, a reader kept open (the checkpoint loop's mapping, a sensor's, the cockpit's) sends no fetch:
    it used to ask again every 10 ms, its short wait at the end of a partition; a read still starts fetching at
    once. A background reader (the control topic's) asks at the broker's usual pace, and still sees a record as soon
    as it is written. Both read every committed record once, across transactions whose markers end the partition."""
    _source, target = kafka_pair
    topic = f"{unique_name}.idle-reads"
    create_topics(target, [NewTopic(topic, 1, 1)])
    writer = target.client_config()
    producer = Producer({**writer, "transactional.id": f"idle-{uuid.uuid4().hex[:8]}",
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    _transaction(producer, [(topic, b"k", b"first"), (topic, b"k", b"second")], commit=True)

    counted, background_counted = _FetchCounter(), _FetchCounter()
    reader = InternalTopicReader({**writer, "statistics.interval.ms": 100, "stats_cb": counted}, topic, "idle-reads")
    background = InternalTopicReader({**writer, "statistics.interval.ms": 100, "stats_cb": background_counted},
                                     topic, "idle-background")
    try:
        assert [m.value() for m in reader.read_new()] == [b"first", b"second"]
        deadline = time.monotonic() + 15
        seen = []
        while len(seen) < 2 and time.monotonic() < deadline:
            seen += [m.value() for m in background.available()]
            time.sleep(0.05)
        assert seen == [b"first", b"second"]
        idle_from = time.monotonic()
        time.sleep(2.5)
        idle_to = time.monotonic()
        _transaction(producer, [(topic, b"k", b"third")], commit=True)
        written = time.monotonic()
        assert [m.value() for m in reader.read_new()] == [b"third"]
        read_latency = time.monotonic() - written
        while len(seen) < 3 and time.monotonic() < written + 15:
            seen += [m.value() for m in background.available()]
            time.sleep(0.01)
        background_latency = time.monotonic() - written
        assert seen == [b"first", b"second", b"third"]
        assert reader.read_new() == []

        idle = counted.per_second(idle_from + 0.2, idle_to)
        background_idle = background_counted.per_second(idle_from + 0.2, idle_to)
        assert idle < 1, f"{idle:.1f} fetches a second between reads"  # it was about 100
        assert background_idle < 5, f"{background_idle:.1f} fetches a second in the background"  # about 2
        assert background_latency < 1.0, background_latency  # answered when the record came, not at the wait's end
        # A paused partition's broker thread is woken for the read: a resume alone left it asleep up to a second.
        assert read_latency < 0.5, read_latency
    finally:
        reader.close()
        background.close()
        producer.flush(10)
