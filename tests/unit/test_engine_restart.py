"""Pure parts of the engine's restart: the source walk of a target tail, the sync rule, the record fingerprint."""

from __future__ import annotations

from mirror_engine.replication import Reconciled, SourceWalk, SyncOnDelta, TargetTail, fingerprint


def _fp(i: int) -> bytes:
    return fingerprint(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")], 1_000 + i)


def test_a_tail_after_offset_holes_maps_each_record_and_writes_a_sync_at_each_hole():
    # Stored: source 100 -> target 40. The target holds 4 more records: source 100, 101, then 104, 105
    # (102 and 103 are transaction markers on the source).
    walk = SourceWalk(TargetTail("orders", 0, "orders", 100, 40, 44))
    for offset in (100, 101, 104, 105, 106):
        walk.add(offset, _fp(offset))
    result = walk.verdict(_fp(100), _fp(105))
    assert isinstance(result, Reconciled)
    assert (result.position, result.target_position, result.records, result.last_source) == (106, 44, 4, 105)
    assert result.syncs == [(100, 40), (104, 42)]


def test_a_tail_that_is_not_the_next_source_records_is_refused():
    walk = SourceWalk(TargetTail("orders", 0, "orders", 100, 40, 42))
    walk.add(100, _fp(100))
    walk.add(101, _fp(101))
    assert "not the source's next records" in walk.verdict(_fp(100), _fp(999))
    assert "not the source's next records" in walk.verdict(_fp(999), _fp(101))


def test_a_tail_longer_than_the_source_is_refused():
    walk = SourceWalk(TargetTail("orders", 0, "orders", 100, 40, 45))
    walk.add(100, _fp(100))
    assert "1 record(s)" in walk.verdict(_fp(100), _fp(100))


def test_fingerprints_tell_key_value_headers_and_timestamp_apart():
    base = fingerprint(b"k", b"v", [("h", b"1")], 5)
    assert base == fingerprint(b"k", b"v", [("h", b"1")], 5)
    others = [fingerprint(b"kv", b"", [("h", b"1")], 5), fingerprint(None, b"kv", [("h", b"1")], 5),
              fingerprint(b"k", b"v", [("h", None)], 5), fingerprint(b"k", b"v", [], 5),
              fingerprint(b"k", b"v", [("h", b"1")], 6), fingerprint(b"k", None, [("h", b"1")], 5)]
    assert len({base, *others}) == 7


def test_the_sync_rule_fires_at_the_first_record_and_at_each_change_of_delta():
    rule = SyncOnDelta()
    assert [rule.due(s, t) for s, t in [(10, 0), (11, 1), (14, 2), (15, 3), (15, 4)]] == [True, False, True, False,
                                                                                          True]

