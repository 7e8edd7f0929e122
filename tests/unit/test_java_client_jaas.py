"""The Java client options rendered from the security model: the JAAS line carries the exact username and password."""

from __future__ import annotations

import pytest

from mirror_engine.security import java_options, parse_jaas_config, read_security

PASSWORDS = ["ab\\nc", 'quote"d', "back\\slash\\", "octal\\101", "two\nlines", "plain-secret", "tab\\t"]


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_the_rendered_jaas_config_reads_back_as_the_same_credentials(password, mechanism):
    options = java_options(read_security("src", {
        "bootstrap.servers": "127.0.0.1:9092", "security.protocol": "sasl_plaintext", "sasl.mechanism": mechanism,
        "sasl.username": 'mi"r\\ror', "sasl.password": password}))
    [module] = parse_jaas_config(options["sasl.jaas.config"])  # read as Kafka's JaasConfig reads it
    assert module.flag == "required"
    assert module.options == {"username": 'mi"r\\ror', "password": password}
