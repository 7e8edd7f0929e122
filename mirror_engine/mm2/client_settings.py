"""Java client settings of one MirrorMaker 2 cluster (JAAS, keystores, TLS) turned into librdkafka settings.

The settings come in as `name -> (MM2 key, value)`, already resolved and type-checked by `mm2_config`; each
problem line starts with the MM2 key at fault. Only what librdkafka can do the same way is converted: PLAIN
and SCRAM logins, OAUTHBEARER with client credentials (OIDC) or unsecured tokens, AWS MSK IAM (signed by the
engine, `msk_iam`), PEM or PKCS12 key material, PEM trust stores; JKS keystores and JKS or PKCS12 truststores
are converted at load to PEM files in a private directory removed at exit (`keystores`). An empty
`ssl.endpoint.identification.algorithm` becomes `unsafe.skip.hostname.verification`. Messages never show
a password or a JAAS option value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from mirror_engine.security import JaasConfigError, KeystoreError, keystore_to_pem, parse_jaas_config, truststore_to_pem

__all__ = ["client_config", "registry_client_config"]


_JAAS_LOGIN_MODULES = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "OAuthBearerLoginModule": ("OAUTHBEARER",),
    "IAMLoginModule": ("AWS_MSK_IAM",),
}
_OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # what mm2_config keeps of ${env:NAME}
_Client = dict[str, tuple[str, str]]  # librdkafka name -> (value, the MM2 key it came from)


def _jaas_credentials(alias: str, settings: dict[str, tuple[str, Any]], client: _Client, problems: list[str]) -> None:
    key, text = settings["sasl.jaas.config"]
    try:
        entries = parse_jaas_config(text)
    except JaasConfigError as error:
        problems.append(f"{key}: {error}")
        return
    if len(entries) != 1:
        problems.append(f"{key}: holds {len(entries)} login modules; a Kafka client takes exactly one")
        return
    module, options = entries[0].simple_name, entries[0].options
    mechanisms = _JAAS_LOGIN_MODULES.get(module)
    if mechanisms is None:
        allowed = ", ".join(_JAAS_LOGIN_MODULES)
        problems.append(f"{key}: login module {module} cannot be converted for librdkafka (only {allowed}); "
                        "write this cluster's librdkafka settings in a YAML plan instead")
        return
    mechanism_key, mechanism = settings.get("sasl.mechanism", (f"{alias}.sasl.mechanism", None))
    if mechanism is None:
        problems.append(f"{mechanism_key}: not set, so Kafka clients would use GSSAPI; "
                        f"set {' or '.join(mechanisms)} to match the {module} in {key}")
    elif mechanism.upper() not in mechanisms:
        problems.append(f"{mechanism_key}: {mechanism!r} does not match the {module} in {key}; "
                        f"expected {' or '.join(mechanisms)}")
    if module == "OAuthBearerLoginModule":
        _oauth_login(alias, settings, options, key, client, problems)
    elif module == "IAMLoginModule":
        _iam_login(alias, settings, options, client, problems)
    else:
        missing = [name for name in ("username", "password") if not options.get(name)]
        if missing:
            problems.append(f"{key}: {module} needs {' and '.join(missing)}")
            return
        client["sasl.username"] = (options["username"], key)
        client["sasl.password"] = (options["password"], key)


def _oauth_login(alias: str, settings: dict[str, tuple[str, Any]], options: dict[str, str], key: str,
                 client: _Client, problems: list[str]) -> None:
    """OAuthBearerLoginModule: client credentials (OIDC) with the login callback handler, or unsecured JWTs."""
    handler_key, handler = settings.get("sasl.login.callback.handler.class", (f"{alias}.sasl.login.callback."
                                                                              "handler.class", None))
    if handler is None:
        if "unsecuredLoginStringClaim_sub" not in options:
            problems.append(f"{handler_key}: not set, so {key} would make unsigned tokens without a subject; write "
                            f"{_OAUTH_HANDLER} with sasl.oauthbearer.token.endpoint.url for client credentials")
            return
        client["enable.sasl.oauthbearer.unsecure.jwt"] = ("true", key)
        client["sasl.oauthbearer.config"] = (f"principal={options['unsecuredLoginStringClaim_sub']}", key)
        return
    if handler.rsplit(".", 1)[-1] != "OAuthBearerLoginCallbackHandler":
        problems.append(f"{handler_key}: {handler} cannot be converted for librdkafka; write {_OAUTH_HANDLER}")
        return
    url_key, url = settings.get("sasl.oauthbearer.token.endpoint.url",
                                (f"{alias}.sasl.oauthbearer.token.endpoint.url", None))
    missing = [name for name in ("clientId", "clientSecret") if not options.get(name)]
    if url is None:
        problems.append(f"{url_key}: required by {handler_key}: write the OAuth server's token endpoint")
    elif missing:
        problems.append(f"{key}: OAuthBearerLoginModule with client credentials needs {' and '.join(missing)}")
    else:
        client["sasl.oauthbearer.method"] = ("oidc", handler_key)
        client["sasl.oauthbearer.token.endpoint.url"] = (url, url_key)
        client["sasl.oauthbearer.client.id"] = (options["clientId"], key)
        client["sasl.oauthbearer.client.secret"] = (options["clientSecret"], key)
        if options.get("scope"):
            client["sasl.oauthbearer.scope"] = (options["scope"], key)
        extensions = [f"{name.removeprefix('extension_')}={value}" for name, value in options.items()
                      if name.startswith("extension_")]
        if extensions:
            client["sasl.oauthbearer.extensions"] = (",".join(extensions), key)


def _iam_login(alias: str, settings: dict[str, tuple[str, Any]], options: dict[str, str], client: _Client,
               problems: list[str]) -> None:
    """AWS MSK IAM: the engine signs its tokens with aws-msk-iam-sasl-signer-python (`msk_iam`)."""
    handler_key, handler = settings.get("sasl.client.callback.handler.class",
                                        (f"{alias}.sasl.client.callback.handler.class", None))
    if handler is not None and handler.rsplit(".", 1)[-1] != "IAMClientCallbackHandler":
        problems.append(f"{handler_key}: {handler} does not go with IAMLoginModule; write "
                        "software.amazon.msk.auth.iam.IAMClientCallbackHandler")
    if options.get("awsProfileName"):
        client["aws.profile"] = (options["awsProfileName"], "sasl.jaas.config")
    if options.get("awsRoleArn"):
        client["aws.role.arn"] = (options["awsRoleArn"], "sasl.jaas.config")


def _secret(settings: dict[str, tuple[str, Any]], name: str, environ: Mapping[str, str],
            problems: list[str]) -> str | None:
    """The setting's value with a kept `${NAME}` environment reference resolved (a store is converted now)."""
    entry = settings.get(name)
    if entry is None:
        return None
    key, value = entry
    missing = [ref for ref in _ENV_REFERENCE.findall(value) if ref not in environ]
    if missing:
        problems.append(f"{key}: environment variable {missing[0]} is not set (needed at start to convert the store)")
        return None
    return _ENV_REFERENCE.sub(lambda match: environ[match.group(1)], value)


def _refused(alias: str, names: tuple[str, ...], problems: list[str]) -> bool:
    """Whether a problem was already reported about one of these settings (e.g. an unresolvable password)."""
    keys = {key for name in names for key in (name, f"{alias}.{name}")}
    return any(line.split(": ", 1)[0] in keys for line in problems)


def _keystore(alias: str, settings: dict[str, tuple[str, Any]], environ: Mapping[str, str], client: _Client,
              problems: list[str]) -> None:
    keystore_type = settings.get("ssl.keystore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.keystore.location"):
        key, location = entry
        if keystore_type == "PKCS12":  # librdkafka reads PKCS#12 keystores itself
            client["ssl.keystore.location"] = (location, key)
        elif keystore_type == "PEM":  # one PEM file holding the private key and the certificate chain
            client["ssl.key.location"] = (location, key)
            client["ssl.certificate.location"] = (location, key)
        elif _refused(alias, ("ssl.keystore.password", "ssl.key.password"), problems):
            return
        else:  # JKS: converted now to a PEM key and chain in a private directory (see keystores)
            before = len(problems)
            store_password = _secret(settings, "ssl.keystore.password", environ, problems)
            key_password = _secret(settings, "ssl.key.password", environ, problems)
            if len(problems) > before:
                return
            try:
                material = keystore_to_pem(location, keystore_type, store_password, key_password, f"{alias}-keystore")
            except KeystoreError as error:
                problems.append(f"{key}: {error}")
                return
            client["ssl.key.location"] = (str(material.key_location), key)
            client["ssl.certificate.location"] = (str(material.certificate_location), key)
            if material.key_password:  # the setting itself, so a kept environment reference stays one
                password_key, password = settings.get("ssl.key.password") or settings["ssl.keystore.password"]
                client["ssl.key.password"] = (password, password_key)
    if (entry := settings.get("ssl.keystore.password")) and keystore_type == "PKCS12":
        client["ssl.keystore.password"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.key"):
        client["ssl.key.pem"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.certificate.chain"):
        client["ssl.certificate.pem"] = (entry[1], entry[0])
    if (entry := settings.get("ssl.key.password")) and (keystore_type == "PEM" or "ssl.keystore.key" in settings):
        client["ssl.key.password"] = (entry[1], entry[0])


def _truststore(alias: str, settings: dict[str, tuple[str, Any]], environ: Mapping[str, str], client: _Client,
                problems: list[str]) -> None:
    truststore_type = settings.get("ssl.truststore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.truststore.location"):
        key, location = entry
        if truststore_type == "PEM":
            client["ssl.ca.location"] = (location, key)
        elif _refused(alias, ("ssl.truststore.password",), problems):
            return
        else:  # JKS or PKCS12: librdkafka reads CA certificates from PEM only; converted now (see keystores)
            before = len(problems)
            password = _secret(settings, "ssl.truststore.password", environ, problems)
            if len(problems) > before:
                return
            try:
                ca_file = truststore_to_pem(location, truststore_type, password, f"{alias}-truststore")
            except KeystoreError as error:
                problems.append(f"{key}: {error}")
                return
            client["ssl.ca.location"] = (str(ca_file), key)
    if entry := settings.get("ssl.truststore.certificates"):
        client["ssl.ca.pem"] = (entry[1], entry[0])


def _tls_settings(alias: str, settings: dict[str, tuple[str, Any]], environ: Mapping[str, str], client: _Client,
                  problems: list[str]) -> None:
    _keystore(alias, settings, environ, client, problems)
    _truststore(alias, settings, environ, client, problems)
    if entry := settings.get("ssl.endpoint.identification.algorithm"):
        algorithm = entry[1].lower()
        if algorithm == "https":
            client["ssl.endpoint.identification.algorithm"] = (algorithm, entry[0])
        elif algorithm == "":  # MM2's way of turning the host name check off: said as unsafe in the plan
            client["unsafe.skip.hostname.verification"] = ("true", entry[0])
        else:
            problems.append(f"{entry[0]}: must be https or empty (no hostname check), got {entry[1]!r}")


def client_config(alias: str, settings: dict[str, tuple[str, Any]], problems: list[str],
                  environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """librdkafka settings for one cluster from its Java client settings (`settings`: name -> (key, value)).

    JKS stores, and PKCS12 truststores, are converted to PEM files at once (`keystores`); `environ` resolves
    the `${NAME}` references kept in their passwords (the process environment by default).
    """
    client: _Client = {}
    for name in ("security.protocol", "sasl.mechanism", "sasl.kerberos.service.name", "client.id"):
        if name in settings:
            key, value = settings[name]
            client[name] = (value, key)
    if "sasl.jaas.config" in settings:
        _jaas_credentials(alias, settings, client, problems)
    _tls_settings(alias, settings, os.environ if environ is None else environ, client, problems)
    return {name: value for name, (value, _key) in client.items()}


# Java's TLS settings, as Confluent's Java registry client takes them after its `schema.registry.` prefix.
_JAVA_TLS = frozenset({"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
                       "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type",
                       "ssl.keystore.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                       "ssl.key.password", "ssl.endpoint.identification.algorithm"})


def registry_client_config(alias: str, settings: dict[str, tuple[str, Any]], problems: list[str],
                           environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A schema registry's client settings from an MM2 file's `<alias>.mirror-engine.schema.registry.*`
    (`settings`: name after that prefix -> (key, value)): Java's trust and key stores converted as a cluster's
    are, the rest (Confluent's login keys, or PEM files named as librdkafka names them) as they are."""
    client: _Client = {}
    _tls_settings(alias, settings, os.environ if environ is None else environ, client, problems)
    java = _JAVA_TLS - ({"ssl.key.password"} if "ssl.key.location" in settings else set())
    kept = {name: str(value) for name, (_key, value) in settings.items() if name not in java}
    return {**kept, **{name: value for name, (value, _key) in client.items()}}
