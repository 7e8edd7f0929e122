"""Sources too old for an admin API the syncs use: the sync is skipped with a sentence saying what to do by hand.

Kafka 0.11 added DescribeConfigs (KIP-133) and the ACL admin API (KIP-140); a broker before it answers neither, and
librdkafka says so with `_UNSUPPORTED_FEATURE`. Its topics are still copied (the data path needs only the fetch,
list-offsets and metadata APIs that 0.10 has), but their configs and ACLs must be carried over by hand.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException


def too_old(error: KafkaException) -> bool:
    """The broker does not speak the API the request needs (librdkafka checked its API versions)."""
    return bool(error.args) and error.args[0].code() == KafkaError._UNSUPPORTED_FEATURE


def config_sync_skipped(error: KafkaException) -> str:
    return (f"config sync skipped: the source broker does not answer DescribeConfigs ({error.args[0].str()}): its "
            "topics are created with the target's defaults; read each topic's settings on the source with "
            "`kafka-configs.sh --zookeeper <zk> --describe --entity-type topics` and set them on the target with "
            "`kafka-configs.sh --bootstrap-server <target> --alter --entity-type topics --entity-name <topic> "
            "--add-config ...`")


def acl_sync_skipped(error: KafkaException) -> str:
    return (f"ACL sync skipped: the source broker does not answer DescribeAcls ({error.args[0].str()}): list its "
            "ACLs with `kafka-acls.sh --authorizer-properties zookeeper.connect=<zk> --list` and create them on the "
            "target with `kafka-acls.sh --bootstrap-server <target> --add ...`")
