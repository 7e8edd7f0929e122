"""One typed model of a cluster's security settings, read once, rendered for each client.

A cluster's settings arrive as librdkafka settings: written so in a YAML plan's `client`, an Airflow
connection's extras (through the connection hook), or converted from an MM2 file's Java settings
(`mm2_clients`). `read_security` (`reader`) reads every security setting into the model and refuses, before any
connection, what it cannot render, with one line per problem naming the key and what to write instead.
Each client's settings are then rendered from the same model:

- `librdkafka_config` (`librdkafka`): confluent-kafka (the engine, the backfill's writer); AWS MSK IAM becomes
  OAUTHBEARER with a token callback (`msk_iam`);
- `java_options` (`java_client`): the Java client options of Spark's Kafka source.

This module holds the model alone and imports none of them.

Invariants: TLS verifies the broker's certificate and host name unless the setting named `unsafe...` says
otherwise; a secret is only ever a field of the model, registered with `secrets.remember_secrets` on reading,
and inline PEM reaches a Java client only through a file readable by its owner alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ClusterSecurity", "MskIamLogin", "OidcLogin", "PasswordLogin", "SecurityError", "Tls",
           "UnsecuredJwtLogin"]

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


def is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in _TRUE
