"""The copy contract's record fingerprint is the digest of the same bytes as its first form, for every kind of record:
a copy checked by one form is checked the same by the other (the engine's restart); validation's cheaper
`record_hash` knows records apart exactly as the fingerprint does."""

from __future__ import annotations

import hashlib

import pytest

from mirror_engine.replication import fingerprint, record_hash


def _reference(key: bytes | None, value: bytes | None, headers, timestamp: int) -> bytes:
    """The fingerprint as first written: one digest update per part."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (key, value):
        digest.update(b"-" if part is None else b"+%d:" % len(part) + part)
    for name, header_value in headers or ():
        encoded = name.encode()
        digest.update(b"h%d:" % len(encoded) + encoded)
        digest.update(b"-" if header_value is None else b"+%d:" % len(header_value) + header_value)
    digest.update(b"t%d" % timestamp)
    return digest.digest()


KEYS = [None, b"", b"k", b"key-01234", b"\x00\xff" * 40, b"+3:-t%d%b", bytes(range(256)) * 5]
VALUES = [None, b"", b"v", b"%010d" % 1234 + b"x" * 80, b"-", b"\x00" * 1000, bytes(range(256)) * 300]
HEADERS = [None, [], (), [("seq", b"1234")], [("h", None)], [("", b"")], [("", None), ("a", b"")],
           [("seq", b"1"), ("seq", b"1"), ("trace", None)], [("naïve", b"\xc3\xa9"), ("名前", b"value"), ("🙂", None)],
           [(f"h{i}", b"x" * i) for i in range(40)]]
TIMESTAMPS = [0, -1, 1, 1_764_270_000_123, -(2 ** 63), 2 ** 63 - 1, 2 ** 70, -(2 ** 70)]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", VALUES)
def test_same_digest_as_the_reference_for_every_key_and_value(key, value):
    for headers in HEADERS:
        for timestamp in TIMESTAMPS:
            assert fingerprint(key, value, headers, timestamp) == _reference(key, value, headers, timestamp), (
                key, value, headers, timestamp)


def test_same_digest_for_header_sequences_of_any_kind():
    headers = [("a", b"1"), ("b", None), ("c", b"")]
    expected = _reference(b"k", b"v", headers, 5)
    assert fingerprint(b"k", b"v", headers, 5) == expected
    assert fingerprint(b"k", b"v", tuple(headers), 5) == expected
    assert fingerprint(b"k", b"v", iter(headers), 5) == expected


def test_same_digest_for_buffers_other_than_bytes():
    for key, value in [(bytearray(b"k"), memoryview(b"value")), (memoryview(b""), bytearray())]:
        headers = [("h", bytearray(b"x")), ("m", memoryview(b"yz"))]
        assert fingerprint(key, value, headers, 7) == _reference(key, value, headers, 7)


def test_parts_that_would_run_together_stay_apart():
    # The lengths keep a part's bytes from being read as the next part's.
    assert fingerprint(b"ab", b"c", None, 1) != fingerprint(b"a", b"bc", None, 1)
    assert fingerprint(None, b"", None, 1) != fingerprint(b"", None, None, 1)
    assert fingerprint(b"k", b"v", [("h", b"")], 1) != fingerprint(b"k", b"v", [("h", None)], 1)
    assert fingerprint(b"k", b"v", None, 12) != fingerprint(b"k", b"v1", None, 2)


def test_record_hash_tells_apart_exactly_the_records_fingerprint_tells_apart():
    """Validation pairs records by `record_hash` (cheaper, within one process): two records are the same under it
    exactly when they are the same under `fingerprint`."""
    records = [(key, value, headers, timestamp) for key in KEYS for value in VALUES for headers in HEADERS
               for timestamp in TIMESTAMPS]
    by_fingerprint: dict[bytes, set[int]] = {}
    by_hash: dict[int, set[int]] = {}
    for index, record in enumerate(records):
        by_fingerprint.setdefault(fingerprint(*record), set()).add(index)
        by_hash.setdefault(record_hash(*record), set()).add(index)
    assert sorted(map(sorted, by_hash.values())) == sorted(map(sorted, by_fingerprint.values()))
    assert len(by_fingerprint) < len(records)  # the corpus holds records that are the same (no headers and [])
