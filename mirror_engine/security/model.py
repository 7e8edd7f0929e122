"""One typed model of a cluster's security settings, read once, rendered for each client.

A cluster's settings arrive as librdkafka settings: written so in a YAML plan's `client`, an Airflow
connection's extras (through the connection hook), or converted from an MM2 file's Java settings
(`mm2_clients`). `ClusterSecurity.read` reads every security setting into the model and refuses, before any
connection, what it cannot render, with one line per problem naming the key and what to write instead.
It then renders the settings of each client from the same model:

- `librdkafka()`: confluent-kafka (the engine, the backfill's writer); AWS MSK IAM becomes OAUTHBEARER with a
  token callback (`msk_iam`);
- `java_options()` (`java_client`): the Java client options of Spark's Kafka source.

Invariants: TLS verifies the broker's certificate and host name unless the setting named `unsafe...` says
otherwise; a secret is only ever a field of the model, registered with `secrets.remember_secrets` on reading,
and inline PEM reaches a Java client only through a file readable by its owner alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterSecurity", "MskIamLogin", "OidcLogin", "PasswordLogin", "SecurityError", "Tls",
           "UnsecuredJwtLogin", "security_config"]

UNSAFE_SKIP_HOSTNAME = "unsafe.skip.hostname.verification"
AWS_MSK_IAM = "AWS_MSK_IAM"
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_TRUE = ("true", "1", "yes")


class SecurityError(ValueError):
    """Settings that cannot be rendered for a client; one line per problem, each naming its key."""

    def __init__(self, cluster: str, problems: list[str]) -> None:
        self.cluster = cluster
        self.problems = problems
        super().__init__(f"cluster '{cluster}': " + "; ".join(problems))


@dataclass(frozen=True)
class Tls:
    """Trust (CA), an optional client certificate, and whether the broker's host name is checked."""

    ca_location: str | None = None
    ca_pem: str | None = field(default=None, repr=False)
    certificate_location: str | None = None
    certificate_pem: str | None = field(default=None, repr=False)
    key_location: str | None = None
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    keystore_location: str | None = None  # PKCS12, key and chain together
    keystore_password: str | None = field(default=None, repr=False)
    verify_hostname: bool = True

    @property
    def has_client_certificate(self) -> bool:
        return bool(self.certificate_location or self.certificate_pem or self.keystore_location)


@dataclass(frozen=True)
class PasswordLogin:
    mechanism: str  # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class OidcLogin:
    """OAUTHBEARER tokens fetched from an OAuth 2 token endpoint with client credentials."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    extensions: str | None = None


@dataclass(frozen=True)
class UnsecuredJwtLogin:
    """Unsigned OAUTHBEARER tokens (development brokers only): librdkafka's `sasl.oauthbearer.config`."""

    config: str


@dataclass(frozen=True)
class MskIamLogin:
    """AWS MSK IAM: tokens signed locally from the AWS credentials chain (profile or role when given)."""

    region: str
    profile: str | None = None
    role_arn: str | None = None


Login = PasswordLogin | OidcLogin | UnsecuredJwtLogin | MskIamLogin


@dataclass(frozen=True)
class ClusterSecurity:
    """How a client reaches one cluster: bootstrap, protocol, TLS, login, and other client settings kept as they are."""

    cluster: str
    bootstrap_servers: str
    protocol: str = "PLAINTEXT"
    tls: Tls | None = None
    login: Login | None = None
    other: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, cluster: str, config: Mapping[str, Any]) -> ClusterSecurity:
        """The model of librdkafka settings `config` (see the module's docstring); SecurityError lists problems."""
        from mirror_engine.security.reader import read_security

        return read_security(cls, cluster, {key: _text(value) for key, value in config.items()
                                            if not callable(value)})

    def secrets(self) -> list[str]:
        """Every secret value in the model (passwords, client secret, inline private key)."""
        values: list[str | None] = []
        if self.tls:
            values += [self.tls.key_pem, self.tls.key_password, self.tls.keystore_password]
        if isinstance(self.login, PasswordLogin):
            values.append(self.login.password)
        elif isinstance(self.login, OidcLogin):
            values.append(self.login.client_secret)
        return [value for value in values if value]

    def librdkafka(self) -> dict[str, Any]:
        """confluent-kafka settings; an MSK IAM login carries its token callback (`oauth_cb`)."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, **self.other}
        if self.protocol != "PLAINTEXT":
            config["security.protocol"] = self.protocol
        if self.tls:
            config.update(_librdkafka_tls(self.tls))
        login = self.login
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
            from mirror_engine.security.msk_iam import token_callback

            config.update({"sasl.mechanism": "OAUTHBEARER", "oauth_cb": token_callback(login)})
        return config

    def java_options(self, file_path: Any = None) -> dict[str, str]:
        """Java client settings (no `kafka.` prefix); `file_path(local path) -> path the JVM reads` (default: same)."""
        from mirror_engine.security.java_client import java_options

        return java_options(self, file_path)


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


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def security_config(cluster: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` read into the model and rendered for librdkafka, its secrets registered for redaction."""
    from mirror_engine.security.secrets import remember_secrets

    security = ClusterSecurity.read(cluster, config)
    remember_secrets({f"secret.{n}": value for n, value in enumerate(security.secrets())})
    return security.librdkafka()


def is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE
