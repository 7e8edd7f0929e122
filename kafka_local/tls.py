"""TLS clusters of the test harness: their certificates, broker settings and client settings.

A TLS cluster is one of three kinds, each a listener `SASL_SSL` or `SSL` on loopback beside a PLAINTEXT
controller listener (no authorizer, so the node's own registration needs no login):

- `mtls`: SSL with client certificates required (`ssl.client.auth=required`); the client is `CN=mirror`;
- `scram`: SASL_SSL with SCRAM-SHA-512 (and PLAIN, which the broker uses for itself), users `SECURED_USERS`;
- `oauth`: SASL_SSL with OAUTHBEARER, tokens validated against a real OAuth 2 server's JWKS endpoint
  (`kafka_local.oauth`); clients fetch tokens with client credentials (OIDC).

The CA, server and client certificates are made by openssl in `<home>/tls`, keys readable by the owner only;
JKS and PKCS12 stores (what MirrorMaker 2 users write) beside them, made by keytool.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

TLS_KINDS = ("mtls", "scram", "oauth")
STORE_PASSWORD = "store-secret-4711"  # local-only test password of the JKS/PKCS12 stores
KEY_PASSWORD = "key-secret-4711"  # local-only test password of the encrypted client key
OAUTH_CLIENT_ID = "mirror"
OAUTH_CLIENT_SECRET = "oauth-client-secret-4711"
OAUTH_SCOPE = "kafka"


@dataclass(frozen=True)
class TlsFiles:
    """The PEM and store files of one cluster's CA, server and client (`mirror`) identities."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def server_keystore(self) -> Path:
        return self.folder / "server.p12"

    @property
    def client_certificate(self) -> Path:
        return self.folder / "client.pem"

    @property
    def client_key(self) -> Path:  # encrypted with KEY_PASSWORD
        return self.folder / "client.key"

    @property
    def client_keystore_jks(self) -> Path:
        return self.folder / "client.jks"

    @property
    def client_keystore_p12(self) -> Path:
        return self.folder / "client.p12"

    @property
    def truststore_jks(self) -> Path:
        return self.folder / "truststore.jks"


def _run(command: list[str], environment: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(environment or {})})
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} {command[1]} failed: {result.stderr.strip()[-800:]}")


def make_tls_files(folder: Path) -> TlsFiles:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate (CN=mirror), with stores."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    files = TlsFiles(folder)
    old_umask = os.umask(0o077)  # every file here readable by the owner only
    try:
        _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
              "-keyout", str(folder / "ca.key"), "-out", str(files.ca)])
        for name, subject, extension in (
            ("server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            ("client", f"/CN={OAUTH_CLIENT_ID}", "extendedKeyUsage=clientAuth"),
        ):
            _run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                  "-keyout", str(folder / f"{name}-plain.key"), "-out", str(folder / f"{name}.csr")])
            (folder / f"{name}.ext").write_text(extension + "\n")
            _run(["openssl", "x509", "-req", "-in", str(folder / f"{name}.csr"), "-CA", str(files.ca),
                  "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "2",
                  "-extfile", str(folder / f"{name}.ext"), "-out", str(folder / f"{name}.pem")])
        passwords = {"TLS_STORE_PASS": STORE_PASSWORD, "TLS_KEY_PASS": KEY_PASSWORD}
        _run(["openssl", "pkcs12", "-export", "-in", str(folder / "server.pem"), "-inkey",
              str(folder / "server-plain.key"), "-name", "server", "-passout", "env:TLS_STORE_PASS",
              "-out", str(files.server_keystore)], passwords)
        _run(["openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", str(folder / "client-plain.key"),
              "-passout", "env:TLS_KEY_PASS", "-out", str(files.client_key)], passwords)
        _run(["openssl", "pkcs12", "-export", "-in", str(files.client_certificate), "-inkey",
              str(folder / "client-plain.key"), "-name", "client", "-passout", "env:TLS_STORE_PASS",
              "-out", str(files.client_keystore_p12)], passwords)
        _run(["keytool", "-importkeystore", "-noprompt", "-srckeystore", str(files.client_keystore_p12),
              "-srcstoretype", "PKCS12", "-srcstorepass:env", "TLS_STORE_PASS", "-destkeystore",
              str(files.client_keystore_jks), "-deststoretype", "JKS", "-deststorepass:env", "TLS_STORE_PASS",
              "-destkeypass:env", "TLS_STORE_PASS"], passwords)
        _run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", str(files.ca), "-keystore",
              str(files.truststore_jks), "-storetype", "JKS", "-storepass:env", "TLS_STORE_PASS"], passwords)
        for leftover in ("server-plain.key", "client-plain.key", "ca.key"):
            (folder / leftover).unlink()
        for entry in folder.iterdir():  # keytool sets a truststore's mode itself, whatever the umask
            os.chmod(entry, 0o600)
    finally:
        os.umask(old_umask)
    return files


def broker_tls_properties(kind: str, port: int, controller_port: int, files: TlsFiles, plain_jaas: str,
                          oauth_issuer: str) -> dict[str, str]:
    """The listener and TLS settings of a TLS cluster of `kind` (see the module's docstring)."""
    listener = "SSL" if kind == "mtls" else "SASL_SSL"
    properties = {
        "listeners": f"{listener}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"{listener}://127.0.0.1:{port}",
        "inter.broker.listener.name": listener,
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{listener}:{listener}",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(files.server_keystore),
        "ssl.keystore.password": STORE_PASSWORD,
        "ssl.key.password": STORE_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
    }
    if kind == "mtls":
        properties["ssl.client.auth"] = "required"
        return properties
    properties.update({
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER" if kind == "oauth" else "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    })
    if kind == "oauth":
        properties.update({
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            "sasl.oauthbearer.jwks.endpoint.url": f"{oauth_issuer}/jwks",
            "sasl.oauthbearer.expected.issuer": oauth_issuer,
            "sasl.oauthbearer.expected.audience": OAUTH_SCOPE,
        })
    return properties


def client_tls_config(kind: str, files: TlsFiles, user: str, password: str, oauth_issuer: str) -> dict[str, str]:
    """librdkafka settings of a client of a TLS cluster of `kind` (PEM files; the client key encrypted)."""
    config = {"security.protocol": "SSL" if kind == "mtls" else "SASL_SSL", "ssl.ca.location": str(files.ca)}
    if kind == "mtls":
        config.update({"ssl.certificate.location": str(files.client_certificate),
                       "ssl.key.location": str(files.client_key), "ssl.key.password": KEY_PASSWORD})
    elif kind == "scram":
        config.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password})
    else:
        config.update({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                       "sasl.oauthbearer.client.id": OAUTH_CLIENT_ID,
                       "sasl.oauthbearer.client.secret": OAUTH_CLIENT_SECRET,
                       "sasl.oauthbearer.scope": OAUTH_SCOPE,
                       "sasl.oauthbearer.token.endpoint.url": f"{oauth_issuer}/token"})
    return config


def java_tls_settings(kind: str, files: TlsFiles, user: str, password: str, oauth_issuer: str) -> dict[str, str]:
    """Java client settings of a client of a TLS cluster of `kind`: JKS truststore and keystore, SCRAM, or OIDC."""
    settings = {"security.protocol": "SSL" if kind == "mtls" else "SASL_SSL",
                "ssl.truststore.type": "JKS", "ssl.truststore.location": str(files.truststore_jks),
                "ssl.truststore.password": STORE_PASSWORD}
    if kind == "mtls":
        settings.update({"ssl.keystore.type": "JKS", "ssl.keystore.location": str(files.client_keystore_jks),
                         "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": STORE_PASSWORD})
    elif kind == "scram":
        settings.update({"sasl.mechanism": "SCRAM-SHA-512",
                         "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                             f'username="{user}" password="{password}";'})
    else:
        settings.update({
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": f"{oauth_issuer}/token",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                f'clientId="{OAUTH_CLIENT_ID}" clientSecret="{OAUTH_CLIENT_SECRET}" '
                                f'scope="{OAUTH_SCOPE}";'})
    return settings


def harness_secrets() -> tuple[str, ...]:
    """Every password and secret of the TLS clusters, for scans of logs and command lines."""
    return STORE_PASSWORD, KEY_PASSWORD, OAUTH_CLIENT_SECRET
