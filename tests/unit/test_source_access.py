"""The sentences that say which syncs the source principal's permissions allow."""

from __future__ import annotations

from mirror_engine.prepare import ACL_SYNC, CONFIG_SYNC, DATA_COPY, GROUP_OFFSET_SYNC, Denial, SourceAccess

ASKED = (DATA_COPY, CONFIG_SYNC, ACL_SYNC, GROUP_OFFSET_SYNC)
CONFIGS = Denial(CONFIG_SYNC, "DESCRIBE_CONFIGS", "topic", ("orders",))
ACLS = Denial(ACL_SYNC, "DESCRIBE", "cluster")


def test_a_skipped_sync_is_a_warning_naming_the_operation_and_resource():
    access = SourceAccess(ASKED, (CONFIGS, ACLS), required=False)

    assert access.problems() == []
    assert access.warnings() == [
        "config sync skipped: the source principal lacks DESCRIBE_CONFIGS on topic orders (the target's default "
        "configs apply instead of the source's)",
        "ACL sync skipped: the source principal lacks DESCRIBE on the cluster (no ACL is created on the target)",
    ]
    assert access.statement() == ("source permissions: data copy allowed, config sync not allowed for 1 topic, "
                                  "ACL sync not allowed, group offset sync allowed")


def test_required_permissions_make_each_skipped_sync_a_problem_saying_what_to_do():
    access = SourceAccess(ASKED, (CONFIGS,), required=True)

    assert access.warnings() == []
    assert access.problems() == [
        "config sync refused: the source principal lacks DESCRIBE_CONFIGS on topic orders and "
        "sync.require_source_permissions is true; grant it, or set sync.configs: false, or set "
        "sync.require_source_permissions: false to skip it with a warning",
    ]


def test_a_topic_the_principal_may_not_read_is_always_a_problem():
    denial = Denial(DATA_COPY, "READ", "topic", ("audit", "ledger"))

    assert SourceAccess(ASKED, (denial,), required=False).problems() == [
        "data copy impossible: the source principal lacks READ on topics audit, ledger, so no record of them can be "
        "copied; grant it, or exclude them from the plan (topics.exclude)",
    ]


def test_long_lists_of_resources_are_cut_and_counted():
    denial = Denial(GROUP_OFFSET_SYNC, "DESCRIBE", "group", tuple(f"g{i:02}" for i in range(25)))

    assert denial.resources().endswith("g18, g19 and 5 more")
    assert denial.extent() == "not allowed for 25 groups"
