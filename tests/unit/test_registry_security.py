"""A schema registry's settings read into the clusters' security model: one sentence per problem, naming its key."""

from __future__ import annotations

import pytest

from mirror_engine.security import OidcLogin, SecurityError, read_registry_security


def _problems(settings: dict[str, str]) -> list[str]:
    with pytest.raises(SecurityError) as raised:
        read_registry_security("source", settings)
    return raised.value.problems


@pytest.mark.parametrize(("settings", "key", "words"), [
    ({"url": "https://r", "ssl.certificate.location": "/c.pem"}, "ssl.certificate.location", "needs its key"),
    ({"url": "http://r", "ssl.ca.location": "/ca.pem"}, "ssl.ca.location", "not https://"),
    ({"url": "http://r", "basic.auth.user.info": "a:b", "bearer.auth.token": "t"}, "bearer.auth.token",
     "together with basic.auth.user.info"),
    ({"url": "http://r", "bearer.auth.credentials.source": "OAUTHBEARER",
      "bearer.auth.issuer.endpoint.url": "http://idp/token", "bearer.auth.client.id": "c"},
     "bearer.auth.client.secret", "required by bearer.auth.credentials.source"),
    ({"url": "http://r", "bearer.auth.client.id": "c"}, "bearer.auth.client.id", "only for"),
    ({"url": "http://r", "basic.auth.user.info": "no-colon"}, "basic.auth.user.info", "user:password"),
    ({"url": "http://r", "schema.registry.ssl.truststore.location": "/t.jks"},
     "schema.registry.ssl.truststore.location", "not a registry client setting"),
])
def test_a_setting_that_cannot_be_used_is_named(settings, key, words):
    problems = _problems(settings)
    assert any(line.startswith(f"{key}: ") and words in line for line in problems), problems


def test_a_login_is_read_once_and_its_secrets_are_known():
    security = read_registry_security("target", {
        "url": "https://r/apis/ccompat/v7", "ssl.ca.location": "/ca.pem",
        "bearer.auth.credentials.source": "OAUTHBEARER", "bearer.auth.issuer.endpoint.url": "https://idp/token",
        "bearer.auth.client.id": "mirror", "bearer.auth.client.secret": "s3cret", "bearer.auth.scope": "registry"})
    assert security.login == OidcLogin("https://idp/token", "mirror", "s3cret", "registry")
    assert security.tls is not None and security.tls.ca_location == "/ca.pem" and security.tls.verify_hostname
    assert security.secrets() == ["s3cret"]
    assert "s3cret" not in repr(security)
