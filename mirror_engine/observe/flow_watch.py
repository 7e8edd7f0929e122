"""One plan's flow as seen from outside its engines: the stored mapping and progress, the control records and
the engines' status, each read incrementally with clients kept open (the waits of a migration and the
cockpit both poll it every few seconds)."""

from __future__ import annotations

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.flow import ControlChannel, FlowMapping
from mirror_engine.kafka import TopicPartitionKey, admin_client, existing_topics, list_offsets
from mirror_engine.observe.status import WorkerStatusFeed, is_live
from mirror_engine.plan import MigrationPlan


class FlowWatch:
    """One plan's flow as seen from outside the engines, read incrementally with clients kept open."""

    def __init__(self, plan: MigrationPlan, source_config: dict[str, str], target_config: dict[str, str],
                 status_window_s: float = 120.0) -> None:
        self.plan = plan
        self.source_config, self.target_config = source_config, target_config
        self.source_admin, self.target_admin = admin_client(source_config), admin_client(target_config)
        self.mapping = FlowMapping(plan, target_config)
        self.control = ControlChannel(plan, target_config)
        self.statuses = WorkerStatusFeed(plan, target_config, window_s=status_window_s)
        self._control_loaded = False
        self._flow_started = False

    def refresh(self) -> None:
        if not self._flow_started:
            # No engine of the flow has created its internal topics yet: nothing stored to read.
            topics = self.mapping.topics
            wanted = [topics.progress, topics.offset_syncs]
            self._flow_started = existing_topics(self.target_admin, wanted) == set(wanted)
            if not self._flow_started:
                return
        self.mapping.refresh()
        if not self._control_loaded:
            self.control.load()
            self._control_loaded = True
        else:
            self.control.poll()

    def planned_partitions(self) -> dict[TopicPartitionKey, int]:
        """{(topic, partition): source end} of every partition the flow still copies (switched topics left out)."""
        metadata = self.source_admin.list_topics(timeout=15).topics
        tps = [TopicPartition(topic, p) for topic in sorted(metadata)
               if self.plan.replicates_topic(topic) and topic not in self.control.switched_topics
               for p in metadata[topic].partitions]
        return list_offsets(self.source_admin, tps, OffsetSpec.latest()) if tps else {}

    def lag(self, ends: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """Records not yet copied per partition, from the stored progress (exact whether or not engines run)."""
        unknown = [TopicPartition(t, p) for (t, p) in ends if self.mapping.copied_position(t, p) is None]
        earliest = list_offsets(self.source_admin, unknown, OffsetSpec.earliest()) if unknown else {}
        return {key: max(0, end - (self.mapping.copied_position(*key) or earliest.get(key, 0)))
                for key, end in ends.items()}

    def live_statuses(self) -> list[dict]:
        return [status for status in self.statuses.poll() if is_live(status)]

    def close(self) -> None:
        self.mapping.close()
        self.control.close()
        self.statuses.close()
