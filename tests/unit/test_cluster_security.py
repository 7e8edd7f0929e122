"""The security model: read once from librdkafka settings, rendered for librdkafka and for Java clients."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from mirror_engine.plan import PlanError, plan_from_dict
from mirror_engine.security import MskIamLogin, OidcLogin, SecurityError, java_options, librdkafka_config, read_security

BOOT = {"bootstrap.servers": "broker:9093"}


def _problems(config: dict[str, str]) -> list[str]:
    with pytest.raises(SecurityError) as caught:
        read_security("dc1", {**BOOT, **config})
    return caught.value.problems


def test_tls_checks_the_host_name_by_default_and_its_off_switch_is_named_unsafe():
    security = read_security("dc1", {**BOOT, "security.protocol": "SSL", "ssl.ca.location": "/ca.pem"})
    assert librdkafka_config(security)["ssl.endpoint.identification.algorithm"] == "https"
    assert "ssl.endpoint.identification.algorithm" not in java_options(security)
    [problem] = _problems({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"})
    assert problem.startswith("ssl.endpoint.identification.algorithm:")
    assert "unsafe.skip.hostname.verification: true" in problem
    unsafe = read_security("dc1", {**BOOT, "security.protocol": "SSL",
                                          "unsafe.skip.hostname.verification": True})
    assert librdkafka_config(unsafe)["ssl.endpoint.identification.algorithm"] == "none"
    assert java_options(unsafe)["ssl.endpoint.identification.algorithm"] == ""


@pytest.mark.parametrize(("config", "key"), [
    ({"security.protocol": "SASL_SSL"}, "sasl.mechanism"),
    ({"security.protocol": "SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"},
     "sasl.mechanism"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u",
      "sasl.password": "p", "ssl.ca.location": "/ca.pem"}, "ssl.ca.location"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u"}, "sasl.password"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
      "sasl.oauthbearer.client.id": "c", "sasl.oauthbearer.client.secret": "s"}, "sasl.oauthbearer.token.endpoint.url"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}, "aws.region"),
    ({"security.protocol": "SSL", "ssl.certificate.location": "/c.pem"}, "ssl.certificate.location"),
    ({"security.protocol": "SSL", "enable.ssl.certificate.verification": "false"},
     "enable.ssl.certificate.verification"),
    ({"aws.region": "eu-west-1"}, "aws.region"),
])
def test_what_cannot_be_rendered_is_refused_naming_the_key(config, key):
    problems = _problems(config)
    assert problems[0].split(":", 1)[0] == key, problems
    assert any(word in problems[0] for word in ("write", "remove", "add", "needs", "give"))


def test_a_plan_refuses_before_any_connection_naming_the_plan_field():
    data = {"name": "p", "source": {"alias": "a", "bootstrap_servers": "a:9093",
                                    "client": {"security.protocol": "SASL_SSL"}},
            "target": {"alias": "b", "bootstrap_servers": "b:9093"}}
    with pytest.raises(PlanError) as caught:
        plan_from_dict(data).client_configs()
    assert "source.client.sasl.mechanism: not set" in str(caught.value)


def test_password_logins_render_escaped_jaas_lines_for_java():
    security = read_security("dc1", {**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                            "sasl.username": "mirror", "sasl.password": 'a\\b"c'})
    options = java_options(security)
    assert options["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                           'username="mirror" password="a\\\\b\\"c";')
    assert security.secrets() == ['a\\b"c']
    assert 'a\\b"c' not in repr(security)


def test_oidc_client_credentials_render_for_both_clients():
    config = {**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
              "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
              "sasl.oauthbearer.client.id": "mirror", "sasl.oauthbearer.client.secret": "top-secret",
              "sasl.oauthbearer.scope": "kafka"}
    security = read_security("dc1", config)
    assert isinstance(security.login, OidcLogin)
    assert {k: v for k, v in librdkafka_config(security).items() if k.startswith("sasl")} == {
        k: v for k, v in config.items() if k.startswith("sasl")}
    java = java_options(security)
    assert java["sasl.login.callback.handler.class"].endswith("oauthbearer.OAuthBearerLoginCallbackHandler")
    assert java["sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"
    assert 'clientId="mirror" clientSecret="top-secret" scope="kafka"' in java["sasl.jaas.config"]
    assert "PlainLoginModule" not in java["sasl.jaas.config"]


@pytest.mark.parametrize(("bootstrap", "region"), [
    ("b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098", "eu-west-1"),
    ("boot-x.c1.kafka-serverless.us-east-2.amazonaws.com:9098", "us-east-2"),
])
def test_msk_iam_takes_its_region_from_the_bootstrap_address(bootstrap, region):
    security = read_security("msk", {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                                            "sasl.mechanism": "AWS_MSK_IAM"})
    assert security.login == MskIamLogin(region)
    java = java_options(security)
    assert java["sasl.mechanism"] == "AWS_MSK_IAM"
    assert java["sasl.jaas.config"] == "software.amazon.msk.auth.iam.IAMLoginModule required;"
    assert java["sasl.client.callback.handler.class"] == "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


def test_msk_iam_token_is_signed_from_local_aws_credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEFAKEKEY00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-access-key-for-tests")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    security = read_security("msk", {**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM",
                                            "aws.region": "eu-central-1"})
    config = librdkafka_config(security)
    assert config["sasl.mechanism"] == "OAUTHBEARER" and "aws.region" not in config
    token, expiry = config["oauth_cb"]("")
    url = urlparse(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    query = parse_qs(url.query)
    assert url.hostname == "kafka.eu-central-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Credential"][0].startswith("AKIAEXAMPLEFAKEKEY00/")
    assert "X-Amz-Signature" in query and expiry > 0


def test_inline_pem_reaches_java_only_through_an_owner_readable_file(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mirror")])
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.BestAvailableEncryption(b"key-pass")).decode()
    security = read_security("dc1", {**BOOT, "security.protocol": "SSL", "ssl.ca.pem": cert_pem,
                                            "ssl.certificate.pem": cert_pem, "ssl.key.pem": key_pem,
                                            "ssl.key.password": "key-pass"})
    options = java_options(security)
    assert key_pem not in "".join(options.values()) and cert_pem not in "".join(options.values())
    assert options["ssl.keystore.type"] == "PKCS12"
    assert options["ssl.keystore.password"] not in ("", "key-pass")  # a random password of its own
    for location in (options["ssl.keystore.location"], options["ssl.truststore.location"]):
        assert stat.S_IMODE(os.stat(location).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(Path(location).parent).st_mode) == 0o700
    from cryptography.hazmat.primitives.serialization import pkcs12

    stored = pkcs12.load_pkcs12(Path(options["ssl.keystore.location"]).read_bytes(),
                                options["ssl.keystore.password"].encode())
    assert stored.cert is not None and stored.cert.certificate == certificate
    assert key_pem in security.secrets()

