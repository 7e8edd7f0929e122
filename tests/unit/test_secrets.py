"""Credentials never shown: masked configs, redacted text and log records, no librdkafka debug with them."""

from __future__ import annotations

import logging

from mirror_engine.security import REDACTED, RedactingFilter, masked, redact, remember_secrets, without_credential_debug

CONFIG = {"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL", "sasl.username": "mirror",
          "sasl.password": "pw-one-7", "ssl.key.password": "pw-two-7",
          "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="m" '
                              'password="pw-three-7";'}


def test_masked_configs_show_every_setting_but_the_secrets():
    shown = masked(CONFIG)
    assert shown["sasl.username"] == "mirror" and shown["bootstrap.servers"] == "b:9092"
    assert {shown[k] for k in ("sasl.password", "ssl.key.password", "sasl.jaas.config")} == {REDACTED}


def test_remembered_secrets_are_redacted_anywhere_in_text():
    remember_secrets(CONFIG)
    text = redact("login with pw-one-7 failed; key pw-two-7; jaas pw-three-7")
    assert "pw-" not in text and text.count(REDACTED) == 3


def test_password_looking_settings_are_redacted_even_when_unknown():
    assert redact('sasl.password=hunter2, password="x y z" ok') == f"sasl.password={REDACTED}, password={REDACTED} ok"


def test_log_records_are_redacted_in_message_arguments_and_exceptions():
    remember_secrets({"sasl.password": "pw-four-7"})
    record = logging.LogRecord("x", logging.DEBUG, __file__, 1, "config %s", ({"p": "pw-four-7"},), None)
    try:
        raise RuntimeError("pw-four-7")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    RedactingFilter().filter(record)
    assert "pw-four-7" not in record.getMessage() and "pw-four-7" not in (record.exc_text or "")


def test_librdkafka_debug_is_dropped_from_a_client_with_credentials():
    assert "debug" not in without_credential_debug({**CONFIG, "debug": "all"}, "cluster 'src'")
    assert without_credential_debug({"bootstrap.servers": "b", "debug": "all"}, "cluster 'src'")["debug"] == "all"
