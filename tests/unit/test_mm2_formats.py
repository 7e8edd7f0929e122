"""MM2's internal record formats: exact bytes, round trips, and rejection of malformed input.

Expected bytes come either from the reference examples (produced by MM2's schemas) or are built field by
field here from the schema definitions, independently of the encoder under test.
"""

import struct

import pytest

from mirror_engine.mm2 import Checkpoint, Heartbeat, Mm2FormatError, OffsetSync
from mirror_engine.plan import HEARTBEATS_TOPIC, checkpoints_topic, offset_syncs_topic


def wire_string(value: str) -> bytes:
    """Kafka wire STRING: INT16 byte length, then UTF-8."""
    data = value.encode("utf-8")
    return struct.pack(">h", len(data)) + data


# Offset syncs


def test_offset_sync_key_matches_reference_bytes() -> None:
    assert OffsetSync("orders", 3, 1000, 990).record_key() == bytes.fromhex("00066f726465727300000003")


def test_offset_sync_value_matches_reference_bytes() -> None:
    value = OffsetSync("orders", 3, 1000, 990).record_value()
    assert value == bytes.fromhex("00000000000003e800000000000003de")


def test_offset_sync_bytes_follow_schema_for_large_offsets() -> None:
    sync = OffsetSync("payments", 2_000_000_000, 2**40 + 7, 2**62)
    assert sync.record_key() == wire_string("payments") + struct.pack(">i", 2_000_000_000)
    assert sync.record_value() == struct.pack(">q", 2**40 + 7) + struct.pack(">q", 2**62)


def test_offset_sync_has_no_version_header() -> None:
    assert len(OffsetSync("t", 0, 1, 2).record_value()) == 16


def test_offset_sync_round_trips() -> None:
    sync = OffsetSync("orders", 3, 1000, 990)
    assert OffsetSync.from_record(sync.record_key(), sync.record_value()) == sync


def test_offset_sync_decodes_reference_bytes() -> None:
    key = bytes.fromhex("00066f726465727300000003")
    value = bytes.fromhex("00000000000003e800000000000003de")
    assert OffsetSync.from_record(key, value) == OffsetSync("orders", 3, 1000, 990)


def test_offset_sync_decoding_ignores_trailing_bytes() -> None:
    key = wire_string("orders") + struct.pack(">i", 3) + b"\x99\x98"
    value = struct.pack(">qq", 1000, 990) + b"future-field"
    assert OffsetSync.from_record(key, value) == OffsetSync("orders", 3, 1000, 990)


def test_offset_sync_with_negative_offsets_round_trips() -> None:
    sync = OffsetSync("orders", 0, -1, -1)
    assert sync.record_value() == b"\xff" * 16
    assert OffsetSync.from_record(sync.record_key(), sync.record_value()) == sync


def test_offset_sync_offset_beyond_int64_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match="offset-sync value"):
        OffsetSync("orders", 3, 2**63, 0).record_value()


def test_offset_sync_partition_beyond_int32_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match="partition"):
        OffsetSync("orders", 2**31, 0, 0).record_key()


def test_offset_sync_truncated_value_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"offset-sync value.*truncated"):
        OffsetSync.from_record(bytes.fromhex("00066f726465727300000003"), bytes(15))


def test_offset_sync_key_missing_partition_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"'partition'.*truncated"):
        OffsetSync.from_record(wire_string("orders") + b"\x00\x00", bytes(16))


def test_offset_sync_null_key_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"offset-sync key.*null"):
        OffsetSync.from_record(None, bytes(16))


# Strings


def test_unicode_topic_is_length_prefixed_in_utf8_bytes() -> None:
    topic = "zamówienia.注文"
    key = OffsetSync(topic, 1, 0, 0).record_key()
    assert key[:2] == struct.pack(">h", len(topic.encode("utf-8")))
    assert key == wire_string(topic) + struct.pack(">i", 1)


def test_unicode_topic_round_trips() -> None:
    sync = OffsetSync("zamówienia.注文.🚀", 1, 5, 6)
    assert OffsetSync.from_record(sync.record_key(), sync.record_value()) == sync


def test_string_of_32767_bytes_is_accepted() -> None:
    topic = "x" * 32767
    sync = OffsetSync(topic, 0, 0, 0)
    assert OffsetSync.from_record(sync.record_key(), sync.record_value()).topic == topic


def test_string_of_32768_bytes_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match="32768 UTF-8 bytes"):
        OffsetSync("x" * 32768, 0, 0, 0).record_key()


def test_string_limit_counts_utf8_bytes_not_characters() -> None:
    # 10923 three-byte characters are 32769 bytes, though only 10923 characters.
    with pytest.raises(Mm2FormatError, match="32769 UTF-8 bytes"):
        OffsetSync("注" * 10923, 0, 0, 0).record_key()


def test_negative_string_length_is_rejected() -> None:
    key = struct.pack(">h", -1) + struct.pack(">i", 3)
    with pytest.raises(Mm2FormatError, match=r"'topic'.*negative"):
        OffsetSync.from_record(key, bytes(16))


def test_string_longer_than_record_is_rejected() -> None:
    key = struct.pack(">h", 10) + b"orders"
    with pytest.raises(Mm2FormatError, match=r"'topic'.*truncated"):
        OffsetSync.from_record(key, bytes(16))


def test_invalid_utf8_string_is_rejected() -> None:
    key = struct.pack(">h", 2) + b"\xff\xfe" + struct.pack(">i", 0)
    with pytest.raises(Mm2FormatError, match="invalid UTF-8"):
        OffsetSync.from_record(key, bytes(16))


def test_format_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        OffsetSync.from_record(b"", b"")


# Checkpoints


def test_checkpoint_key_matches_reference_bytes() -> None:
    key = Checkpoint("g1", "A.orders", 3, 1000, 991, "").record_key()
    assert key == bytes.fromhex("000267310008412e6f726465727300000003")


def test_checkpoint_value_matches_reference_bytes() -> None:
    value = Checkpoint("g1", "A.orders", 3, 1000, 991, "").record_value()
    assert value == bytes.fromhex("0000 00000000000003e8 00000000000003df 0000")


def test_checkpoint_metadata_defaults_to_empty_string() -> None:
    assert Checkpoint("g1", "A.orders", 3, 1000, 991).metadata == ""


def test_checkpoint_bytes_follow_schema_with_metadata() -> None:
    checkpoint = Checkpoint("billing-app", "A.payments", 11, 123_456_789_012, 123_456_700_000, "commit-meta")
    assert checkpoint.record_key() == (
        wire_string("billing-app") + wire_string("A.payments") + struct.pack(">i", 11)
    )
    assert checkpoint.record_value() == (
        struct.pack(">h", 0)
        + struct.pack(">q", 123_456_789_012)
        + struct.pack(">q", 123_456_700_000)
        + wire_string("commit-meta")
    )


def test_checkpoint_round_trips_with_unicode_fields() -> None:
    checkpoint = Checkpoint("grupa-ł", "A.注文", 7, 42, 40, "métadonnées")
    assert Checkpoint.from_record(checkpoint.record_key(), checkpoint.record_value()) == checkpoint


def test_checkpoint_decoding_ignores_trailing_bytes() -> None:
    key = wire_string("g1") + wire_string("A.orders") + struct.pack(">i", 3) + b"\x01"
    value = struct.pack(">hqq", 0, 1000, 991) + wire_string("m") + b"appended-v1-field"
    assert Checkpoint.from_record(key, value) == Checkpoint("g1", "A.orders", 3, 1000, 991, "m")


def test_checkpoint_unknown_version_is_rejected() -> None:
    value = struct.pack(">hqq", 1, 1000, 991) + wire_string("")
    with pytest.raises(Mm2FormatError, match=r"checkpoint value.*unknown version 1"):
        Checkpoint.from_record(Checkpoint("g1", "A.orders", 3, 0, 0).record_key(), value)


def test_checkpoint_value_missing_metadata_is_rejected() -> None:
    value = struct.pack(">hqq", 0, 1000, 991)
    with pytest.raises(Mm2FormatError, match=r"'metadata'.*truncated"):
        Checkpoint.from_record(Checkpoint("g1", "A.orders", 3, 0, 0).record_key(), value)


def test_checkpoint_truncated_key_is_rejected() -> None:
    key = wire_string("g1") + struct.pack(">h", 8) + b"A.or"
    with pytest.raises(Mm2FormatError, match=r"checkpoint key field 'topic'.*truncated"):
        Checkpoint.from_record(key, Checkpoint("g1", "A.orders", 3, 0, 0).record_value())


def test_checkpoint_null_metadata_is_rejected() -> None:
    checkpoint = Checkpoint("g1", "A.orders", 3, 1000, 991, None)  # type: ignore[arg-type]
    with pytest.raises(Mm2FormatError, match=r"'metadata'.*non-nullable"):
        checkpoint.record_value()


# Heartbeats


def test_heartbeat_key_matches_reference_bytes() -> None:
    assert Heartbeat("A", "B", 0).record_key() == bytes.fromhex("000141000142")


def test_heartbeat_value_is_version_then_timestamp() -> None:
    value = Heartbeat("A", "B", 1_730_000_000_123).record_value()
    assert value == struct.pack(">h", 0) + struct.pack(">q", 1_730_000_000_123)


def test_heartbeat_round_trips() -> None:
    heartbeat = Heartbeat("us-west", "eu-central", 1_730_000_000_123)
    assert Heartbeat.from_record(heartbeat.record_key(), heartbeat.record_value()) == heartbeat


def test_heartbeat_decoding_ignores_trailing_bytes() -> None:
    key = wire_string("A") + wire_string("B") + b"\x00"
    value = struct.pack(">hq", 0, 99) + b"\x01\x02"
    assert Heartbeat.from_record(key, value) == Heartbeat("A", "B", 99)


def test_heartbeat_unknown_version_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"heartbeat value.*unknown version 3"):
        Heartbeat.from_record(bytes.fromhex("000141000142"), struct.pack(">hq", 3, 99))


def test_heartbeat_truncated_timestamp_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"heartbeat value.*truncated"):
        Heartbeat.from_record(bytes.fromhex("000141000142"), struct.pack(">h", 0) + bytes(7))


def test_heartbeat_key_missing_target_alias_is_rejected() -> None:
    with pytest.raises(Mm2FormatError, match=r"'targetClusterAlias'.*truncated"):
        Heartbeat.from_record(wire_string("A"), struct.pack(">hq", 0, 99))


# Records are values


def test_records_are_immutable() -> None:
    sync = OffsetSync("orders", 3, 1000, 990)
    with pytest.raises(AttributeError):
        sync.upstream_offset = 1001  # type: ignore[misc]


# Internal topic names


def test_offset_syncs_topic_default_name() -> None:
    assert offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"


def test_offset_syncs_topic_uses_custom_separator() -> None:
    assert offset_syncs_topic("B", separator="_") == "mm2-offset-syncs_B_internal"


def test_offset_syncs_topic_keeps_dots_when_internal_separator_disabled() -> None:
    assert offset_syncs_topic("B", "_", internal_separator_enabled=False) == "mm2-offset-syncs.B.internal"


def test_checkpoints_topic_default_name() -> None:
    assert checkpoints_topic("A") == "A.checkpoints.internal"


def test_checkpoints_topic_uses_custom_separator() -> None:
    assert checkpoints_topic("A", separator="_") == "A_checkpoints_internal"


def test_checkpoints_topic_keeps_dots_when_internal_separator_disabled() -> None:
    assert checkpoints_topic("A", "_", internal_separator_enabled=False) == "A.checkpoints.internal"


def test_heartbeats_topic_name() -> None:
    assert HEARTBEATS_TOPIC == "heartbeats"
