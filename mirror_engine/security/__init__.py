"""How a client proves who it is: the security model of a cluster connection, read from client settings and rendered
for Java clients (JAAS, key stores), AWS MSK IAM tokens, and keeping secrets out of what the engine writes."""

from mirror_engine.security.jaas import JaasConfigError, parse_jaas_config
from mirror_engine.security.java_client import java_options, oauth_urls
from mirror_engine.security.job_files import StagedCluster, stage_job_files
from mirror_engine.security.keystores import (
    KeystoreError,
    keystore_to_pem,
    private_dir,
    remove_private_dir,
    truststore_to_pem,
)
from mirror_engine.security.librdkafka import librdkafka_config, security_config
from mirror_engine.security.model import ClusterSecurity, MskIamLogin, OidcLogin, SecurityError
from mirror_engine.security.reader import read_security
from mirror_engine.security.registry import (
    REGISTRY_CLIENT_KEYS,
    RegistryLogins,
    RegistrySecurity,
    read_registry_security,
    registry_ssl_context,
)
from mirror_engine.security.secrets import (
    REDACTED,
    RedactingFilter,
    masked,
    printable,
    printable_lines,
    redact,
    remember_secrets,
    secret_values,
    without_credential_debug,
)

__all__ = [
    "REDACTED",
    "REGISTRY_CLIENT_KEYS",
    "ClusterSecurity",
    "JaasConfigError",
    "KeystoreError",
    "MskIamLogin",
    "OidcLogin",
    "RedactingFilter",
    "RegistryLogins",
    "RegistrySecurity",
    "SecurityError",
    "StagedCluster",
    "java_options",
    "keystore_to_pem",
    "librdkafka_config",
    "masked",
    "oauth_urls",
    "parse_jaas_config",
    "printable",
    "printable_lines",
    "private_dir",
    "read_registry_security",
    "read_security",
    "redact",
    "registry_ssl_context",
    "remember_secrets",
    "remove_private_dir",
    "secret_values",
    "security_config",
    "stage_job_files",
    "truststore_to_pem",
    "without_credential_debug",
]
