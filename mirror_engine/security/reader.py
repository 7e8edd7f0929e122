"""Reading librdkafka settings into `ClusterSecurity`: every security key, and a sentence for each problem.

Each problem line starts with the key at fault and says what to write instead. Nothing here shows a
secret's value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mirror_engine.security.model import (
    _PASSWORD_MECHANISMS,
    _PROTOCOLS,
    AWS_MSK_IAM,
    UNSAFE_SKIP_HOSTNAME,
    ClusterSecurity,
    Login,
    MskIamLogin,
    OidcLogin,
    PasswordLogin,
    SecurityError,
    Tls,
    UnsecuredJwtLogin,
    is_true,
)

TLS_KEYS = {
    "ssl.ca.location": "ca_location", "ssl.ca.pem": "ca_pem",
    "ssl.certificate.location": "certificate_location", "ssl.certificate.pem": "certificate_pem",
    "ssl.key.location": "key_location", "ssl.key.pem": "key_pem", "ssl.key.password": "key_password",
    "ssl.keystore.location": "keystore_location", "ssl.keystore.password": "keystore_password",
}
TLS_SETTINGS = (*TLS_KEYS, "ssl.endpoint.identification.algorithm", UNSAFE_SKIP_HOSTNAME)
_OAUTH_KEYS = ("sasl.oauthbearer.method", "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.id",
               "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions",
               "enable.sasl.oauthbearer.unsecure.jwt", "sasl.oauthbearer.config")
_AWS_KEYS = ("aws.region", "aws.profile", "aws.role.arn")
_OTHER_SECURITY_KEYS = ("ssl.endpoint.identification.algorithm", "enable.ssl.certificate.verification",
                        UNSAFE_SKIP_HOSTNAME, "security.protocol", "sasl.mechanism", "sasl.mechanisms",
                        "sasl.username", "sasl.password", "bootstrap.servers")
_KNOWN = {*TLS_KEYS, *_OAUTH_KEYS, *_AWS_KEYS, *_OTHER_SECURITY_KEYS}
# b-1.name.abc123.c2.kafka.eu-west-1.amazonaws.com, boot-x.c1.kafka-serverless.us-east-1.amazonaws.com
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com(?:\.cn)?(?::\d+)?$")
_MECHANISMS_SHOWN = "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM"


def msk_region(bootstrap: str) -> str | None:
    """The AWS region in an MSK bootstrap address, if it is one."""
    for server in bootstrap.split(","):
        match = _MSK_HOST.search(server.strip().lower())
        if match:
            return match.group(1)
    return None


def tls_of(config: dict[str, str], problems: list[str], secured: bool, plain_because: str) -> Tls | None:
    """The TLS of a connection that uses it (`secured`); one that does not takes no TLS setting: the first given is
    named, followed by `plain_because` (why the connection is plain, and what to write)."""
    if secured:
        return read_tls(config, problems)
    given = [key for key in TLS_SETTINGS if config.get(key)]
    if given:
        problems.append(f"{given[0]}: TLS settings, but {plain_because}")
    return None


def read_tls(config: dict[str, str], problems: list[str]) -> Tls | None:
    values = {attribute: config[key] for key, attribute in TLS_KEYS.items() if config.get(key)}
    algorithm = config.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None and algorithm.strip().lower() != "https":
        problems.append(f"ssl.endpoint.identification.algorithm: {algorithm!r} turns off the check that the "
                        f"broker's certificate names its host; remove it, or write {UNSAFE_SKIP_HOSTNAME}: true "
                        "if you mean to connect unsafely")
    verification = config.get("enable.ssl.certificate.verification")
    if verification is not None and not is_true(verification):
        problems.append("enable.ssl.certificate.verification: turning off certificate checks is not supported; "
                        "give the cluster's CA in ssl.ca.location (a PEM file) or ssl.ca.pem instead")
    for located, inline in (("ssl.certificate.location", "ssl.certificate.pem"), ("ssl.key.location", "ssl.key.pem"),
                            ("ssl.ca.location", "ssl.ca.pem")):
        if config.get(located) and config.get(inline):
            problems.append(f"{inline}: given together with {located}; keep one of them")
    has_certificate = bool(config.get("ssl.certificate.location") or config.get("ssl.certificate.pem"))
    has_key = bool(config.get("ssl.key.location") or config.get("ssl.key.pem"))
    if has_certificate != has_key:
        given, missing = (("ssl.certificate.location", "ssl.key.location (or ssl.key.pem)") if has_certificate
                          else ("ssl.key.location", "ssl.certificate.location (or ssl.certificate.pem)"))
        problems.append(f"{given}: a client certificate needs its key and its certificate; add {missing}")
    if config.get("ssl.keystore.location") and has_certificate:
        problems.append("ssl.keystore.location: given together with a PEM client certificate; keep one of them")
    skip = is_true(config.get(UNSAFE_SKIP_HOSTNAME))
    if not values and not skip:
        return Tls()  # the system's CAs, host names checked
    return Tls(**values, verify_hostname=not skip)


def _oauth(config: dict[str, str], problems: list[str]) -> Login | None:
    method = (config.get("sasl.oauthbearer.method") or "default").lower()
    if method == "oidc":
        missing = [key for key in ("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.client.id",
                                   "sasl.oauthbearer.client.secret") if not config.get(key)]
        if missing:
            problems.append(f"{missing[0]}: required by sasl.oauthbearer.method: oidc (client credentials); "
                            f"write {', '.join(missing)}")
            return None
        return OidcLogin(config["sasl.oauthbearer.token.endpoint.url"], config["sasl.oauthbearer.client.id"],
                         config["sasl.oauthbearer.client.secret"], config.get("sasl.oauthbearer.scope"),
                         config.get("sasl.oauthbearer.extensions"))
    if method == "default" and is_true(config.get("enable.sasl.oauthbearer.unsecure.jwt")):
        return UnsecuredJwtLogin(config.get("sasl.oauthbearer.config", ""))
    problems.append("sasl.mechanism: OAUTHBEARER needs a way to get tokens: write sasl.oauthbearer.method: oidc "
                    "with sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.id and "
                    "sasl.oauthbearer.client.secret (or, on development brokers only, "
                    "enable.sasl.oauthbearer.unsecure.jwt: true)")
    return None


def _msk(config: dict[str, str], bootstrap: str, protocol: str, problems: list[str]) -> Login | None:
    if protocol != "SASL_SSL":
        problems.append(f"security.protocol: AWS_MSK_IAM needs SASL_SSL, got {protocol}")
    region = config.get("aws.region") or msk_region(bootstrap)
    if not region:
        problems.append("aws.region: not set, and bootstrap.servers names no MSK host "
                        "(*.kafka.<region>.amazonaws.com); write aws.region: <region>, e.g. eu-west-1")
        return None
    return MskIamLogin(region, config.get("aws.profile"), config.get("aws.role.arn"))


def _login(config: dict[str, str], bootstrap: str, protocol: str, problems: list[str]) -> Login | None:
    mechanism = (config.get("sasl.mechanism") or config.get("sasl.mechanisms") or "").strip().upper()
    stray = [key for key in (*_OAUTH_KEYS, "sasl.username", "sasl.password") if config.get(key)]
    if not protocol.startswith("SASL_"):
        if mechanism or stray:
            key = "sasl.mechanism" if mechanism else stray[0]
            problems.append(f"{key}: a SASL login, but security.protocol is {protocol}: write SASL_SSL "
                            "(or SASL_PLAINTEXT), or remove the login")
        return None
    if not mechanism:
        problems.append(f"sasl.mechanism: not set, so librdkafka would try Kerberos (GSSAPI); write one of "
                        f"{_MECHANISMS_SHOWN}")
        return None
    if mechanism in _PASSWORD_MECHANISMS:
        missing = [key for key in ("sasl.username", "sasl.password") if not config.get(key)]
        if missing:
            problems.append(f"{missing[0]}: {mechanism} needs sasl.username and sasl.password")
            return None
        return PasswordLogin(mechanism, config["sasl.username"], config["sasl.password"])
    if mechanism == "OAUTHBEARER":
        return _oauth(config, problems)
    if mechanism == AWS_MSK_IAM:
        return _msk(config, bootstrap, protocol, problems)
    if mechanism == "GSSAPI":
        return None  # Kerberos: librdkafka's own settings, kept as they are (Spark's source refuses it)
    problems.append(f"sasl.mechanism: {mechanism!r} is not known; write one of {_MECHANISMS_SHOWN}")
    return None


def read_security(cluster: str, settings: Mapping[str, Any]) -> ClusterSecurity:
    """The model of librdkafka settings (see `model`'s docstring); SecurityError lists every problem, each naming
    its key. Callables among the settings (a token callback) are not security settings and are left out."""
    config = {key: _text(value) for key, value in settings.items() if not callable(value)}
    problems: list[str] = []
    bootstrap = config.get("bootstrap.servers", "").strip()
    if not bootstrap:
        problems.append("bootstrap.servers: required")
    protocol = (config.get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in _PROTOCOLS:
        problems.append(f"security.protocol: {config['security.protocol']!r} is not one of {', '.join(_PROTOCOLS)}")
        protocol = "PLAINTEXT"
    tls = tls_of(config, problems, protocol.endswith("SSL"), f"security.protocol is {protocol}: write SSL or SASL_SSL")
    login = _login(config, bootstrap, protocol, problems)
    mechanism = (config.get("sasl.mechanism") or config.get("sasl.mechanisms") or "").strip().upper()
    if mechanism != AWS_MSK_IAM:
        for key in _AWS_KEYS:
            if config.get(key):
                problems.append(f"{key}: only for sasl.mechanism: AWS_MSK_IAM; remove it")
    if problems:
        raise SecurityError(cluster, problems)
    other = {key: value for key, value in config.items() if key not in _KNOWN}
    if mechanism == "GSSAPI":
        other["sasl.mechanism"] = "GSSAPI"
    return ClusterSecurity(cluster, bootstrap, protocol, tls, login, other)


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
