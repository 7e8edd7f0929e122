"""The status reporter: what the engine tells the world (status topic, loopback HTTP, its log).

The snapshot's fields are described in `mirror_engine.observe.status`; the status topic is how every other
component (sensors, the cockpit, `mirror-engine status`) sees a worker.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.kafka import list_offsets
from mirror_engine.observe import StatusServer, bounded_status
from mirror_engine.plan import MigrationPlan
from mirror_engine.replication.clients import EngineClients
from mirror_engine.replication.faults import EngineError, Faults
from mirror_engine.replication.partition_state import PartitionState

log = logging.getLogger("mirror_engine.replication.engine")

TopicPartitionKey = tuple[str, int]
LOG_PARTITIONS = 5  # partitions named at each log interval: the stopped, then the most behind


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
        self.snapshot: dict = {}
        self.bytes_fetched: dict[TopicPartitionKey, int] = {}
        self._rate_base: tuple[float, dict[TopicPartitionKey, tuple[int, int]]] = (time.monotonic(), {})
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

    def on_consumer_stats(self, stats_json: str) -> None:
        for topic, data in json.loads(stats_json).get("topics", {}).items():
            for partition, numbers in data.get("partitions", {}).items():
                if partition != "-1":
                    self.bytes_fetched[(topic, int(partition))] = int(numbers.get("rxbytes", 0))

    # ------------------------------------------------------------------ lag
    def lag(self) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, from the consumer's cached watermarks."""
        lags = {}
        for key, state in self.states.items():
            _low, high = self.clients.consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
            lags[key] = max(0, (high if high >= 0 else state.end_seen) - state.copied_position())
        return lags

    def _source_lag(self) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, against the source's ends asked now (the consumer's cached
        watermarks stand still while partitions are paused)."""
        try:
            ends = list_offsets(self.clients.source_admin, [TopicPartition(*key) for key in self.states],
                                OffsetSpec.latest(), timeout_s=5)
        except KafkaException as error:
            log.debug("source ends unavailable, using the consumer's: %s", error)
            return self.lag()
        return {key: max(0, ends[key] - state.copied_position()) for key, state in self.states.items()}

    # ------------------------------------------------------------------ snapshot
    def build(self, exiting: bool = False) -> dict:
        """This worker's status snapshot (see `mirror_engine.observe.status`)."""
        now_ms = int(time.time() * 1000)
        now = time.monotonic()
        base_time, base = self._rate_base
        elapsed = max(now - base_time, 1e-3)
        lag = self._source_lag() if self.states and not exiting else {}
        partitions = []
        for key, state in sorted(self.states.items()):
            behind = lag.get(key, 0)
            copied_before, bytes_before = base.get(key, (state.records_copied, self.bytes_fetched.get(key, 0)))
            rate = (state.records_copied - copied_before) / elapsed
            # At most this far behind: the next record to copy is no older than the last one copied.
            behind_ms = None if state.last_timestamp_ms < 0 else now_ms - state.last_timestamp_ms
            partitions.append({
                "topic": state.topic, "partition": state.partition, "target_topic": state.target_topic,
                "position": state.copied_position(), "lag": behind, "lag_ms": behind_ms if behind else 0,
                "records_copied": state.records_copied, "records_per_s": round(rate, 1),
                "bytes_fetched": self.bytes_fetched.get(key, 0),
                "bytes_per_s": round((self.bytes_fetched.get(key, 0) - bytes_before) / elapsed, 1),
                "catch_up_s": 0 if not behind else (round(behind / rate, 1) if rate > 0 else None),
                "replication_latency_ms": state.latency_ms if state.latency_ms >= 0 else None,
                "record_age_ms": state.record_age_ms if state.record_age_ms >= 0 else None,
                "reconciled_records": state.reconciled_records,
                "reconcile_fallback": state.reconcile_fallback or None,
                "failed": state.failed or None,
            })
        self._rate_base = (now, {key: (state.records_copied, self.bytes_fetched.get(key, 0))
                                 for key, state in self.states.items()})
        return {
            "partition_count": len(partitions),
            "partitions_behind": sum(1 for p in partitions if p["lag"]),
            "partitions_stopped": sum(1 for p in partitions if p["failed"]),
            "plan": self.plan.name, "source": self.plan.source.alias, "target": self.plan.target.alias,
            "worker": self.worker_id, "mode": self.mode,
            "exactly_once": self.exactly_once, "state": "exited" if exiting else self.flow_state(),
            "updated_ms": now_ms, "interval_s": self.plan.engine.status_interval_s,
            "http": self._server.url if self._server else None,
            "records_copied": sum(p["records_copied"] for p in partitions),
            "records_per_s": round(sum(p["records_per_s"] for p in partitions), 1),
            "lag": sum(p["lag"] for p in partitions),
            "reconcile_fallbacks": sum(1 for p in partitions if p["reconcile_fallback"]),
            "last_error": self.faults.fatal or self.faults.last_error or None,
            # Topics not copied, for a reason the target gave (bounded: the first 20 by name, and the count).
            "blocked_topics": dict(sorted(self.faults.blocked_topics.items())[:20]),
            "blocked_topic_count": len(self.faults.blocked_topics),
            "partitions": partitions,
        }

    def publish(self, exiting: bool = False) -> None:
        """Refresh the HTTP snapshot and write it to the status topic (skipped, not waited for, when the
        producer's queue is full: the next one follows within an interval)."""
        self.snapshot = self.build(exiting)  # every partition, served on demand by HTTP
        payload = json.dumps(bounded_status(self.snapshot)).encode()  # the most telling ones, every interval
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
        worst = sorted((key for key, state in self.states.items() if state.failed or lag[key]),
                       key=lambda key: (not self.states[key].failed, -lag[key], key))
        for key in worst[:LOG_PARTITIONS]:
            state = self.states[key]
            latency = f"{state.latency_ms} ms" if state.latency_ms >= 0 else "-"
            log.info("  %s[%d] -> %s: position %d, lag %d, latency %s, copied %d%s", state.topic, state.partition,
                     state.target_topic, state.copied_position(), lag[key], latency, state.records_copied,
                     f", STOPPED: {state.failed}" if state.failed else "")
        if len(worst) > LOG_PARTITIONS:
            log.info("  ... and %d more partition(s) behind (see `mirror-engine status`)", len(worst) - LOG_PARTITIONS)
