"""Reading MirrorMaker 2 properties files into plans: good files map field by field; each bad one fails with
problems that start with the MM2 key at fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror_engine.mm2 import (
    Mm2Import,
    import_mm2_properties,
    load_mm2_config,
    parse_properties,
    plan_from_mm2_properties,
)
from mirror_engine.plan import PlanError

ROOT = Path(__file__).resolve().parents[2]

REALISTIC = r"""
# MirrorMaker 2: move the orders domain from dc1 to dc2.
! Java .properties comments may also start with an exclamation mark.
clusters = dc1, dc2, dr

dc1.bootstrap.servers = kafka-dc1-1.example.internal:9093, \
                        kafka-dc1-2.example.internal:9093
dc2.bootstrap.servers: kafka-dc2-1.example.internal:9093
dr.bootstrap.servers   kafka-dr-1.example.internal:9093

# Both sides authenticate with SCRAM; the password comes from the environment.
security.protocol = SASL_SSL
sasl.mechanism = SCRAM-SHA-512
dc1.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="mirror" \
    password="${env:DC1_MIRROR_PASSWORD}";
# The properties layer turns \\\" into \", which JAAS reads as a quote inside the password.
dc2.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="mirror-dc2" password="p\\\"w";
dc2.ssl.truststore.type = PEM
dc2.ssl.truststore.location = /etc/kafka/dc2-ca.pem
dc2.ssl.endpoint.identification.algorithm =
dc1.consumer.isolation.level = read_committed
dc2.producer.compression.type = zstd

dc1->dc2.enabled = true
dc2->dc1.enabled = false
dc1->dr.enabled = false

# Top-level lists apply to every flow; this flow narrows them.
topics = .*
dc1->dc2.topics = orders\\..*, \
                  invoices
dc1->dc2.topics.exclude = orders\\.debug\\..*, .*[\\-\\.]internal, __.*
dc1->dc2.groups = orders-.*, billing
groups.exclude = console-consumer-.*, test-.*

replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
replication.factor = 3
config.properties.exclude = follower\\.replication\\.throttled\\.replicas, min\\.insync\\.replicas, \
    retention\\.bytes
sync.topic.acls.enabled = FALSE
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 20
emit.checkpoints.interval.seconds = 15
emit.heartbeats.interval.seconds = 5
refresh.topics.interval.seconds = 60
dc2.exactly.once.source.support = enabled

tasks.max = 8
offset-syncs.topic.location = target
offset.lag.max = 50
checkpoints.topic.replication.factor = 3
dc2.offset.storage.replication.factor = 3
dedicated.mode.enable.internal.rest = true
"""

MINIMAL = """\
clusters = a, b
a.bootstrap.servers = 127.0.0.1:19092
b.bootstrap.servers = 127.0.0.1:29092
a->b.enabled = true
"""


def _problems(text: str, flow: str | None = None) -> list[str]:
    with pytest.raises(PlanError) as caught:
        plan_from_mm2_properties(text, "test.properties", flow)
    return caught.value.problems


def _only_problem_about(text: str, key: str) -> str:
    problems = _problems(text)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{key}: "), problems
    return problems[0]


# ---- Properties syntax ----------------------------------------------------------------------------------


def test_properties_syntax():
    text = (
        "# comment ending in a backslash does not continue \\\n"
        "not.continued = 1\n"
        "  ! another comment\n"
        "spaced.key   value with spaces  \n"
        "colon.key:colon value\n"
        "equals.key=a=b:c\n"
        "continued = first, \\\n"
        "     second\n"
        "escaped\\ key\\=x = tab\\there \\u00e9 \\\\ end\n"
        "empty.value =\n"
        "twice = 1\n"
        "twice = 2\n"
    )
    assert parse_properties(text) == {
        "not.continued": "1",
        "spaced.key": "value with spaces  ",  # Java keeps trailing blanks; MM2's ConfigDef trims them
        "colon.key": "colon value",
        "equals.key": "a=b:c",
        "continued": "first, second",
        "escaped key=x": "tab\there \u00e9 \\ end",
        "empty.value": "",
        "twice": "2",
    }


def test_crlf_line_endings_and_continuation_at_end_of_file():
    assert parse_properties("a = 1\r\nb = 2 \\") == {"a": "1", "b": "2 "}


# ---- Good files -----------------------------------------------------------------------------------------


def test_realistic_file_maps_to_the_plan(monkeypatch):
    plan = plan_from_mm2_properties(REALISTIC, "mm2.properties")

    assert plan.name == "dc1-to-dc2"
    assert plan.source.alias == "dc1" and plan.target.alias == "dc2"
    assert plan.source.bootstrap_servers == "kafka-dc1-1.example.internal:9093,kafka-dc1-2.example.internal:9093"
    assert plan.target.bootstrap_servers == "kafka-dc2-1.example.internal:9093"
    # Top-level security settings apply to both clusters; jaas becomes librdkafka's username/password.
    assert plan.source.client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mirror",
        "sasl.password": "${DC1_MIRROR_PASSWORD}",
    }
    assert plan.target.client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mirror-dc2",
        "sasl.password": 'p"w',
        "ssl.ca.location": "/etc/kafka/dc2-ca.pem",
        "unsafe.skip.hostname.verification": "true",
    }
    monkeypatch.setenv("DC1_MIRROR_PASSWORD", "s3cret")
    assert plan.source.client_config()["sasl.password"] == "s3cret"

    # Flow-scoped lists win; entries equal to MM2's default excludes are left to the plan's own defaults.
    assert plan.topics.include == [r"orders\..*", "invoices"]
    assert plan.topics.exclude == [r"orders\.debug\..*"]
    assert plan.groups.include == ["orders-.*", "billing"]
    assert plan.groups.exclude == ["test-.*"]
    assert plan.replicates_topic("orders.created")
    assert not plan.replicates_topic("orders.debug.x")
    assert not plan.replicates_topic("customers")

    assert plan.replication_policy.type == "identity"
    assert plan.policy().format_remote_topic("dc1", "orders.created") == "orders.created"
    assert plan.sync.replication_factor == 3
    assert plan.sync.configs is True
    assert plan.sync.acls is False
    assert plan.sync.config_exclude == [r"retention\.bytes"]
    assert plan.cutover.sync_group_offsets is True
    assert plan.cutover.checkpoint_interval_s == 15  # emit.checkpoints.interval.seconds
    assert plan.cutover.sync_group_offsets_interval_s == 20  # each task keeps its own interval, as in MM2
    assert plan.engine.run_checkpoints is True
    assert plan.engine.heartbeat_interval_s == 5
    assert plan.engine.refresh_interval_s == 60
    assert plan.engine.exactly_once is True

    # Recognised settings the engine does not need are recorded, not dropped.
    assert plan.engine.offset_lag_max == 50
    for key in ("tasks.max", "offset-syncs.topic.location", "dc1.consumer.isolation.level",
                "dc2.producer.compression.type", "dc2.offset.storage.replication.factor"):
        assert key in plan.description


def test_minimal_file_takes_mirrormaker2_defaults_that_shape_the_target():
    plan = plan_from_mm2_properties(MINIMAL, "mm2.properties")
    assert plan.name == "a-to-b"
    assert plan.replication_policy.type == "default"  # MM2's DefaultReplicationPolicy: a.orders
    assert plan.policy().format_remote_topic("a", "orders") == "a.orders"
    assert plan.sync.replication_factor == 2
    assert plan.cutover.sync_group_offsets is False
    assert plan.topics.include == [".*"]
    assert plan.source.client == {}
    assert plan.engine.exactly_once is False
    assert plan.engine.replicate_heartbeats is True  # MM2 copies heartbeats topics unless told not to
    assert not plan_from_mm2_properties(MINIMAL + "heartbeats.replication.enabled = false\n",
                                        "mm2.properties").engine.replicate_heartbeats


def test_flow_is_chosen_when_several_are_enabled():
    text = MINIMAL + "b->a.enabled = true\nb->a.topics = returns\na->b.topics = orders\n"
    forward = plan_from_mm2_properties(text, "mm2.properties", flow="a->b")
    backward = plan_from_mm2_properties(text, "mm2.properties", flow=" b -> a ")
    assert (forward.source.alias, forward.target.alias, forward.topics.include) == ("a", "b", ["orders"])
    assert (backward.source.alias, backward.target.alias, backward.topics.include) == ("b", "a", ["returns"])
    assert backward.name == "b-to-a"


def test_flow_scoped_settings_beat_top_level_ones():
    text = MINIMAL + (
        "replication.factor = 1\na->b.replication.factor = 3\n"
        "sync.topic.configs.enabled = true\na->b.sync.topic.configs.enabled = false\n"
        "groups = x\na->b.groups = y\n"
        "replication.policy.class = org.apache.kafka.connect.mirror.DefaultReplicationPolicy\n"
        "a->b.replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
        "b->a.replication.factor = 5\n"
    )
    plan = plan_from_mm2_properties(text, "mm2.properties")
    assert plan.sync.replication_factor == 3
    assert plan.sync.configs is False
    assert plan.groups.include == ["y"]
    assert plan.replication_policy.type == "identity"


@pytest.mark.parametrize("line", ["replication.policy.class = IdentityReplicationPolicy",
                                  "a->b.value.converter = ByteArrayConverter"])
def test_a_class_named_by_its_simple_name_is_refused_as_mm2_refuses_it(line: str):
    problems = _problems(MINIMAL + line + "\n")
    assert [problem.split(": ", 1)[0] for problem in problems] == [line.split(" = ")[0]]
    assert "org.apache.kafka.connect." in problems[0]


def test_top_level_settings_apply_when_the_flow_has_none():
    plan = plan_from_mm2_properties(MINIMAL + "topics = t1 , t2,,\nreplication.factor = -1\n", "mm2.properties")
    assert plan.topics.include == ["t1", "t2"]
    assert plan.sync.replication_factor == -1


def test_legacy_blacklist_keys():
    text = MINIMAL + (
        "topics.blacklist = scratch-.*\na->b.groups.blacklist = tmp-.*\n"
        "config.properties.blacklist = x\\\\.y\n"
    )
    plan = plan_from_mm2_properties(text, "mm2.properties")
    assert plan.topics.exclude == ["scratch-.*"]
    assert plan.groups.exclude == ["tmp-.*"]
    assert plan.sync.config_exclude == [r"x\.y"]
    # The current name wins over the legacy one in the same scope.
    both = MINIMAL + "topics.exclude = new-.*\ntopics.blacklist = old-.*\n"
    assert plan_from_mm2_properties(both, "mm2.properties").topics.exclude == ["new-.*"]


def test_custom_separator():
    text = MINIMAL + "replication.policy.separator = _\nreplication.policy.internal.topic.separator.enabled = false\n"
    plan = plan_from_mm2_properties(text, "mm2.properties")
    assert plan.replication_policy.type == "default"
    assert plan.replication_policy.separator == "_"
    assert plan.replication_policy.internal_separator_enabled is False
    policy = plan.policy()
    assert policy.format_remote_topic("a", "orders") == "a_orders"
    assert policy.offset_syncs_topic("b") == "mm2-offset-syncs.b.internal"


def test_example_file_loads():
    plan = load_mm2_config(ROOT / "migrations" / "mm2-example.properties")
    assert plan.name == "src-to-tgt"
    assert (plan.source.alias, plan.target.alias) == ("src", "tgt")
    assert plan.source.bootstrap_servers == "127.0.0.1:19092"
    assert plan.target.bootstrap_servers == "127.0.0.1:29092"
    assert plan.replication_policy.type == "identity"
    assert plan.topics.include == ["orders", "payments", "customers"]
    assert plan.sync.replication_factor == 1
    assert plan.cutover.sync_group_offsets is True
    assert plan.replicates_topic("orders") and not plan.replicates_topic("orders.tmp")


def test_unreadable_file_is_a_plan_error(tmp_path):
    with pytest.raises(PlanError) as caught:
        load_mm2_config(tmp_path / "missing.properties")
    assert caught.value.problems[0].startswith("(file): cannot read it")


# ---- Bad files: every problem starts with the key at fault --------------------------------------------


def test_missing_clusters():
    problems = _problems("a.bootstrap.servers = h:1\nb.bootstrap.servers = h:2\n")
    assert problems[0].startswith("clusters: required")


def test_flow_cluster_without_bootstrap_servers():
    text = "clusters = a, b, c\na.bootstrap.servers = h:1\na->b.enabled = true\n"
    message = _only_problem_about(text, "b.bootstrap.servers")
    assert "required" in message and "target cluster 'b'" in message  # c is not in the flow, so not required


def test_no_enabled_flow():
    text = MINIMAL.replace("a->b.enabled = true", "a->b.enabled = false")
    message = _only_problem_about(text, "<source>-><target>.enabled")
    assert "no replication flow is enabled" in message


def test_two_enabled_flows_without_a_choice():
    message = _only_problem_about(MINIMAL + "b->a.enabled = true\n", "a->b.enabled, b->a.enabled")
    assert "a->b, b->a" in message and "--flow a->b" in message and "`run` runs them all" in message


def test_periodic_work_takes_mirrormaker2_defaults():
    plan = plan_from_mm2_properties(MINIMAL, "mm2.properties")
    assert plan.engine.emit_heartbeats is True and plan.engine.heartbeat_interval_s == 1
    assert plan.engine.refresh_interval_s == 600
    assert plan.sync.configs and plan.sync.configs_interval_s == 600
    assert plan.sync.acls and plan.sync.acls_interval_s == 600
    assert plan.cutover.emit_checkpoints is True and plan.cutover.checkpoint_interval_s == 60
    assert plan.cutover.sync_group_offsets is False
    assert plan.cutover.refresh_groups is True and plan.cutover.refresh_groups_interval_s == 600
    assert plan.engine.run_checkpoints is True  # checkpoints are on by default in MM2


def test_periodic_work_switches_and_intervals_are_mapped_one_by_one():
    text = MINIMAL + (
        "emit.heartbeats.enabled = false\n"
        "sync.topic.configs.interval.seconds = 30\nsync.topic.acls.enabled = false\n"
        "sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 7\n"
        "emit.checkpoints.interval.seconds = 3\n"
        "refresh.groups.enabled = false\n"
        # A switched-off task's interval is not read, so MM2's "negative disables" spelling passes too.
        "a->b.emit.heartbeats.interval.seconds = -1\n")
    plan = plan_from_mm2_properties(text, "mm2.properties")
    assert plan.engine.emit_heartbeats is False
    assert plan.sync.configs_interval_s == 30
    assert plan.sync.acls is False and plan.sync.acls_interval_s is None
    assert plan.cutover.sync_group_offsets is True and plan.cutover.sync_group_offsets_interval_s == 7
    assert plan.cutover.checkpoint_interval_s == 3
    assert plan.cutover.refresh_groups is False
    assert plan.engine.run_checkpoints is True


def test_no_checkpoint_loop_when_checkpoints_and_group_sync_are_both_off():
    plan = plan_from_mm2_properties(MINIMAL + "emit.checkpoints.enabled = false\n", "mm2.properties")
    assert plan.cutover.emit_checkpoints is False and plan.engine.run_checkpoints is False


def test_topic_refresh_off_is_the_longest_refresh_with_a_warning():
    imported = _imported(MINIMAL + "refresh.topics.enabled = false\n")
    assert imported.plan.engine.refresh_interval_s == 86_400
    assert "once a day" in _warning_about(imported, "refresh.topics.enabled")


def test_a_periodic_interval_out_of_range_names_the_mm2_key():
    message = _only_problem_about(MINIMAL + "sync.group.offsets.enabled = true\n"
                                  "sync.group.offsets.interval.seconds = 0\n", "sync.group.offsets.interval.seconds")
    assert "from 0.1 to 86400" in message and "cutover.sync_group_offsets_interval_s" in message


def _imported(text: str | bytes, flow: str | None = None, environ: dict[str, str] | None = None) -> Mm2Import:
    return import_mm2_properties(text, "test.properties", flow, environ=environ or {})


def _warning_about(imported: Mm2Import, key: str) -> str:
    found = [line for line in imported.warnings if line.startswith(f"{key}: ")]
    assert len(found) == 1, imported.warnings
    return found[0]


def test_unknown_key_is_a_warning_with_a_suggestion():
    imported = _imported(MINIMAL + "sync.topic.acl.enabled = false\n")
    message = _warning_about(imported, "sync.topic.acl.enabled")
    assert "did you mean sync.topic.acls.enabled?" in message
    assert imported.plan.sync.acls is True  # the misspelt key changes nothing, as in MM2


def test_reordered_words_are_suggested():
    message = _warning_about(_imported(MINIMAL + "max.tasks = 4\n"), "max.tasks")
    assert "did you mean tasks.max?" in message


def test_unknown_and_ignored_keys_are_warnings_and_type_errors_stay_errors():
    text = MINIMAL + (
        "foo.bar = 1\n"
        "a.bootstrp.servers = h\n"
        "c.bootstrap.servers = h:3\n"
        "a.replication.factor = 3\n"
        "a->b.topic = orders\n"
        "sync.topic.acls.enabled = maybe\n"
        "replication.factor = two\n"
    )
    problems = _problems(text)
    assert [line.split(": ", 1)[0] for line in problems] == ["sync.topic.acls.enabled", "replication.factor"]
    imported = _imported(text.replace("maybe", "false").replace("= two", "= 3"))
    assert [line.split(": ", 1)[0] for line in imported.warnings] == [
        "foo.bar", "a.bootstrp.servers", "c.bootstrap.servers", "a.replication.factor", "a->b.topic"]
    assert "did you mean a.bootstrap.servers?" in imported.warnings[1]
    assert "'c' is not in clusters" in imported.warnings[2]
    assert "a-><target>.replication.factor" in imported.warnings[3]
    assert "did you mean a->b.topics?" in imported.warnings[4]


def test_bad_boolean():
    message = _only_problem_about(MINIMAL + "sync.topic.acls.enabled = maybe\n", "sync.topic.acls.enabled")
    assert "true or false" in message and "'maybe'" in message


def test_booleans_are_true_or_false_only():
    _only_problem_about(MINIMAL + "a->b.sync.topic.configs.enabled = yes\n", "a->b.sync.topic.configs.enabled")
    _only_problem_about(MINIMAL.replace("a->b.enabled = true", "a->b.enabled = 1"), "a->b.enabled")


def test_bad_regex_in_topics_names_the_flow_key():
    message = _only_problem_about(MINIMAL + "a->b.topics = orders, (unclosed\n", "a->b.topics")
    assert "'(unclosed' is not a valid regular expression" in message
    _only_problem_about(MINIMAL + "groups.exclude = [x\n", "groups.exclude")


def test_an_inline_flag_in_a_topic_list_is_understood_and_stays_in_its_pattern():
    plan = plan_from_mm2_properties(MINIMAL + "topics = a, (?i)b, c\n", "test.properties")
    assert plan.replicates_topic("B") and plan.replicates_topic("c")
    assert not plan.replicates_topic("A") and not plan.replicates_topic("C")


def test_a_regex_that_needs_backtracking_is_refused_naming_its_key():
    message = _only_problem_about(MINIMAL + "topics = orders(?!-debug).*\n", "topics")
    assert "linear time" in message


def test_unknown_replication_policy_class():
    message = _only_problem_about(MINIMAL + "replication.policy.class = com.acme.PrefixPolicy\n",
                                  "replication.policy.class")
    assert "com.acme.PrefixPolicy" in message
    assert "org.apache.kafka.connect.mirror.DefaultReplicationPolicy" in message
    assert "org.apache.kafka.connect.mirror.IdentityReplicationPolicy" in message


def test_replication_factor_not_an_integer():
    message = _only_problem_about(MINIMAL + "replication.factor = three\n", "replication.factor")
    assert "integer" in message
    message = _only_problem_about(MINIMAL + "a->b.replication.factor = 0\n", "a->b.replication.factor")
    assert "plan field sync.replication_factor" in message


def test_flow_naming_a_cluster_not_in_clusters():
    message = _only_problem_about(MINIMAL + "a->c.enabled = true\n", "a->c.enabled")
    assert "'c'" in message and "not in clusters" in message
    problems = _problems(MINIMAL, flow="a->z")
    assert problems == ["clusters: the requested flow a->z names cluster 'z', which is not listed (a, b)"]


def test_plan_errors_are_translated_to_mm2_keys():
    text = MINIMAL + "replication.policy.separator =\nemit.heartbeats.interval.seconds = 0\n"
    problems = _problems(text)
    assert [line.split(": ", 1)[0] for line in problems] == [
        "replication.policy.separator", "emit.heartbeats.interval.seconds"]
    assert "set it to a separator such as '.'" in problems[0]
    assert "(plan field engine.heartbeat_interval_s)" in problems[1]


def test_client_settings_librdkafka_cannot_use():
    text = MINIMAL + (
        "a.ssl.truststore.location = /etc/kafka/truststore.jks\n"
        "b.sasl.mechanism = OAUTHBEARER\n"
        "b.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;\n"
    )
    problems = _problems(text)
    # An OAuthBearerLoginModule without a login callback handler would make unsigned tokens without a subject.
    assert [line.split(": ", 1)[0] for line in problems] == ["a.ssl.truststore.location",
                                                             "b.sasl.login.callback.handler.class"]
    assert "/etc/kafka/truststore.jks: no such file" in problems[0]  # a JKS store is converted at load
    assert "OAuthBearerLoginCallbackHandler" in problems[1]


def test_oauthbearer_client_credentials_become_librdkafka_oidc():
    text = MINIMAL + (
        "a.security.protocol = SASL_SSL\na.sasl.mechanism = OAUTHBEARER\n"
        "a.sasl.login.callback.handler.class = org.apache.kafka.common.security.oauthbearer."
        "OAuthBearerLoginCallbackHandler\n"
        "a.sasl.oauthbearer.token.endpoint.url = https://idp.example/oauth2/token\n"
        "a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="mirror" clientSecret="s3cret" scope="kafka" extension_logicalCluster="lkc-1";\n'
    )
    plan = plan_from_mm2_properties(text, "x")
    assert plan.source.client == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
        "sasl.oauthbearer.client.id": "mirror", "sasl.oauthbearer.client.secret": "s3cret",
        "sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"}


def test_msk_iam_login_module_becomes_aws_msk_iam():
    text = MINIMAL + (
        "a.security.protocol = SASL_SSL\na.sasl.mechanism = AWS_MSK_IAM\n"
        "a.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=\"mirror\";\n"
        "a.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n"
    )
    plan = plan_from_mm2_properties(text, "x")
    assert plan.source.client == {"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM",
                                  "aws.profile": "mirror"}


def test_plain_jaas_needs_a_matching_mechanism():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    _only_problem_about(MINIMAL + f"a.sasl.jaas.config = {jaas}\n", "a.sasl.mechanism")
    plan = plan_from_mm2_properties(MINIMAL + f"a.sasl.mechanism = PLAIN\na.sasl.jaas.config = {jaas}\n", "x")
    assert plan.source.client == {"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}


def test_config_provider_references_other_than_env_are_errors():
    text = MINIMAL + "b.sasl.mechanism = PLAIN\nb.sasl.jaas.config = org.apache.kafka.common.security.plain." \
                     'PlainLoginModule required username="u" password="${file:/etc/mm2/secrets.properties:pw}";\n'
    message = _only_problem_about(text, "b.sasl.jaas.config")
    assert "${file:/etc/mm2/secrets.properties:pw}" in message


# ---- What MirrorMaker 2 takes beyond the replication settings -------------------------------------------


def test_connect_worker_and_rest_settings_are_accepted_without_warnings():
    text = MINIMAL + (
        "b.plugin.discovery = hybrid_warn\n"
        "b.offset.flush.timeout.ms = 10000\n"
        "b.group.id = a-mm2\n"
        "b.config.storage.replication.factor = 1\n"
        "b.key.converter.schemas.enable = false\n"
        "plugin.path = /opt/connectors\n"
        "key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n"
        "value.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n"
        "header.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n"
        "task.shutdown.graceful.timeout.ms = 5000\n"
        "listeners = http://localhost:8083\n"
        "rest.advertised.host.name = mm2-1.example.internal\n"
        "rest.advertised.port = 8083\n"
        "admin.listeners = http://localhost:8084\n"
        "dedicated.mode.enable.internal.rest = true\n"
    )
    imported = _imported(text)
    assert imported.warnings == ()
    for key in ("b.offset.flush.timeout.ms", "listeners", "admin.listeners", "rest.advertised.port"):
        assert key in imported.plan.description


def test_worker_setting_of_the_wrong_type_is_an_error():
    _only_problem_about(MINIMAL + "b.offset.flush.timeout.ms = soon\n", "b.offset.flush.timeout.ms")
    _only_problem_about(MINIMAL + "b.plugin.discovery = sometimes\n", "b.plugin.discovery")
    _only_problem_about(MINIMAL + "rest.advertised.port = http\n", "rest.advertised.port")


def test_worker_setting_at_top_level_is_a_warning_naming_the_cluster_form():
    message = _warning_about(_imported(MINIMAL + "offset.flush.timeout.ms = 10000\n"), "offset.flush.timeout.ms")
    assert "<alias>.offset.flush.timeout.ms" in message


def test_unprefixed_client_setting_under_a_cluster_is_a_warning():
    imported = _imported(MINIMAL + "a.compression.type = zstd\na.request.timeout.ms = 30000\n")
    message = _warning_about(imported, "a.compression.type")
    assert "a.producer.compression.type" in message and "ignore" in message
    assert "Connect worker" in _warning_about(imported, "a.request.timeout.ms")


def test_top_level_client_prefixed_settings_are_warnings():
    message = _warning_about(_imported(MINIMAL + "producer.linger.ms = 5\n"), "producer.linger.ms")
    assert "<alias>.producer.linger.ms" in message


def test_converter_other_than_bytes_is_an_error():
    message = _only_problem_about(MINIMAL + "value.converter = org.apache.kafka.connect.json.JsonConverter\n",
                                  "value.converter")
    assert "JsonConverter" in message and "org.apache.kafka.connect.converters.ByteArrayConverter" in message


def test_transforms_are_an_error():
    _only_problem_about(MINIMAL + "a->b.transforms = route\na->b.transforms.route.type = x\n", "a->b.transforms")


def test_flow_from_a_cluster_to_itself_is_a_warning():
    _warning_about(_imported(MINIMAL + "a->a.enabled = true\n"), "a->a.enabled")


def test_empty_source_alias_with_empty_separator_keeps_topic_names():
    text = MINIMAL + "source.cluster.alias =\nreplication.policy.separator =\n"
    imported = _imported(text)
    assert imported.plan.replication_policy.type == "identity"
    assert imported.plan.policy().format_remote_topic("a", "orders") == "orders"
    assert imported.plan.source.alias == "a"
    assert "checkpointsinternal" in _warning_about(imported, "source.cluster.alias, replication.policy.separator")


def test_source_alias_that_renames_topics_otherwise_is_an_error():
    message = _only_problem_about(MINIMAL + "a->b.source.cluster.alias = primary\n", "a->b.source.cluster.alias")
    assert "primary.<topic>" in message
    assert _imported(MINIMAL + "source.cluster.alias = a\ntarget.cluster.alias = b\n").warnings == ()
    _only_problem_about(MINIMAL + "target.cluster.alias = backup\n", "target.cluster.alias")


def test_malformed_properties_escape_is_a_file_error():
    problems = _problems(MINIMAL + "topics = \\u00zz\n")
    assert problems[0].startswith("(file): line 5")


def test_latin1_bytes_are_read_as_mirrormaker2_reads_them(tmp_path):
    path = tmp_path / "mm2.properties"
    path.write_bytes(MINIMAL.encode() + b"# caf\xe9\ntopics = caf\xe9-orders\n")
    assert load_mm2_config(path).topics.include == ["caf\u00e9-orders"]


def test_warnings_are_logged_by_load_mm2_config(tmp_path, caplog):
    path = tmp_path / "mm2.properties"
    path.write_text(MINIMAL + "max.tasks = 2\n", encoding="ascii")
    load_mm2_config(path)
    assert any("max.tasks" in record.getMessage() and str(path) in record.getMessage()
               for record in caplog.records)


# ---- Secrets --------------------------------------------------------------------------------------------

SECRET = "mirror-secret"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.mark.parametrize("jaas", [
    f'{_PLAIN} required username="mirror" password="{SECRET};',
    f'{_PLAIN} required username="mirror" password="{SECRET}"',
    f"{_PLAIN} required username=\"mirror\" password={SECRET}",
    f"{_PLAIN} required username=\"mirror\" password {SECRET};",
    f"{_PLAIN} required username=\"mirror\" password=9{SECRET};",
    f"{_PLAIN} mandatory username=\"mirror\" password=\"{SECRET}\";",
    f'{_PLAIN} required username="mirror" password="{SECRET}"; {_PLAIN} required password="{SECRET}";',
    f'"{SECRET}" required;',
])
def test_no_error_about_a_malformed_jaas_config_shows_the_secret(jaas):
    text = MINIMAL + f"a.sasl.mechanism = PLAIN\na.sasl.jaas.config = {jaas}\n"
    problems = _problems(text)
    assert problems and problems[0].startswith("a.sasl.jaas.config: ")
    assert all(SECRET not in line for line in problems), problems


def test_jaas_with_single_quotes_and_options_on_several_lines():
    text = MINIMAL + (f"a.sasl.mechanism = PLAIN\na.sasl.jaas.config = {_PLAIN} required \\\n"
                      "    username='mirror' \\\n    password='p w';\n")
    assert plan_from_mm2_properties(text, "x").source.client["sasl.password"] == "p w"


def test_config_providers_file_directory_and_env(tmp_path):
    (tmp_path / "secrets.properties").write_text(f"password = {SECRET}\n", encoding="utf-8")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "truststore").write_text("/etc/kafka/ca.pem\n", encoding="utf-8")
    text = MINIMAL + (
        "config.providers = file, dir, env\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n"
        "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "a.sasl.mechanism = PLAIN\n"
        f'a.sasl.jaas.config = {_PLAIN} required username="m" \\\n'
        f'    password="${{file:{tmp_path}/secrets.properties:password}}";\n'
        "b.security.protocol = SSL\nb.ssl.truststore.type = PEM\n"
        f"b.ssl.truststore.location = ${{dir:{tmp_path}/dir:truststore}}\n"
        "b.sasl.mechanism = PLAIN\n"
        f'b.sasl.jaas.config = {_PLAIN} required username="m" password="${{env:B_PASSWORD}}";\n'
        "topics = ${env:TOPICS}\n"
    )
    imported = _imported(text, environ={"B_PASSWORD": SECRET, "TOPICS": "orders, payments"})
    plan = imported.plan
    assert plan.source.client["sasl.password"] == SECRET
    assert plan.target.client["ssl.ca.location"] == "/etc/kafka/ca.pem"
    assert plan.target.client["sasl.password"] == "${B_PASSWORD}"  # resolved when the engine connects
    assert plan.topics.include == ["orders", "payments"]
    assert imported.warnings == ()


def test_unresolvable_reference_names_the_key_never_the_value(tmp_path):
    (tmp_path / "secrets.properties").write_text(f"password = {SECRET}\n", encoding="utf-8")
    text = MINIMAL + (
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "a.sasl.mechanism = PLAIN\n"
        f'a.sasl.jaas.config = {_PLAIN} required username="m" password="${{file:{tmp_path}/secrets.properties:pw}}";\n'
    )
    message = _only_problem_about(text, "a.sasl.jaas.config")
    assert "no key pw" in message and SECRET not in message


def test_unsupported_config_provider_class_is_an_error():
    text = MINIMAL + "config.providers = vault\nconfig.providers.vault.class = com.acme.VaultProvider\n"
    message = _only_problem_about(text, "config.providers.vault.class")
    assert "com.acme.VaultProvider" in message


def test_worker_converter_of_the_target_cluster_is_checked():
    _only_problem_about(MINIMAL + "b.value.converter = org.apache.kafka.connect.storage.StringConverter\n",
                        "b.value.converter")
    assert _imported(MINIMAL + "b.key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n"
                     ).warnings == ()


def test_a_type_error_in_a_resolved_value_does_not_show_it(tmp_path):
    (tmp_path / "s.properties").write_text(f"factor = {SECRET}\n", encoding="utf-8")
    text = MINIMAL + (
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        f"replication.factor = ${{file:{tmp_path}/s.properties:factor}}\n"
    )
    message = _only_problem_about(text, "replication.factor")
    assert "must be an integer" in message and SECRET not in message


def test_warnings_are_logged_even_when_the_file_is_refused(caplog):
    with pytest.raises(PlanError):
        plan_from_mm2_properties(MINIMAL + "no.such.setting = 1\nreplication.factor = two\n", "x.properties")
    assert any("no.such.setting" in record.getMessage() for record in caplog.records)
