"""Each key of a MirrorMaker 2 file read as MM2 reads it: its role (`settings.classify_key`) and, for a key MM2
uses, its value with config provider references resolved and parsed as MM2's ConfigDef parses it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mirror_engine.mm2.config_providers import ConfigProviderError, ConfigProviders
from mirror_engine.mm2.settings import MM2_PACKAGE, SECURITY, KeyInfo, Setting, classify_key

_CONVERTER_PACKAGE = "org.apache.kafka.connect.converters."
# Client settings whose values go into the plan: environment references there stay references.
PLAN_CLIENT_SETTINGS = frozenset({*SECURITY, "bootstrap.servers", "client.id"})
_UNDECLARED_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?")


def _convert(key: str, value: str, spec: Setting, problems: list[str], shown: str | None = None) -> Any:
    """The value parsed as MM2's ConfigDef parses it, or None after adding a problem.

    `shown` replaces the value in messages: a value read from a config provider may be a secret.
    """
    got = shown if shown is not None else repr(value)
    if spec.kind == "bool":
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        problems.append(f"{key}: must be true or false, got {got}")
    elif spec.kind == "int":
        if not _INTEGER.fullmatch(value):
            problems.append(f"{key}: must be an integer, got {got}")
        elif not spec.low <= int(value) <= spec.high:
            problems.append(f"{key}: must be from {spec.low} to {spec.high}, got {got}")
        else:
            return int(value)
    elif spec.kind == "double":
        if _DOUBLE.fullmatch(value):
            return value
        problems.append(f"{key}: must be a number, got {got}")
    elif spec.kind == "list":
        return split_list(value)
    elif spec.kind == "choice":
        for choice in spec.choices:
            if value.lower() == choice.lower():
                return choice
        problems.append(f"{key}: must be one of {', '.join(spec.choices)}, got {got}")
    elif spec.kind == "class":
        package = _CONVERTER_PACKAGE if spec.choices == ("ByteArrayConverter",) else MM2_PACKAGE
        for simple in spec.choices:
            if value == package + simple:
                return simple
            if value == simple:  # Java's Class.forName finds no class by its simple name: MM2 fails to start
                problems.append(f"{key}: MM2 cannot load a class by its simple name; write {package + simple}")
                return None
        allowed = " or ".join(package + simple for simple in spec.choices)
        problems.append(f"{key}: class {got} is not supported by this engine, which runs {allowed}")
    else:
        return value
    return None


def _resolve(key: str, name: str, value: str, providers: ConfigProviders, environ: Mapping[str, str],
             problems: list[str], warnings: list[str]) -> str | None:
    """The value with its config provider references resolved (environment ones kept in client settings)."""
    defer = name in PLAN_CLIENT_SETTINGS
    if "env" not in providers.names and _UNDECLARED_ENV.search(value):
        # MM2 resolves ${env:...} only with an EnvVarConfigProvider declared as `env`; earlier versions of this
        # reader took it without one, so it is still read, with a warning.
        warnings.append(f"{key}: MM2 resolves ${{env:...}} only with config.providers = env and "
                        "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider; "
                        "the engine reads the environment variable itself")

        def environment(match: re.Match[str]) -> str:
            if defer:
                return "${" + match.group(1) + "}"
            if match.group(1) not in environ:
                raise ConfigProviderError(f"{key}: reference {match.group(0)}: environment variable "
                                          f"{match.group(1)} is not set")
            return environ[match.group(1)]

        try:
            value = _UNDECLARED_ENV.sub(environment, value)
        except ConfigProviderError as error:
            problems.append(str(error))
            return None
    try:
        return providers.resolve(key, value, defer_env=defer)
    except ConfigProviderError as error:
        problems.append(str(error))
        return None


def read_keys(entries: dict[str, str], clusters: list[str], providers: ConfigProviders,
               environ: Mapping[str, str], problems: list[str],
               warnings: list[str]) -> tuple[dict[str, KeyInfo], dict[str, Any]]:
    """Every key's role and, for keys MM2 uses, its resolved and parsed value."""
    keys: dict[str, KeyInfo] = {}
    values: dict[str, Any] = {}
    for key, raw in entries.items():
        info = classify_key(key, clusters)
        if isinstance(info, str):
            problems.append(info)
            continue
        keys[key] = info
        if info.role != "used":
            warnings.append(f"{key}: {info.note}")
        if info.spec is None:
            continue
        value: str | None = raw.strip()  # MM2's ConfigDef trims every value it parses
        shown = None
        if info.role == "used" and "${" in raw:
            value = _resolve(key, info.name, raw, providers, environ, problems, warnings)
            value = None if value is None else value.strip()
            shown = f"the value {raw.strip()!r} resolves to"
        if value is None:
            continue
        converted = _convert(key, value, info.spec, problems, shown)
        if converted is not None and info.role == "used":
            values[key] = converted
    return keys, values
