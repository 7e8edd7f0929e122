"""`ClusterSecurity` rendered as Java Kafka client settings (Spark's Kafka source takes them with `kafka.`).

- CA: a PEM truststore file (`ssl.truststore.type=PEM`); inline PEM is written to a file first.
- Client certificate: a PKCS12 keystore as it is, or PEM key and chain written together into one PKCS12
  file of `keystores.private_dir()` (mode 0600, encrypted under a random password: `job_files.client_pkcs12`).
  Inline key material never goes into an option, so it cannot reach a Spark plan.
- Logins: PLAIN/SCRAM JAAS lines; OIDC as `OAuthBearerLoginCallbackHandler` with the token endpoint and the
  client credentials; AWS MSK IAM as `IAMLoginModule` (the jar `software.amazon.msk:aws-msk-iam-auth` must
  be on the class path: `spark_jobs.packages.job_packages`). JAAS values escape `\\` and `"`.

`file_path` maps a local file to the path the JVM reads it from (default: the same). A job on a Spark cluster
gets settings already naming its shipped files (`job_files.stage_job_files`).
"""

from __future__ import annotations

from collections.abc import Callable

from mirror_engine.security.model import (
    ClusterSecurity,
    MskIamLogin,
    OidcLogin,
    PasswordLogin,
    SecurityError,
    Tls,
    UnsecuredJwtLogin,
)

_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
_OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
_IAM_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
_IAM_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"


def _jaas(module: str, options: dict[str, str | None]) -> str:
    from mirror_engine.security.jaas import render_jaas_config  # the one rendering: quotes, backslashes, line breaks

    return render_jaas_config(module, {name: value for name, value in options.items() if value is not None})


def _private_pem(name: str, data: str) -> str:
    from mirror_engine.security.keystores import write_private

    return str(write_private(name, data.encode()))


def _pkcs12_keystore(security: ClusterSecurity, tls: Tls) -> tuple[str, str]:
    """The client's PEM key and certificate chain as one PKCS12 file (mode 0600), and the password protecting it."""
    from mirror_engine.security.job_files import client_pkcs12
    from mirror_engine.security.keystores import write_private

    data, password = client_pkcs12(security, tls)
    return str(write_private(f"{security.cluster}-client", data)), password


def _tls_options(security: ClusterSecurity, tls: Tls, file_path: Callable[[str], str]) -> dict[str, str]:
    options: dict[str, str] = {}
    ca = tls.ca_location or (_private_pem(f"{security.cluster}-ca", tls.ca_pem) if tls.ca_pem else None)
    if ca:
        options.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": file_path(ca)})
    if tls.keystore_location:
        options.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": file_path(tls.keystore_location)})
        if tls.keystore_password:
            options["ssl.keystore.password"] = tls.keystore_password
    elif tls.has_client_certificate:
        location, password = _pkcs12_keystore(security, tls)
        options.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": file_path(location),
                        "ssl.keystore.password": password, "ssl.key.password": password})
    if not tls.verify_hostname:
        options["ssl.endpoint.identification.algorithm"] = ""
    return options


def _unsecured_subject(config: str) -> str:
    for part in config.split():
        name, _, value = part.partition("=")
        if name == "principal":
            return value
    return "anonymous"


def _login_options(security: ClusterSecurity) -> dict[str, str]:
    login = security.login
    if isinstance(login, PasswordLogin):
        module = _PLAIN if login.mechanism == "PLAIN" else _SCRAM
        return {"sasl.mechanism": login.mechanism,
                "sasl.jaas.config": _jaas(module, {"username": login.username, "password": login.password})}
    if isinstance(login, OidcLogin):
        options: dict[str, str | None] = {"clientId": login.client_id, "clientSecret": login.client_secret,
                                          "scope": login.scope}
        for pair in (login.extensions or "").split(","):
            name, _, value = pair.partition("=")
            if name.strip():
                options[f"extension_{name.strip()}"] = value.strip()
        return {"sasl.mechanism": "OAUTHBEARER", "sasl.login.callback.handler.class": _OAUTH_HANDLER,
                "sasl.oauthbearer.token.endpoint.url": login.token_url, "sasl.jaas.config": _jaas(_OAUTH, options)}
    if isinstance(login, UnsecuredJwtLogin):
        return {"sasl.mechanism": "OAUTHBEARER",
                "sasl.jaas.config": _jaas(_OAUTH, {"unsecuredLoginStringClaim_sub": _unsecured_subject(login.config)})}
    if isinstance(login, MskIamLogin):
        return {"sasl.mechanism": "AWS_MSK_IAM", "sasl.client.callback.handler.class": _IAM_HANDLER,
                "sasl.jaas.config": _jaas(_IAM_MODULE, {"awsProfileName": login.profile,
                                                        "awsRoleArn": login.role_arn})}
    return {}


def java_options(security: ClusterSecurity, file_path: Callable[[str], str] | None = None) -> dict[str, str]:
    """The Java client settings of `security` (see the module's docstring); SecurityError when one cannot be."""
    refused = [key for key in security.other if key.startswith(("ssl.", "sasl."))]
    if refused:
        raise SecurityError(security.cluster, [
            f"{key}: cannot be passed to Spark's Kafka source (a Java client); remove it, or write the "
            "cluster's security with the settings listed in the README's 'Secured clusters'" for key in refused])
    path = file_path or (lambda local: local)
    options = {"bootstrap.servers": security.bootstrap_servers, "security.protocol": security.protocol}
    if security.tls:
        options.update(_tls_options(security, security.tls, path))
    options.update(_login_options(security))
    return options


def oauth_urls(security: ClusterSecurity) -> list[str]:
    """URLs a Java client must be allowed to call (system property org.apache.kafka.sasl.oauthbearer.allowed.urls)."""
    return [security.login.token_url] if isinstance(security.login, OidcLogin) else []

