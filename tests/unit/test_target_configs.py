"""Source configs a newer target refuses: translated where Kafka names a successor, else dropped, said once per name."""

from __future__ import annotations

from mirror_engine.observe import flow_problems
from mirror_engine.prepare import ConfigNote, TargetConfigs

UNKNOWN = "Unknown topic config name: {}"


def _known(refused: dict[tuple[str, str], str]) -> TargetConfigs:
    known = TargetConfigs()
    known.refused.update(refused)
    return known


def test_a_removed_config_with_a_successor_is_translated_to_it_at_the_same_value():
    known = _known({("message.timestamp.difference.max.ms", "3600000"):
                    UNKNOWN.format("message.timestamp.difference.max.ms")})
    notes: dict[str, ConfigNote] = {}
    adapted = known.adapt("orders", {"message.timestamp.difference.max.ms": "3600000", "retention.ms": "1"}, notes)
    assert adapted == {"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000",
                       "retention.ms": "1"}
    assert "translated to message.timestamp.before.max.ms and message.timestamp.after.max.ms" in \
        notes["message.timestamp.difference.max.ms"].describe()


def test_a_successor_the_source_sets_itself_is_kept_as_the_source_set_it():
    known = _known({("message.timestamp.difference.max.ms", "5"): UNKNOWN.format("x")})
    adapted = known.adapt("t", {"message.timestamp.difference.max.ms": "5", "message.timestamp.before.max.ms": "9"}, {})
    assert adapted == {"message.timestamp.before.max.ms": "9", "message.timestamp.after.max.ms": "5"}


def test_a_removed_config_without_successor_is_dropped_and_noted_once_with_every_topic():
    known = _known({("message.format.version", "0.10.0"): UNKNOWN.format("message.format.version"),
                    ("message.format.version", "2.1"): UNKNOWN.format("message.format.version")})
    notes: dict[str, ConfigNote] = {}
    for topic, version in (("a", "0.10.0"), ("b", "2.1"), ("c", "0.10.0")):
        assert known.adapt(topic, {"message.format.version": version, "cleanup.policy": "compact"}, notes) == \
            {"cleanup.policy": "compact"}
    assert list(notes) == ["message.format.version"]
    said = notes["message.format.version"].describe()
    assert said.startswith("topic config message.format.version on 3 topic(s) (a, b, c): dropped: Kafka 4 writes")


def test_a_refused_value_is_dropped_with_the_targets_sentence():
    reason = "Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"
    notes: dict[str, ConfigNote] = {}
    assert _known({("segment.bytes", "10"): reason}).adapt("t", {"segment.bytes": "10"}, notes) == {}
    assert reason in notes["segment.bytes=10"].describe()


def test_a_topic_the_target_refused_is_a_flow_problem_naming_it():
    status = {"worker": "w1", "state": "running", "updated_ms": 2**62, "interval_s": 5, "partitions": [],
              "blocked_topics": {"payments": "the target refused to create topic payments: denied"},
              "blocked_topic_count": 1}
    assert flow_problems([status]) == ["worker w1: topic payments is not copied: the target refused to create topic "
                                       "payments: denied"]


def test_log_append_time_topics_left_unsynced_are_said_with_what_their_timestamps_become():
    from types import SimpleNamespace

    from mirror_engine.kafka import ConfigFilter
    from mirror_engine.plan import MM2_CONFIG_EXCLUDES
    from mirror_engine.prepare import unsynced_log_append_time

    def entry(value: str) -> SimpleNamespace:
        return SimpleNamespace(name="message.timestamp.type", value=value)

    entries = {"clicks": [entry("LogAppendTime")], "orders": [entry("CreateTime")]}
    said = unsynced_log_append_time(entries, ConfigFilter(list(MM2_CONFIG_EXCLUDES)).excluded)
    assert len(said) == 1 and "on 1 topic(s) (clicks)" in said[0]
    assert "keep the source broker's append times" in said[0] and "sync.config_include" in said[0]
    assert unsynced_log_append_time(entries, ConfigFilter([]).excluded) == []  # synced: the target stamps its own
