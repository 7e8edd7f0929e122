"""`${provider:path:key}` references in a Kafka config, resolved as Kafka's config providers resolve them.

A file declares its providers (`config.providers = file, env`, `config.providers.file.class = ...`,
optional `config.providers.<name>.param.<p>`), then refers to `${<name>:<path>:<key>}` or `${<name>:<key>}`
in any value (Kafka's ConfigTransformer pattern). This engine runs Kafka's three built-in providers:

- FileConfigProvider: `path` is a .properties file (read as UTF-8), `key` one of its entries;
- DirectoryConfigProvider: `path` is a directory, `key` the name of a regular file in it, whose whole
  content (UTF-8) is the value;
- EnvVarConfigProvider: no path, `key` an environment variable; `allowlist.pattern` limits the names (a
  Java regex run on RE2, as every user regex here: linear time, look-around and back-references refused).

`allowed.paths` (file and directory) limits the paths as Kafka's AllowedPaths does. Where Kafka would leave
a reference unresolved (a missing key, file or variable) the engine stops with an error naming the setting
and the reference, never a resolved value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mirror_engine.mm2.properties import PropertiesError, parse_properties_text
from mirror_engine.plan import RegexError, check_pattern, compile_any

__all__ = ["REFERENCE", "ConfigProviderError", "ConfigProviders"]

_PACKAGE = "org.apache.kafka.common.config.provider."
_KINDS = {_PACKAGE + "FileConfigProvider": "file", _PACKAGE + "DirectoryConfigProvider": "directory",
          _PACKAGE + "EnvVarConfigProvider": "env"}
REFERENCE = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""Kafka's ConfigTransformer.DEFAULT_PATTERN: provider, optional path, key."""
_ENGINE_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfigProviderError(ValueError):
    """A reference that cannot be resolved; the message names the setting and the reference."""


@dataclass(frozen=True)
class _Provider:
    name: str
    kind: str  # "file", "directory" or "env"
    params: dict[str, str] = field(default_factory=dict)


def _allowed(path: str, allowed_paths: str | None) -> bool:
    """Kafka's AllowedPaths: with a list set, the normalised path must start with one of its entries."""
    if not allowed_paths:
        return True
    normalised = Path(os.path.normpath(path))
    return any(normalised.is_relative_to(os.path.normpath(entry)) for entry in allowed_paths.split(","))


def _allowed_paths_problems(key: str, allowed_paths: str | None) -> list[str]:
    """AllowedPaths refuses (and MM2 fails on) an entry that is not absolute or does not exist."""
    problems = []
    for entry in allowed_paths.split(",") if allowed_paths else []:
        normalised = os.path.normpath(entry)
        if not os.path.isabs(normalised):
            problems.append(f"{key}: path {normalised} is not absolute")
        elif not os.path.exists(normalised):
            problems.append(f"{key}: path {normalised} does not exist")
    return problems


class ConfigProviders:
    """The providers a file declares, and the environment EnvVarConfigProvider reads."""

    def __init__(self, providers: dict[str, _Provider], environ: Mapping[str, str]) -> None:
        self._providers = providers
        self._environ = environ

    @classmethod
    def from_entries(cls, entries: Mapping[str, str],
                     environ: Mapping[str, str] | None = None) -> tuple[ConfigProviders, list[str]]:
        """The declared providers of a config, and a problem line (starting with its key) per unusable one."""
        environ = os.environ if environ is None else environ
        problems: list[str] = []
        providers: dict[str, _Provider] = {}
        names = [name.strip() for name in entries.get("config.providers", "").split(",") if name.strip()]
        supported = ", ".join(_KINDS)
        for name in names:
            key = f"config.providers.{name}.class"
            class_name = entries.get(key, "").strip()
            if not class_name:
                problems.append(f"{key}: required: config.providers lists '{name}'; set its class, one of "
                                f"{supported}")
                continue
            kind = _KINDS.get(class_name)
            if kind is None:
                problems.append(f"{key}: config provider class {class_name} cannot be run by this engine; "
                                f"supported: {supported}")
                continue
            prefix = f"config.providers.{name}.param."
            params = {k[len(prefix):]: v.strip() for k, v in entries.items() if k.startswith(prefix)}
            problems.extend(_allowed_paths_problems(prefix + "allowed.paths", params.get("allowed.paths")))
            if kind == "env" and "allowlist.pattern" in params:
                try:  # a user regex like the plan's: RE2, linear time, or refused here by name
                    check_pattern(params["allowlist.pattern"])
                except RegexError as error:
                    problems.append(f"{prefix}allowlist.pattern: {error}")
                    continue
            providers[name] = _Provider(name, kind, params)
        return cls(providers, environ), problems

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._providers)

    def resolve(self, key: str, value: str, *, defer_env: bool = False) -> str:
        """`value` with every reference replaced; `defer_env` keeps environment references as the plan's
        `${NAME}`, resolved when the engine connects, so the secret never sits in the plan."""

        def replace(match: re.Match[str]) -> str:
            name, path, variable = match.group(1), match.group(3) or "", match.group(4)
            provider = self._providers.get(name)
            if provider is None:
                declared = ", ".join(self._providers) or "none"
                raise ConfigProviderError(
                    f"{key}: reference {match.group(0)} names config provider '{name}', which config.providers "
                    f"does not declare (declared: {declared}); MM2 would pass the text on unresolved")
            if provider.kind == "env":
                return self._environment(key, match.group(0), provider, path, variable, defer_env)
            return self._read(key, match.group(0), provider, path, variable)

        return REFERENCE.sub(replace, value)

    def _environment(self, key: str, reference: str, provider: _Provider, path: str, variable: str,
                     defer: bool) -> str:
        if path:
            raise ConfigProviderError(f"{key}: reference {reference}: EnvVarConfigProvider takes no path; "
                                      f"write ${{{provider.name}:{variable}}}")
        pattern = provider.params.get("allowlist.pattern")
        allowlist = compile_any([pattern]) if pattern is not None else None
        if allowlist is not None and allowlist.fullmatch(variable) is None:
            raise ConfigProviderError(f"{key}: reference {reference}: variable {variable} does not match "
                                      f"config.providers.{provider.name}.param.allowlist.pattern")
        if variable not in self._environ:
            raise ConfigProviderError(f"{key}: reference {reference}: environment variable {variable} is not set")
        if defer and _ENGINE_VARIABLE.fullmatch(variable):
            return "${" + variable + "}"
        return self._environ[variable]

    def _read(self, key: str, reference: str, provider: _Provider, path: str, variable: str) -> str:
        if not path:
            raise ConfigProviderError(f"{key}: reference {reference}: a {provider.kind} provider needs a path, "
                                      f"${{{provider.name}:<path>:{variable}}}")
        if not _allowed(path, provider.params.get("allowed.paths")):
            raise ConfigProviderError(f"{key}: reference {reference}: path {path} is outside "
                                      f"config.providers.{provider.name}.param.allowed.paths")
        if provider.kind == "directory":
            target = Path(path) / variable
            if not Path(path).is_dir() or not target.is_file():
                raise ConfigProviderError(f"{key}: reference {reference}: no file {variable} in directory {path}")
            try:
                return target.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigProviderError(f"{key}: reference {reference}: cannot read {target}: "
                                          f"{type(error).__name__}") from None
        try:
            entries = parse_properties_text(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, PropertiesError) as error:
            raise ConfigProviderError(f"{key}: reference {reference}: cannot read properties file {path}: "
                                      f"{type(error).__name__}") from None
        if variable not in entries:
            raise ConfigProviderError(f"{key}: reference {reference}: properties file {path} has no key {variable}")
        return entries[variable]
