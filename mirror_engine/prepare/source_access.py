"""What the source principal may read, and so which of the plan's syncs it allows.

Copying records needs only READ and DESCRIBE on the source topics; each other sync needs one more right,
which a least-privilege principal often lacks. What each needs, and how the broker answers without it:

- data copy: READ (and DESCRIBE) on each topic. A topic without DESCRIBE is absent from the metadata, so it
  is not part of the plan at all; one without READ shows it only in its authorized operations.
- config sync: DESCRIBE_CONFIGS on each topic. DescribeConfigs fails for that topic alone with
  TOPIC_AUTHORIZATION_FAILED.
- ACL sync: DESCRIBE on the cluster (listing ACLs). DescribeAcls answers an empty list rather than an error,
  and DescribeCluster no authorized operations; `acls.read_acls` turns that into CLUSTER_AUTHORIZATION_FAILED.
- group offset sync and checkpoints: DESCRIBE on each group (reading its committed offsets). DescribeGroups
  and OffsetFetch fail for that group with GROUP_AUTHORIZATION_FAILED.

Each lack is a `Denial`, said as one sentence naming the sync, the operation and the resources. A denied
sync is skipped with a warning, or is a problem under `sync.require_source_permissions`; a topic the
principal may not READ is always a problem, since copying its records is what the migration is for.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient

DATA_COPY = "data copy"
CONFIG_SYNC = "config sync"
ACL_SYNC = "ACL sync"
GROUP_OFFSET_SYNC = "group offset sync"

# What happens without the sync, and what the plan can say instead of granting the right ("{it}": it or them).
_CONSEQUENCE = {
    DATA_COPY: "no record of {it} can be copied",
    CONFIG_SYNC: "the target's default configs apply instead of the source's",
    ACL_SYNC: "no ACL is created on the target",
    GROUP_OFFSET_SYNC: "no checkpoint, offset sync or switch for {it}",
}
_INSTEAD = {
    DATA_COPY: "exclude {it} from the plan (topics.exclude)",
    CONFIG_SYNC: "set sync.configs: false",
    ACL_SYNC: "set sync.acls: false",
    GROUP_OFFSET_SYNC: "exclude {it} from the plan (groups.exclude, cutover.groups)",
}
_NAMES_SHOWN = 20


@dataclass(frozen=True)
class Denial:
    """A right the source principal lacks, and the sync that needs it."""

    sync: str  # DATA_COPY, CONFIG_SYNC, ACL_SYNC or GROUP_OFFSET_SYNC
    operation: str  # READ, DESCRIBE_CONFIGS, DESCRIBE
    resource_type: str  # topic, group or cluster
    names: tuple[str, ...] = ()  # the topics or groups; none for the cluster

    def resources(self) -> str:
        if self.resource_type == "cluster":
            return "the cluster"
        shown = ", ".join(self.names[:_NAMES_SHOWN])
        if len(self.names) > _NAMES_SHOWN:
            shown += f" and {len(self.names) - _NAMES_SHOWN} more"
        return f"{self.resource_type}{'s' if len(self.names) > 1 else ''} {shown}"

    def sentence(self, required: bool) -> str:
        """One line: a warning when the sync is merely skipped, a problem (saying what to do) when `required`."""
        it = "them" if len(self.names) > 1 else "it"
        lack = f"the source principal lacks {self.operation} on {self.resources()}"
        consequence = _CONSEQUENCE[self.sync].format(it=it)
        instead = _INSTEAD[self.sync].format(it=it)
        if self.sync == DATA_COPY:
            return f"data copy impossible: {lack}, so {consequence}; grant it, or {instead}"
        if required:
            return (f"{self.sync} refused: {lack} and sync.require_source_permissions is true; grant it, or "
                    f"{instead}, or set sync.require_source_permissions: false to skip it with a warning")
        return f"{self.sync} skipped: {lack} ({consequence})"

    def extent(self) -> str:
        """How much of its sync it stops: 'not allowed' or 'not allowed for 2 topics'."""
        if self.resource_type == "cluster":
            return "not allowed"
        return f"not allowed for {len(self.names)} {self.resource_type}{'s' if len(self.names) > 1 else ''}"


@dataclass(frozen=True)
class SourceAccess:
    """Which of the plan's syncs the source principal's permissions allow."""

    asked: tuple[str, ...]  # the syncs the plan asks for, in order
    denials: tuple[Denial, ...]
    required: bool  # sync.require_source_permissions

    def allowed(self) -> list[str]:
        denied = {denial.sync for denial in self.denials}
        return [sync for sync in self.asked if sync not in denied]

    def statement(self) -> str:
        """One line over every sync the plan asks for, e.g. 'source permissions: data copy allowed, config sync
        not allowed for 1 topic, ACL sync not allowed'."""
        parts = []
        for sync in self.asked:
            denials = [denial for denial in self.denials if denial.sync == sync]
            parts.append(f"{sync} {'; '.join(d.extent() for d in denials) if denials else 'allowed'}")
        return "source permissions: " + ", ".join(parts)

    def problems(self) -> list[str]:
        return [d.sentence(self.required) for d in self.denials if self.required or d.sync == DATA_COPY]

    def warnings(self) -> list[str]:
        return [d.sentence(False) for d in self.denials if not self.required and d.sync != DATA_COPY]

    def to_dict(self) -> dict[str, object]:
        return {
            "allowed": self.allowed(),
            "denied": [{"sync": d.sync, "operation": d.operation, "resource_type": d.resource_type,
                        "names": list(d.names)} for d in self.denials],
        }


def unreadable_topics(admin: AdminClient, names: list[str], timeout_s: float = 15.0) -> list[str]:
    """The topics among `names` whose authorized operations lack READ (a broker that does not report them: none)."""
    if not names:
        return []
    futures = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s,
                                    include_authorized_operations=True)
    lacking = []
    for name, future in futures.items():
        try:
            operations = future.result().authorized_operations
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise
            lacking.append(name)
            continue
        if operations is not None and AclOperation.READ not in operations:
            lacking.append(name)
    return sorted(lacking)


def topic_denial(sync: str, operation: str, names: list[str]) -> list[Denial]:
    """One denial for these topics, or none when there are none."""
    return [Denial(sync, operation, "topic", tuple(sorted(names)))] if names else []
