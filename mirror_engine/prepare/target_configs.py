"""Topic configs the target accepts: source configs it does not know are translated or dropped, never fatal.

A source of an older Kafka carries topic configs that a newer target no longer knows (Kafka 4 removed
`message.format.version`, `message.downconversion.enable` and `message.timestamp.difference.max.ms`) or values
it refuses. Sent as they are, the target refuses the whole topic. So the target is asked, once per process and
in one request, which of the source's (name, value) pairs it accepts: a `validate_only` CreateTopics of one
probe topic per distinct pair (nothing is created; the broker answers each on its own, with its own sentence).
Then each refused pair is translated where Kafka defines a successor (KIP-937:
`message.timestamp.difference.max.ms` -> `message.timestamp.before.max.ms` and `message.timestamp.after.max.ms`,
both at the same value, which is what the old setting meant), else dropped: the target topic takes the target's
default. Each outcome is said once per config name, with the topics it concerns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from mirror_engine.kafka import ClusterState, stamps_log_append_time

log = logging.getLogger(__name__)

ConfigPair = tuple[str, str]

# Kafka's successors of configs it removed: the old name's value carried to each new name.
SUCCESSORS: dict[str, tuple[str, ...]] = {
    # KIP-937 (Kafka 3.6): the difference bounded both sides; Kafka 4.0 removed it.
    "message.timestamp.difference.max.ms": ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"),
}
# Why a removed config has no successor, where Kafka says so.
DROPPED_BECAUSE: dict[str, str] = {
    "message.format.version": "Kafka 4 writes only record format v2 (KIP-724); the records are copied as v2",
    "message.downconversion.enable": "Kafka 4 no longer down-converts records for old consumers (KIP-896)",
}
_PROBE_PREFIX = "mirror-engine-config-probe-"
_AUTH_ERRORS = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED})


@dataclass
class ConfigNote:
    """What happened to one source config name on the way to the target, and on which topics."""

    name: str
    outcome: str  # the sentence: translated to ..., dropped: ...
    topics: set[str] = field(default_factory=set)

    def describe(self) -> str:
        listed = sorted(self.topics)
        shown = ", ".join(listed[:10]) + (f" and {len(listed) - 10} more" if len(listed) > 10 else "")
        return f"topic config {self.name} on {len(listed)} topic(s) ({shown}): {self.outcome}"


class TargetConfigs:
    """The target's answers about (config name, value) pairs, asked once per pair for the process's life.

    Invariant: `refused[pair]` is the target's reason for refusing a pair it was asked about, absent for one it
    accepts; a pair in neither `refused` nor `accepted` was never asked.
    """

    def __init__(self) -> None:
        self.refused: dict[ConfigPair, str] = {}
        self.accepted: set[ConfigPair] = set()
        self.unanswered = ""  # why the target could not be asked (then every pair is sent as it is)

    def learn(self, admin: AdminClient, pairs: set[ConfigPair], timeout_s: float = 30.0) -> None:
        """Ask the target about the pairs not asked yet (and their successors), in one validate-only request."""
        wanted = set(pairs)
        for name, value in pairs:
            wanted.update((successor, value) for successor in SUCCESSORS.get(name, ()))
        new = sorted(wanted - self.accepted - set(self.refused))
        if not new:
            return
        probes = {f"{_PROBE_PREFIX}{index}": pair for index, pair in enumerate(new)}
        futures = admin.create_topics(
            [NewTopic(probe, 1, -1, config={pair[0]: pair[1]}) for probe, pair in probes.items()],
            request_timeout=timeout_s, validate_only=True,
        )
        for probe, future in futures.items():
            pair = probes[probe]
            try:
                future.result()
                self.accepted.add(pair)
            except KafkaException as error:
                kafka_error = error.args[0]
                if kafka_error.code() in (KafkaError.INVALID_CONFIG, KafkaError.INVALID_REQUEST):
                    self.refused[pair] = kafka_error.str()
                elif kafka_error.code() in _AUTH_ERRORS:
                    self.unanswered = (f"the target principal may not create topics named {_PROBE_PREFIX}* "
                                       "(validate-only, nothing is created), so configs are sent as they are")
                    self.accepted.add(pair)
                else:  # a brief error: treat as accepted now, asked again by the next process
                    self.accepted.add(pair)

    def adapt(self, topic: str, configs: dict[str, str], notes: dict[str, ConfigNote]) -> dict[str, str]:
        """The configs to give the target topic: refused ones translated or dropped, each noted by name."""
        adapted = {name: value for name, value in configs.items() if (name, value) not in self.refused}
        for name, value in sorted(configs.items()):
            reason = self.refused.get((name, value))
            if reason is None:
                continue
            successors = [s for s in SUCCESSORS.get(name, ()) if (s, value) not in self.refused and s not in configs]
            if successors and "Unknown topic config" in reason:
                adapted.update(dict.fromkeys(successors, value))
                outcome = f"translated to {' and '.join(successors)} (same value; the target does not know {name})"
            elif "Unknown topic config" in reason:
                why = DROPPED_BECAUSE.get(name, "the target does not know it")
                outcome = f"dropped: {why}; the target topic takes the target's default"
            else:
                outcome = f"value {value!r} dropped, the target refuses it ({reason}); it takes the target's default"
            note_key = f"{name}={value}" if "Unknown topic config" not in reason else name
            notes.setdefault(note_key, ConfigNote(name, outcome)).topics.add(topic)
        return adapted


def adapt_source_configs(
    source: ClusterState, admin: AdminClient, known: TargetConfigs
) -> tuple[ClusterState, list[str]]:
    """The source state with each topic's configs made acceptable to the target, and one note per config name."""
    pairs = {pair for topic in source.topics.values() for pair in topic.configs.items()}
    known.learn(admin, pairs)
    notes: dict[str, ConfigNote] = {}
    topics = {name: replace(topic, configs=known.adapt(name, topic.configs, notes))
              for name, topic in source.topics.items()}
    said = [note.describe() for _, note in sorted(notes.items())]
    if known.unanswered:
        said.append(known.unanswered)
    return replace(source, topics=topics), said


def unsynced_log_append_time(entries: dict[str, list], excluded: Callable[[str], bool]) -> list[str]:
    """What the target's timestamps are for LogAppendTime source topics when the plan leaves the type unsynced."""
    topics = {name for name, items in entries.items() if stamps_log_append_time(items)}
    if not topics or not excluded("message.timestamp.type"):
        return []
    return [ConfigNote("message.timestamp.type=LogAppendTime", (
        "not synced (MirrorMaker 2's default exclude list): the target topic takes the target's default (CreateTime) "
        "and its records keep the source broker's append times as their timestamps; to keep LogAppendTime, add "
        "message\\.timestamp\\..* to sync.config_include (the target broker then stamps its own times)"),
        topics).describe()]
