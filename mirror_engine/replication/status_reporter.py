"""The status reporter: what the engine tells the world (status topic, loopback HTTP, its log).

The snapshot's fields are described in `mirror_engine.observe.status`; the status topic is how every other
component (sensors, the cockpit, `mirror-engine status`) sees a worker.
"""

from __future__ import annotations

import heapq
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.kafka import TopicPartitionKey, list_offsets
from mirror_engine.observe import STATUS_PARTITIONS, StatusServer, status_record, worst_first
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.faults import EngineError, Faults
from mirror_engine.replication.partition_state import PartitionState

log = logging.getLogger("mirror_engine.replication.engine")

LOG_PARTITIONS = 5  # partitions named at each log interval: the stopped, then the most behind
# Partitions not fetched (the flow paused, a partition stopped) whose source end is asked at each status interval,
# in turn: the status costs the source one small request an interval, whatever the partition count.
ASKED_ENDS = 1_000


class StatusReporter:
    def __init__(self, plan: MigrationPlan, worker_id: str, mode: str, exactly_once: bool, status_topic: str,
                 states: dict[TopicPartitionKey, PartitionState], faults: Faults,
                 flow_state: Callable[[], str], on_delivery: Callable[[Any, Any], None],
                 clients: EngineClients) -> None:
        self.plan = plan
        self.worker_id = worker_id
        self.mode = mode
        self.exactly_once = exactly_once
        self.status_topic = status_topic
        self.states = states
        self.faults = faults
        self.flow_state = flow_state
        self.on_delivery = on_delivery
        self.clients = clients
        self._summary: dict = {}  # the last interval's status without its rows (see `snapshot`)
        self._asked_ends: dict[TopicPartitionKey, int] = {}  # source ends of partitions not fetched, asked
        self._ask_from = 0  # where the next turn of those asks starts
        self._rated_at = time.monotonic()  # when the partitions' rates were last taken
        self._server: StatusServer | None = None

    # ------------------------------------------------------------------ HTTP
    def start_server(self) -> None:
        engine = self.plan.engine
        if engine.status_port < 0:
            return
        try:
            self._server = StatusServer(lambda: self.snapshot, engine.status_port, engine.status_host)
        except OSError as error:
            raise EngineError(f"cannot serve the status on {engine.status_host}:{engine.status_port}: {error} (set "
                              "engine.status_port, or --status-port, to a free port, or 0 for any)") from error
        log.info("status of worker %s on %s/status and %s/metrics", self.worker_id, self._server.url,
                 self._server.url)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    # ------------------------------------------------------------------ lag
    def lag(self) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, against the source's end as last known (see `_lag_of`)."""
        return {key: self._lag_of(key, state) for key, state in self.states.items()}

    def _lag_of(self, key: TopicPartitionKey, state: PartitionState) -> int:
        """At no call to the client per partition (10,000 calls an interval held the copy's thread with the
        checkpoint loop's beside it), the end is the one listed when the partition was assigned, the end of
        partition the consumer reported, the records it handed over, or, for a partition it does not fetch, the
        end last asked (`ask_unfetched_ends`)."""
        end = max(state.end_known, state.end_seen, state.produced_next, self._asked_ends.get(key, -1))
        # From what the target acknowledged, not from the stored progress's bound: a periodic offset-sync in flight
        # for a partition's last record held that one lower, and the status showed a record of lag per partition.
        return max(0, end - state.acknowledged_position())

    def ask_unfetched_ends(self) -> None:
        """The source's ends of partitions the consumer does not fetch (paused with the flow, or stopped), whose
        cached watermarks stand still: ASKED_ENDS of them at a time, in turn, so that the status's request stays
        small at any partition count (the lag of 10,000 paused partitions is refreshed every 10 intervals)."""
        if self.flow_state() == "paused":
            unfetched = sorted(self.states)
        else:
            unfetched = sorted(key for key, state in self.states.items() if state.failed)
        self._asked_ends = {key: end for key, end in self._asked_ends.items() if key in self.states}
        if not unfetched:
            return
        start = self._ask_from % len(unfetched)
        turn = (unfetched[start:] + unfetched[:start])[:ASKED_ENDS]
        self._ask_from = start + len(turn)
        try:
            ends = list_offsets(self.clients.source_admin, [TopicPartition(*key) for key in turn],
                                OffsetSpec.latest(), timeout_s=5)
        except KafkaException as error:
            log.debug("source ends unavailable, the lag shows the ends last known: %s", error)
            return
        self._asked_ends.update(ends)

    # ------------------------------------------------------------------ snapshot
    def build(self, exiting: bool = False) -> dict:
        """This worker's status record (see `mirror_engine.observe.status`), bounded at any partition count.

        An interval refreshes each partition's figures in place (`PartitionState.lag`, the rates) and builds rows
        only for the few partitions the record lists: at 10,000 partitions, a row for each (about 8.5 MiB of
        dicts, held beside the previous interval's) was the largest part of the engine's memory beside the copy,
        and a third of the copy thread's time at a 2-s interval. The HTTP status builds every row when asked."""
        now_ms = int(time.time() * 1000)
        now = time.monotonic()
        elapsed = max(now - self._rated_at, 1e-3)
        self._rated_at = now
        if self.states and not exiting:
            self.ask_unfetched_ends()
        copied = lag = behind = stopped = fallbacks = 0
        rate = 0.0
        for key, state in self.states.items():
            state.lag = self._lag_of(key, state)
            if state.rated_records >= 0:
                state.records_per_s = round((state.records_copied - state.rated_records) / elapsed, 1)
                state.bytes_per_s = round((state.bytes_read - state.rated_bytes) / elapsed, 1)
            state.rated_records, state.rated_bytes = state.records_copied, state.bytes_read
            copied += state.records_copied
            lag += state.lag
            rate += state.records_per_s
            behind += state.lag > 0
            stopped += bool(state.failed)
            fallbacks += bool(state.reconcile_fallback)
        self._summary = {
            "partition_count": len(self.states), "partitions_behind": behind, "partitions_stopped": stopped,
            "plan": self.plan.name, "source": self.plan.source.alias, "target": self.plan.target.alias,
            "worker": self.worker_id, "mode": self.mode,
            "exactly_once": self.exactly_once, "state": "exited" if exiting else self.flow_state(),
            "updated_ms": now_ms, "interval_s": self.plan.engine.status_interval_s,
            "http": self._server.url if self._server else None,
            "records_copied": copied, "records_per_s": round(rate, 1), "lag": lag,
            "reconcile_fallbacks": fallbacks,
            "last_error": self.faults.fatal or self.faults.last_error or None,
            # Topics not copied, for a reason the target gave (bounded: the first 20 by name, and the count).
            "blocked_topics": dict(sorted(self.faults.blocked_topics.items())[:20]),
            "blocked_topic_count": len(self.faults.blocked_topics),
        }
        if len(self.states) <= STATUS_PARTITIONS:
            listed = [state for _, state in sorted(self.states.items())]
        else:
            listed = _most_pressing(self.states.values(), STATUS_PARTITIONS, lambda state: state.lag, now_ms)
        return status_record(self._summary, [_row(state, now_ms) for state in listed], self.states, len(self.states))

    @property
    def snapshot(self) -> dict:
        """The last status with every partition's row, built when asked (the HTTP status and metrics): {} before
        the first interval. Read on the HTTP server's thread: the partitions are listed at once (`list` of a dict's
        items runs without releasing the GIL) and their figures are those of the last interval."""
        if not self._summary:
            return {}
        states = sorted(list(self.states.items()))
        now_ms = self._summary["updated_ms"]
        return {**self._summary, "partition_count": len(states),
                "partitions": [_row(state, now_ms) for _, state in states]}

    def publish(self, exiting: bool = False) -> None:
        """Write this interval's status record to the status topic (skipped, not waited for, when the producer's
        queue is full: the next one follows within an interval)."""
        payload = json.dumps(self.build(exiting)).encode()
        try:
            self.clients.producer.produce(self.status_topic, payload, self.worker_id.encode(), 0, self.on_delivery)
        except BufferError:
            pass
        except KafkaException as error:
            if not exiting:
                if not error.args[0].fatal():
                    raise
                # The producer failed fatally (fenced by another engine of the flow, say): the engine stops with
                # the reason, and its last status is written on the way out (below).
                self.faults.producer_failed(error.args[0], f"writing the status failed: {error.args[0].str()}")
                return
            # The producer failed fatally: a short-lived one still tells the status readers why it stopped,
            # instead of leaving "running" as the flow's last word.
            log.debug("status through the engine's producer failed (%s): writing it with a new one", error)
            last_word = Producer({**self.clients.target_config, "acks": "all"})
            last_word.produce(self.status_topic, payload, self.worker_id.encode(), 0)
            if last_word.flush(15):
                log.error("the final status could not be written to %s", self.status_topic)

    # ------------------------------------------------------------------ log
    def log_progress(self, elapsed: float) -> None:
        """One summary line, then the few partitions that matter most (stopped, then the most behind): the log
        stays a few lines an interval whatever the partition count; every partition is in the status."""
        copied = sum(s.records_copied for s in self.states.values())
        lag = self.lag()
        behind = sum(1 for n in lag.values() if n > 0)
        stopped = sum(1 for s in self.states.values() if s.failed)
        log.info("copied %d records in %.0f s (%.0f rec/s); lag %d records (%d of %d partition(s) behind%s)", copied,
                 elapsed, copied / max(elapsed, 1e-9), sum(lag.values()), behind, len(self.states),
                 f", {stopped} STOPPED" if stopped else "")
        def lag_of(state: PartitionState) -> int:
            return lag[(state.topic, state.partition)]

        worth_naming = [state for key, state in self.states.items() if state.failed or lag[key]]
        for state in _most_pressing(worth_naming, LOG_PARTITIONS, lag_of, int(time.time() * 1000)):
            latency = f"{state.latency_ms} ms" if state.latency_ms >= 0 else "-"
            log.info("  %s[%d] -> %s: position %d, lag %d, latency %s, copied %d%s", state.topic, state.partition,
                     state.target_topic, state.copied_position(), lag_of(state), latency, state.records_copied,
                     f", STOPPED: {state.failed}" if state.failed else "")
        if len(worth_naming) > LOG_PARTITIONS:
            log.info("  ... and %d more partition(s) behind (see `mirror-engine status`)",
                     len(worth_naming) - LOG_PARTITIONS)


def _most_pressing(states: Iterable[PartitionState], count: int, lag: Callable[[PartitionState], int],
                   now_ms: int) -> list[PartitionState]:
    """The `count` partitions a status or a log names, in the status's order (`worst_first`), without sorting all."""
    return heapq.nsmallest(count, states, key=lambda state: worst_first(
        bool(state.failed), lag(state), _lag_ms(state, now_ms), state.topic, state.partition))


def _lag_ms(state: PartitionState, now_ms: int) -> int | None:
    """At most this far behind in time: the next record to copy is no older than the last one copied."""
    if not state.lag:
        return 0
    return None if state.last_timestamp_ms < 0 else now_ms - state.last_timestamp_ms


def _row(state: PartitionState, now_ms: int) -> dict:
    """A partition's row of the status, from its figures as of the last interval."""
    rate = state.records_per_s
    return {
        "topic": state.topic, "partition": state.partition, "target_topic": state.target_topic,
        "position": state.copied_position(), "lag": state.lag, "lag_ms": _lag_ms(state, now_ms),
        "records_copied": state.records_copied, "records_per_s": rate,
        "bytes_fetched": state.bytes_read, "bytes_per_s": state.bytes_per_s,
        "catch_up_s": 0 if not state.lag else (round(state.lag / rate, 1) if rate > 0 else None),
        "replication_latency_ms": state.latency_ms if state.latency_ms >= 0 else None,
        "record_age_ms": state.record_age_ms if state.record_age_ms >= 0 else None,
        "reconciled_records": state.reconciled_records,
        "reconcile_fallback": state.reconcile_fallback or None,
        "failed": state.failed or None,
    }
