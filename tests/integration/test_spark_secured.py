"""The Spark validation's tasks log in to a secured cluster with a password holding backslashes and quotes."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from mirror_engine.plan import render_client_config
from spark_jobs.validate import _pair_with_spark
from spark_jobs.validation import PartitionRange
from tests.integration.kafka_data import produce

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PASSWORD = 'ab\\nc"\\101'  # a backslash before n, a quote, an octal-looking escape


def test_spark_validation_reads_a_secured_topic_as_a_user_whose_password_has_a_backslash(spark, secured_pair,
                                                                                           unique_name):
    source, _target = secured_pair
    user, topic = f"bs-{unique_name[-8:]}", f"{unique_name}-secured"
    admin = AdminClient(source.client_config())
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result()
    principal = f"User:{user}"
    acls = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*", operation,
                       AclPermissionType.ALLOW) for operation in (AclOperation.READ, AclOperation.DESCRIBE)]
    acls.append(AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, principal, "*", AclOperation.READ,
                           AclPermissionType.ALLOW))
    for future in admin.create_acls(acls).values():
        future.result()
    now = int(time.time() * 1000)
    produce(source, topic, [(0, f"k{i}".encode(), f"v{i}".encode(), None, now + i) for i in range(20)])
    time.sleep(1)  # the new credential and ACLs reach the broker's caches
    config = {"bootstrap.servers": source.bootstrap, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": PASSWORD}
    # Rendered as the job renders the plan's settings; the topic compared with itself, read by the tasks as the user.
    config = render_client_config("src", config, "source.client")
    found, untimestamped = _pair_with_spark(spark, config, config, 1.0)(
        [PartitionRange(topic, 0, topic, 0, 20, 0, 20)], frozenset())
    assert untimestamped == set()
    result = found[(topic, 0)]
    assert (result.source_records, result.target_records, result.missing, result.extra) == (20, 20, [], [])
