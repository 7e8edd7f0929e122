"""The translation of schema ids in Confluent framing: exactly bytes 1-4 change, ids met first are resolved once,
and what cannot be mapped follows the plan's rule (stop, or copy as it is and count)."""

from __future__ import annotations

import pytest

from mirror_engine.plan import PlanError, plan_from_dict
from mirror_engine.schemas import IdTranslation, TopicFraming, UnmappedRecord, framed_id
from mirror_engine.schemas.testing import CopyUnmapped, StopAtUnmapped


def _framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def test_only_the_id_bytes_change_and_each_id_is_resolved_once():
    asked = []

    def target_id_of(source_id: int) -> int:
        asked.append(source_id)
        return source_id + 100

    translation = IdTranslation(target_id_of, StopAtUnmapped())
    rewrite = translation.record_rewrite(TopicFraming(key=False, value=True))
    for _ in range(3):
        key, value = rewrite(b"plain key", _framed(7, b"\x02payload"))
        assert key == b"plain key" and value == _framed(107, b"\x02payload")
    assert framed_id(value) == 107 and asked == [7]
    assert rewrite(b"k", None) == (b"k", None)  # a tombstone stays one
    same = IdTranslation(lambda source_id: source_id, StopAtUnmapped()).record_rewrite(TopicFraming(True, True))
    record = (_framed(3, b"k"), _framed(4, b"v"))
    for _ in range(2):  # resolved, then from the prefixes: the very same bytes, not a copy
        key, value = same(*record)
        assert key is record[0] and value is record[1]


def test_an_unmapped_record_stops_or_is_copied_as_the_plan_says():
    stop = IdTranslation(lambda _id: None, StopAtUnmapped()).record_rewrite(TopicFraming(key=True, value=True))
    with pytest.raises(UnmappedRecord, match="schema id 9, which the source registry does not know"):
        stop(_framed(9, b"x"), _framed(9, b"y"))
    with pytest.raises(UnmappedRecord, match="its key is not in Confluent framing"):
        stop(b"not framed", _framed(9, b"y"))
    copy_rule = CopyUnmapped()
    copy = IdTranslation(lambda _id: None, copy_rule).record_rewrite(TopicFraming(key=False, value=True))
    assert copy(b"k", b"\x01raw") == (b"k", b"\x01raw")
    assert copy(b"k", _framed(9, b"y")) == (b"k", _framed(9, b"y"))
    assert copy_rule.count == 2


def test_a_schemas_section_is_checked_before_anything_is_contacted():
    base = {"name": "p", "source": {"alias": "a", "bootstrap_servers": "h:1"},
            "target": {"alias": "b", "bootstrap_servers": "h:2"}}
    with pytest.raises(PlanError, match=r"schemas\.source: url 'ftp://x' is not an http"):
        plan_from_dict({**base, "schemas": {"source": {"url": "ftp://x"}, "target": {"url": "http://y"}}})
    with pytest.raises(PlanError, match=r"unknown setting 'basic\.auth\.password'"):
        plan_from_dict({**base, "schemas": {"source": {"url": "http://x", "client": {"basic.auth.password": "p"}},
                                            "target": {"url": "http://y"}}})
    with pytest.raises(PlanError, match="list the subjects to move"):
        plan_from_dict({**base, "schemas": {"source": {"url": "http://x"}, "target": {"url": "http://y"},
                                            "subject_strategy": "record_name"}})
    plan = plan_from_dict({**base, "schemas": {"source": {"url": "http://x/"}, "target": {"url": "http://y"}}})
    assert plan.schemas is not None and plan.schemas.registry_settings()[0] == {"url": "http://x"}


def test_a_registry_named_by_its_airflow_connection_needs_airflow():
    base = {"name": "p", "source": {"alias": "a", "bootstrap_servers": "h:1"},
            "target": {"alias": "b", "bootstrap_servers": "h:2"},
            "schemas": {"source": {"conn_id": "registry_a"}, "target": {"url": "http://y"}}}
    plan = plan_from_dict(base)
    assert plan.schemas is not None
    with pytest.raises(PlanError, match="names only the Airflow connection 'registry_a'"):
        plan.schemas.registry_settings()
    with pytest.raises(PlanError, match=r"give url .* or conn_id"):
        plan_from_dict({**base, "schemas": {"source": {}, "target": {"url": "http://y"}}})


MM2_FILE = """clusters = a, b
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
a->b.enabled = true
a.mirror-engine.schema.registry.url = http://reg-a:8081
a.mirror-engine.schema.registry.basic.auth.user.info = app:${env:REGISTRY_SECRET}
b.mirror-engine.schema.registry.url = http://reg-b:8081/apis/ccompat/v7
mirror-engine.schemas.ids = KEEP
a->b.mirror-engine.schemas.unknown.ids = copy
config.providers = env
config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
"""


def test_an_mm2_file_names_its_registries_with_the_projects_own_keys(monkeypatch):
    from mirror_engine.mm2 import import_mm2_properties

    monkeypatch.setenv("REGISTRY_SECRET", "s3cret")
    imported = import_mm2_properties(MM2_FILE, "flows.properties")
    schemas = imported.plan.schemas
    assert schemas is not None and (schemas.ids, schemas.unknown_ids) == ("keep", "copy")
    assert schemas.registry_settings() == (
        {"url": "http://reg-a:8081", "basic.auth.user.info": "app:s3cret"},
        {"url": "http://reg-b:8081/apis/ccompat/v7"})
    assert not [w for w in imported.warnings if "mirror-engine" in w], imported.warnings
    one_sided = MM2_FILE.replace("b.mirror-engine.schema.registry.url = http://reg-b:8081/apis/ccompat/v7\n", "")
    with pytest.raises(PlanError, match=r"b\.mirror-engine\.schema\.registry\.url: the flow a->b names a schema "
                                        r"registry for one of its clusters only"):
        import_mm2_properties(one_sided, "flows.properties")
    no_registries = import_mm2_properties(MM2_FILE.split("a.mirror-engine")[0], "flows.properties")
    assert no_registries.plan.schemas is None
