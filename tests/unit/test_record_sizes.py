"""Record sizes as Kafka's DefaultRecord and DefaultRecordBatch count them."""

from __future__ import annotations

from mirror_engine.kafka import (
    RECORD_BATCH_OVERHEAD,
    batch_size_alone,
    header_size_bound,
    raw_size_budget,
    record_size,
    varint_size,
)


def test_varints_are_zig_zag_encoded():
    assert [varint_size(v) for v in (0, -1, 1, 63, -64, 64, -65, 8191, 8192)] == [1, 1, 1, 1, 1, 2, 2, 2, 3]


def test_a_small_record_counts_its_framing_as_kafka_does():
    # length 1 + attributes 1 + timestamp delta 1 + offset delta 1 + key len 1 + "k" + value len 1 + "v" + count 1
    assert record_size(b"k", b"v", None) == 9
    assert record_size(None, None, []) == 7  # null key and value are one varint (-1) each
    assert batch_size_alone(b"k", b"v", None) == RECORD_BATCH_OVERHEAD + 9


def test_headers_count_utf8_names_and_null_values():
    # header: name len 1 + "ü" (2 bytes) + value len (-1) 1
    assert record_size(b"k", b"v", [("ü", None)]) == 9 + 4


def test_the_cheap_bound_never_lets_a_record_over_its_limit_through():
    for key, value, headers in [(b"k" * 300, b"v" * 70_000, [("h" * 200, b"x" * 200), ("ü", None)]),
                                (None, b"v" * 16_000, None), (b"", b"", [("a", b"")] * 50)]:
        exact = batch_size_alone(key, value, headers)
        raw = len(key or b"") + len(value or b"") + header_size_bound(headers or [])
        # With a limit one byte below its size, the cheap bound must send the record to the exact check.
        assert raw > raw_size_budget(exact - 1), (key, value, headers)
