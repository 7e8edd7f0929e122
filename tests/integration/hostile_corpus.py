"""Hostile plans and MirrorMaker 2 files, each with the field its refusal must name.

`{S}` and `{T}` stand for the source and target bootstrap addresses; `{SU}`/`{TU}` for the secured ones,
`{SL}` for the source's address spelled another way (localhost). Each case is (id, kind, content, expected),
where `expected` is a fragment the refusal must hold (the field, or what is wrong).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostileInput:
    id: str
    kind: str  # "plan" (YAML) or "mm2" (properties)
    content: bytes
    expected: str
    secured: bool = False  # run against the secured pair


BASE = """\
name: hostile
source: {alias: src, bootstrap_servers: "{S}"}
target: {alias: tgt, bootstrap_servers: "{T}"}
topics: {include: ["hostile-none-.*"]}
"""

SECURED_BASE = """\
name: hostile
source:
  alias: src
  bootstrap_servers: "{SU}"
  client: {security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: admin, sasl.password: admin-secret}
target:
  alias: tgt
  bootstrap_servers: "{TU}"
  client: {security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: admin, sasl.password: admin-secret}
topics: {include: ["hostile-none-.*"]}
"""

MM2_BASE = """\
clusters = src, tgt
src.bootstrap.servers = {S}
tgt.bootstrap.servers = {T}
src->tgt.enabled = true
src->tgt.topics = hostile-none-.*
"""


def _plan(id_: str, extra: str, expected: str, base: str = BASE, secured: bool = False) -> HostileInput:
    return HostileInput(id_, "plan", (base + extra).encode(), expected, secured)


def _replace(id_: str, old: str, new: str, expected: str) -> HostileInput:
    assert old in BASE
    return HostileInput(id_, "plan", BASE.replace(old, new).encode(), expected)


def _mm2(id_: str, extra: str, expected: str, base: str = MM2_BASE) -> HostileInput:
    return HostileInput(id_, "mm2", (base + extra).encode("latin-1"), expected)


def _laughs() -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for level in "bcdefghi":
        text += f"{level}: &{level} [{', '.join([f'*{chr(ord(level) - 1)}'] * 9)}]\n"
    return "description:\n" + "".join("  " + line for line in text.splitlines(True))


CASES: list[HostileInput] = [
    # --- the file itself
    HostileInput("binary", "plan", b"\x00\x01PK\x03\x04\xff\xfe" + bytes(range(256)) * 8, "(file)"),
    HostileInput("not-utf8", "plan", BASE.encode() + b"description: caf\xe9\n", "(file)"),
    HostileInput("empty", "plan", b"", "(plan)"),
    HostileInput("over-one-mib", "plan", BASE.encode() + b"# padding\n" * 120_000, "(file)"),
    HostileInput("only-a-list", "plan", b"- name: hostile\n- source: x\n", "(plan)"),
    HostileInput("two-documents", "plan", (BASE + "---\n" + BASE).encode(), "(file)"),
    _plan("deep-flow-nesting", "description: " + "[" * 200 + "]" * 200 + "\n", "(file)"),
    _plan("deep-block-nesting", "description:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60))
          + "  " * 60 + "v: 1\n", "(file)"),
    _plan("aliases-bomb", _laughs(), "(file)"),
    _plan("many-aliases", "description: &d x\ngroups: {include: [" + ", ".join(["*d"] * 300) + "]}\n", "(file)"),
    _plan("recursive-alias", "description: &loop [*loop]\n", "(file)"),
    _plan("python-object-tag", "description: !!python/object/apply:os.system ['echo pwned']\n", "(file)"),
    _plan("duplicate-top-key", "name: hostile2\n", "name"),
    _replace("duplicate-nested-key", "{alias: src, ", "{alias: src, alias: src2, ", "alias"),
    # --- regexes
    _plan("regex-backreference", 'groups: {include: ["(a+)\\\\1"]}\n', "groups.include"),
    _plan("regex-lookahead", 'groups: {include: ["(?=a)a+"]}\n', "groups.include"),
    _plan("regex-lookbehind", 'backfill: {topics: ["(?<=x)y"]}\n', "backfill.topics"),
    _plan("regex-atomic-group", 'groups: {include: ["(?>a+)b"]}\n', "groups.include"),
    _replace("regex-catastrophic-nested", '["hostile-none-.*"]', '["(a|aa)+(?=b)"]', "topics.include"),
    _plan("regex-bad-inline-flag-x", 'groups: {include: ["(?x)a b"]}\n', "groups.include"),
    _plan("regex-unclosed", 'groups: {include: ["[a-"]}\n', "groups.include"),
    _plan("regex-huge-repeat", 'groups: {include: ["a{100000}"]}\n', "groups.include"),
    _plan("regex-too-long", 'groups: {include: ["' + "a" * 3000 + '"]}\n', "groups.include"),
    _plan("regex-too-many", "groups: {include: [" + ", ".join(f'"g{i}"' for i in range(1200)) + "]}\n",
          "groups.include"),
    # --- principal maps
    _plan("principal-widened-to-wildcard", 'sync: {principal_map: {"User:mirror": "User:*"}}\n',
          "sync.principal_map"),
    _plan("principal-without-type", 'sync: {principal_map: {"alice": "bob"}}\n', "sync.principal_map"),
    _plan("secured-principal-widened", 'sync: {principal_map: {"User:alice": "User:*"}}\n', "sync.principal_map",
          base=SECURED_BASE, secured=True),
    # --- numbers
    _plan("interval-huge", "engine: {refresh_interval_s: 1e12}\n", "engine.refresh_interval_s"),
    _plan("interval-nan", "engine: {status_interval_s: .nan}\n", "engine.status_interval_s"),
    _plan("interval-infinite", "engine: {heartbeat_interval_s: .inf}\n", "engine.heartbeat_interval_s"),
    _plan("interval-text", "engine: {log_interval_s: soon}\n", "engine.log_interval_s"),
    _plan("count-huge-integer", "engine: {batch_size: " + "9" * 400 + "}\n", "line 5"),
    _plan("count-boolean", "engine: {linger_ms: true}\n", "engine.linger_ms"),
    _plan("cutover-timeout-huge", "cutover: {wait_timeout_s: 1e300}\n", "cutover.wait_timeout_s"),
    _plan("replication-factor-zero", "sync: {replication_factor: 0}\n", "sync.replication_factor"),
    # --- types, unknown fields, enums
    _replace("name-a-list", "name: hostile", "name: [a, b]", "name"),
    _replace("name-path-traversal", "name: hostile", "name: ../../etc/passwd", "name"),
    _plan("include-a-number", "groups: {include: 5}\n", "groups.include"),
    _plan("unknown-top-field", "topicz: {include: [x]}\n", "topicz"),
    _plan("policy-unknown", "replication_policy: {type: custom}\n", "replication_policy.type"),
    _plan("sync-acls-maybe", "sync: {acls: maybe}\n", "sync.acls"),
    _replace("client-holds-bootstrap", "target: {alias: tgt, bootstrap_servers: \"{T}\"}",
             "target: {alias: tgt, bootstrap_servers: \"{T}\", client: {bootstrap.servers: \"{S}\"}}", "target"),
    _replace("missing-target", 'target: {alias: tgt, bootstrap_servers: "{T}"}\n', "", "target"),
    _replace("unset-env-reference", '"{T}"', '"${HOSTILE_UNSET_VARIABLE}"', "HOSTILE_UNSET_VARIABLE"),
    # --- schedules
    _plan("cron-minute-61", 'schedule: "61 * * * *"\n', "schedule"),
    _plan("cron-words", 'schedule: "every day at noon"\n', "schedule"),
    _plan("cron-unknown-preset", 'validation: {schedule: "@sometimes"}\n', "validation.schedule"),
    # --- clusters
    _replace("same-cluster-same-address", '"{T}"', '"{S}"', "same cluster"),
    _replace("same-cluster-other-spelling", '"{T}"', '"{SL}"', "same cluster"),
    _replace("same-alias-twice", "alias: tgt", "alias: src", "alias"),
    # --- target names and partitions (source topics made by the test)
    _replace("target-name-too-long", 'name: hostile\n',
             "name: hostile\nreplication_policy: {type: default}\n", "249"),
    _replace("more-target-partitions", '["hostile-none-.*"]', '["hostile-wide"]', "hostile-wide"),
    # --- MirrorMaker 2 files
    HostileInput("mm2-binary", "mm2", bytes(range(256)) * 16, "clusters"),
    HostileInput("mm2-empty", "mm2", b"", "clusters"),
    _mm2("mm2-flow-unknown-alias", "src->elsewhere.enabled = true\n", "elsewhere"),
    _mm2("mm2-no-enabled-flow", "src->tgt.enabled = false\n", "enabled"),
    _mm2("mm2-wrong-type", "src->tgt.sync.topic.configs.enabled = maybe\n", "sync.topic.configs.enabled"),
    _mm2("mm2-custom-policy", "replication.policy.class = com.example.MyPolicy\n", "replication.policy.class"),
    _mm2("mm2-transforms", "transforms = route\n"
         "transforms.route.type = org.apache.kafka.connect.transforms.RegexRouter\n", "transforms"),
    _mm2("mm2-malformed-jaas", "src.security.protocol = SASL_PLAINTEXT\nsrc.sasl.mechanism = PLAIN\n"
         'src.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="m" '
         'password="mirror-secret\n', "sasl.jaas.config"),
    _mm2("mm2-jks-keystore", "src.security.protocol = SSL\nsrc.ssl.keystore.type = JKS\n"
         "src.ssl.keystore.location = /nonexistent.jks\nsrc.ssl.keystore.password = x\n", "keystore"),
    _mm2("mm2-undeclared-provider", "src->tgt.topics = ${vault:secret/path:topics}\n", "vault"),
    _mm2("mm2-regex-backreference", "src->tgt.groups = (a+)\\\\1\n", "groups"),
    _mm2("mm2-same-cluster", "", "same cluster", base=MM2_BASE.replace("tgt.bootstrap.servers = {T}",
                                                                         "tgt.bootstrap.servers = {SL}")),
]
