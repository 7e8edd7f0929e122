"""The TLS files of a job that runs on other machines (a Spark cluster's executors), and its settings naming them.

A cluster's settings name files on the machine that submits the job (`ssl.ca.location: /etc/kafka/ca.pem`), or
carry them inline (`ssl.ca.pem`, `ssl.key.pem` from an Airflow connection's extras). Neither reaches an executor.
`stage_job_files` writes what the clients need into a private directory of the submitting machine (mode 0700,
files 0600), under names of their own:

- `<prefix>-ca.pem`: the CA certificates (PEM; librdkafka's `ssl.ca.location`, Java's PEM truststore);
- `<prefix>-client.p12`: the client certificate and key as one PKCS12 file, encrypted under a random password
  (librdkafka's and Java's `ssl.keystore.location`); a PKCS12 keystore given as such is copied as it is.

and returns the settings with these names, relative, in place of the TLS settings: the job is submitted with the
files (`spark-submit --files`), which Spark puts in each executor's working directory, and runs in the private
directory itself, so that the same relative name is found by the driver and by every executor, by the Java
client (Spark's Kafka source) and by librdkafka (the backfill's writer). Key material in clear never leaves the
submitting machine: what is shipped is encrypted, its password travels in the job's environment only.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from mirror_engine.security.model import ClusterSecurity, SecurityError, Tls
from mirror_engine.security.reader import read_security
from mirror_engine.security.secrets import remember_secrets

__all__ = ["StagedCluster", "stage_job_files"]

# Every setting naming TLS material, on a file or inline: replaced by the staged files.
_TLS_MATERIAL = ("ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.certificate.pem",
                 "ssl.key.location", "ssl.key.pem", "ssl.key.password", "ssl.keystore.location",
                 "ssl.keystore.password")


@dataclass(frozen=True)
class StagedCluster:
    """A cluster's librdkafka settings naming its staged files by relative name, and those files."""

    config: dict[str, str] = field(repr=False)
    files: list[Path] = field(default_factory=list)


def _write(path: Path, data: bytes) -> Path:
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    return path


def client_pkcs12(security: ClusterSecurity, tls: Tls) -> tuple[bytes, str]:
    """The PEM client certificate and key (files or inline) as one PKCS12 store, encrypted under a new random
    password (registered as a secret), and that password. Java reads PKCS12 for every key type and cipher (its
    PEM keystore reads only some encrypted PKCS#8 keys), librdkafka reads it as `ssl.keystore.location`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    key_name = "ssl.key.pem" if tls.key_pem else "ssl.key.location"
    certificate_name = "ssl.certificate.pem" if tls.certificate_pem else "ssl.certificate.location"
    try:
        key_pem = tls.key_pem.encode() if tls.key_pem else Path(str(tls.key_location)).read_bytes()
        chain_pem = (tls.certificate_pem.encode() if tls.certificate_pem
                     else Path(str(tls.certificate_location)).read_bytes())
    except OSError as error:
        raise SecurityError(security.cluster, [f"{key_name} or {certificate_name}: cannot be read "
                                               f"({error.strerror})"]) from None
    try:
        key = serialization.load_pem_private_key(key_pem, tls.key_password.encode() if tls.key_password else None)
    except (ValueError, TypeError):
        raise SecurityError(security.cluster, [f"{key_name}: the client key cannot be read as PEM with the "
                                               "given ssl.key.password (wrong password, or not a PEM key)"]) from None
    try:
        chain = x509.load_pem_x509_certificates(chain_pem)
    except ValueError:
        raise SecurityError(security.cluster, [f"{certificate_name}: not a PEM certificate chain"]) from None
    password = secrets.token_urlsafe(24)
    remember_secrets({"ssl.keystore.password": password})
    return pkcs12.serialize_key_and_certificates(
        b"client", key, chain[0], chain[1:] or None,  # type: ignore[arg-type]
        serialization.BestAvailableEncryption(password.encode())), password


def stage_job_files(cluster: str, config: dict[str, str], directory: Path, prefix: str) -> StagedCluster:
    """`config` (librdkafka settings as written) with its TLS material staged in `directory` (see the module's
    docstring); the same settings and no file when the cluster needs none. SecurityError names a refused key."""
    security = read_security(cluster, config)
    tls = security.tls
    if tls is None or not (tls.ca_location or tls.ca_pem or tls.has_client_certificate):
        return StagedCluster(dict(config))
    staged = {key: value for key, value in config.items() if key not in _TLS_MATERIAL}
    files: list[Path] = []
    if tls.ca_location or tls.ca_pem:
        name = f"{prefix}-ca.pem"
        try:
            ca = tls.ca_pem.encode() if tls.ca_pem else Path(str(tls.ca_location)).read_bytes()
        except OSError as error:
            raise SecurityError(cluster, [f"ssl.ca.location: cannot be read ({error.strerror})"]) from None
        files.append(_write(directory / name, ca))
        staged["ssl.ca.location"] = name
    if tls.has_client_certificate:
        name = f"{prefix}-client.p12"
        if tls.keystore_location:
            files.append(directory / name)
            shutil.copyfile(tls.keystore_location, _write(directory / name, b""))
            if tls.keystore_password:
                staged["ssl.keystore.password"] = tls.keystore_password
        else:
            data, password = client_pkcs12(security, tls)
            files.append(_write(directory / name, data))
            staged["ssl.keystore.password"] = password
        staged["ssl.keystore.location"] = name
    return StagedCluster(staged, files)
