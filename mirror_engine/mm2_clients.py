"""Java client settings of one MirrorMaker 2 cluster (JAAS, keystores, TLS) turned into librdkafka settings.

The settings come in as `name -> (MM2 key, value)`, already resolved and type-checked by `mm2_config`; each
problem line starts with the MM2 key at fault. Only what librdkafka can do the same way is converted: PLAIN
and SCRAM logins, PEM or PKCS12 key material, PEM trust stores. Messages never show a password or a JAAS
option value.
"""

from __future__ import annotations

from typing import Any

from mirror_engine.jaas_config import JaasConfigError, parse_jaas_config

__all__ = ["client_config"]


_JAAS_LOGIN_MODULES = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
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
    missing = [name for name in ("username", "password") if not options.get(name)]
    if missing:
        problems.append(f"{key}: {module} needs {' and '.join(missing)}")
        return
    mechanism_key, mechanism = settings.get("sasl.mechanism", (f"{alias}.sasl.mechanism", None))
    if mechanism is None:
        problems.append(f"{mechanism_key}: not set, so Kafka clients would use GSSAPI; "
                        f"set {' or '.join(mechanisms)} to match the {module} in {key}")
    elif mechanism.upper() not in mechanisms:
        problems.append(f"{mechanism_key}: {mechanism!r} does not match the {module} in {key}; "
                        f"expected {' or '.join(mechanisms)}")
    client["sasl.username"] = (options["username"], key)
    client["sasl.password"] = (options["password"], key)


def _tls_settings(settings: dict[str, tuple[str, Any]], client: _Client, problems: list[str]) -> None:
    keystore_type = settings.get("ssl.keystore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.keystore.location"):
        key, location = entry
        if keystore_type == "PKCS12":
            client["ssl.keystore.location"] = (location, key)
        elif keystore_type == "PEM":  # one PEM file holding the private key and the certificate chain
            client["ssl.key.location"] = (location, key)
            client["ssl.certificate.location"] = (location, key)
        else:
            problems.append(f"{key}: a {keystore_type} keystore cannot be read by librdkafka; convert it to "
                            "PKCS12 or PEM and set ssl.keystore.type to match")
    if (entry := settings.get("ssl.keystore.password")) and keystore_type == "PKCS12":
        client["ssl.keystore.password"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.key"):
        client["ssl.key.pem"] = (entry[1], entry[0])
    if entry := settings.get("ssl.keystore.certificate.chain"):
        client["ssl.certificate.pem"] = (entry[1], entry[0])
    if (entry := settings.get("ssl.key.password")) and (keystore_type == "PEM" or "ssl.keystore.key" in settings):
        client["ssl.key.password"] = (entry[1], entry[0])

    truststore_type = settings.get("ssl.truststore.type", ("", "JKS"))[1]
    if entry := settings.get("ssl.truststore.location"):
        if truststore_type == "PEM":
            client["ssl.ca.location"] = (entry[1], entry[0])
        else:
            problems.append(f"{entry[0]}: a {truststore_type} truststore cannot be read by librdkafka; export its "
                            "CA certificates to a PEM file and set ssl.truststore.type = PEM")
    if entry := settings.get("ssl.truststore.certificates"):
        client["ssl.ca.pem"] = (entry[1], entry[0])
    if entry := settings.get("ssl.endpoint.identification.algorithm"):
        algorithm = entry[1].lower()
        if algorithm in ("", "https"):
            client["ssl.endpoint.identification.algorithm"] = (algorithm or "none", entry[0])
        else:
            problems.append(f"{entry[0]}: must be https or empty (no hostname check), got {entry[1]!r}")



def client_config(alias: str, settings: dict[str, tuple[str, Any]], problems: list[str]) -> dict[str, str]:
    """librdkafka settings for one cluster from its Java client settings (`settings`: name -> (key, value))."""
    client: _Client = {}
    for name in ("security.protocol", "sasl.mechanism", "sasl.kerberos.service.name", "client.id"):
        if name in settings:
            key, value = settings[name]
            client[name] = (value, key)
    if "sasl.jaas.config" in settings:
        _jaas_credentials(alias, settings, client, problems)
    _tls_settings(settings, client, problems)
    return {name: value for name, (value, _key) in client.items()}
