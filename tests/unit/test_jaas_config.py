"""`sasl.jaas.config` is read as Kafka's JaasConfig reads it; errors never show option values."""

from __future__ import annotations

import pytest

from mirror_engine.security import JaasConfigError, parse_jaas_config

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SECRET = "mirror-secret"


def test_one_module_with_double_quoted_options():
    [entry] = parse_jaas_config(f'{PLAIN} required username="mirror" password="{SECRET}";')
    assert entry.module == PLAIN
    assert entry.simple_name == "PlainLoginModule"
    assert entry.flag == "required"
    assert entry.options == {"username": "mirror", "password": SECRET}


def test_single_quotes_bare_words_and_any_whitespace():
    [entry] = parse_jaas_config(f"  {PLAIN}\n\tREQUIRED\n  username='mirror'\tpassword=s3cr-et_x$ ;  ")
    assert entry.flag == "required"
    assert entry.options == {"username": "mirror", "password": "s3cr-et_x$"}


def test_quoted_values_keep_separators_and_read_escapes():
    [entry] = parse_jaas_config(f'{PLAIN} required username="a b;c=d" password="p\\"w\\\\\\n\\101";')
    assert entry.options == {"username": "a b;c=d", "password": 'p"w\\\nA'}


def test_comments_are_skipped():
    [entry] = parse_jaas_config(f'{PLAIN} /* the module */ required // to the end of line\n username="u";')
    assert entry.options == {"username": "u"}


def test_several_modules_are_all_returned():
    entries = parse_jaas_config(f'{PLAIN} required username="a"; {PLAIN} optional username="b";')
    assert [e.flag for e in entries] == ["required", "optional"]


def test_a_quoted_option_name_is_accepted_as_kafka_does():
    [entry] = parse_jaas_config(f'{PLAIN} required "user name"="u";')
    assert entry.options == {"user name": "u"}


def test_no_options():
    [entry] = parse_jaas_config("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;")
    assert entry.options == {}


@pytest.mark.parametrize("text, expected", [
    ("", "no login module"),
    (f"{PLAIN}", "control flag"),
    (f"{PLAIN} mandatory username=\"u\";", "control flag"),
    (f'{PLAIN} required username="u" password="{SECRET}"', "semicolon"),
    (f'{PLAIN} required username="u" password="{SECRET};', "semicolon"),
    (f"{PLAIN} required username=\"u\" password='{SECRET};", "semicolon"),
    (f"{PLAIN} required username=\"u\" password {SECRET};", "password"),
    (f"{PLAIN} required username=\"u\" password=;", "password"),
    (f"{PLAIN} required username=\"u\" password=12345{SECRET};", "password"),
    (f"{PLAIN} required username=\"u\" password=/{SECRET};", "password"),
    (f'{PLAIN} required username="u" = "{SECRET}";', "option"),
    (f'{PLAIN} required username="u" password="{SECRET}" {SECRET}=;', "option"),
    (f'"{SECRET}" required;', "login module"),
])
def test_malformed_configs_are_refused_without_showing_values(text, expected):
    with pytest.raises(JaasConfigError) as caught:
        parse_jaas_config(text)
    message = str(caught.value)
    assert expected in message
    assert SECRET not in message
    assert "12345" not in message
