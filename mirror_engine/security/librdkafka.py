"""The model of a cluster's security rendered for confluent-kafka (librdkafka): the engine's clients and the
backfill's writer. AWS MSK IAM becomes OAUTHBEARER with a token callback (`msk_iam`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mirror_engine.security.model import (
    ClusterSecurity,
    MskIamLogin,
    OidcLogin,
    PasswordLogin,
    Tls,
    UnsecuredJwtLogin,
)
from mirror_engine.security.msk_iam import token_callback
from mirror_engine.security.reader import read_security
from mirror_engine.security.secrets import remember_secrets

__all__ = ["librdkafka_config", "security_config"]


def librdkafka_config(security: ClusterSecurity) -> dict[str, Any]:
    """confluent-kafka settings; an MSK IAM login carries its token callback (`oauth_cb`)."""
    config: dict[str, Any] = {"bootstrap.servers": security.bootstrap_servers, **security.other}
    if security.protocol != "PLAINTEXT":
        config["security.protocol"] = security.protocol
    if security.tls:
        config.update(_librdkafka_tls(security.tls))
    login = security.login
    if isinstance(login, PasswordLogin):
        config.update({"sasl.mechanism": login.mechanism, "sasl.username": login.username,
                       "sasl.password": login.password})
    elif isinstance(login, OidcLogin):
        config.update({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                       "sasl.oauthbearer.token.endpoint.url": login.token_url,
                       "sasl.oauthbearer.client.id": login.client_id,
                       "sasl.oauthbearer.client.secret": login.client_secret})
        if login.scope:
            config["sasl.oauthbearer.scope"] = login.scope
        if login.extensions:
            config["sasl.oauthbearer.extensions"] = login.extensions
    elif isinstance(login, UnsecuredJwtLogin):
        config.update({"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
                       "sasl.oauthbearer.config": login.config})
    elif isinstance(login, MskIamLogin):
            config.update({"sasl.mechanism": "OAUTHBEARER", "oauth_cb": token_callback(login)})
    return config



def _librdkafka_tls(tls: Tls) -> dict[str, str]:
    config: dict[str, str] = {}
    pairs = (("ssl.ca.location", tls.ca_location), ("ssl.ca.pem", tls.ca_pem),
             ("ssl.certificate.location", tls.certificate_location), ("ssl.certificate.pem", tls.certificate_pem),
             ("ssl.key.location", tls.key_location), ("ssl.key.pem", tls.key_pem),
             ("ssl.key.password", tls.key_password), ("ssl.keystore.location", tls.keystore_location),
             ("ssl.keystore.password", tls.keystore_password))
    config.update({name: value for name, value in pairs if value})
    config["ssl.endpoint.identification.algorithm"] = "https" if tls.verify_hostname else "none"
    return config


def security_config(cluster: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` read into the model and rendered for librdkafka, its secrets registered for redaction."""
    security = read_security(cluster, config)
    remember_secrets({f"secret.{n}": value for n, value in enumerate(security.secrets())})
    return librdkafka_config(security)
