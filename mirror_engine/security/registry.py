"""A schema registry's connection in the clusters' security model: its TLS read by the same reader, with the same
checks and sentences, as a cluster's (`ssl.*`, `unsafe.skip.hostname.verification`), and its login as Confluent's
registry clients take it: `basic.auth.user.info`, a static `bearer.auth.token`, or tokens fetched with client
credentials (`bearer.auth.credentials.source: OAUTHBEARER`), the clusters' `OidcLogin`.

Rendered for Python's `ssl` and `urllib` (`registry_ssl_context`, `RegistryLogins`), both loaded only when a
registry is used. A secret is a field of the model, never in an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirror_engine.security.keystores import keystore_to_pem, write_private
from mirror_engine.security.model import OidcLogin, SecurityError, Tls
from mirror_engine.security.reader import TLS_SETTINGS, tls_of

if TYPE_CHECKING:
    import ssl

__all__ = ["REGISTRY_CLIENT_KEYS", "BasicLogin", "RegistryLogins", "RegistrySecurity", "StaticToken",
           "read_registry_security", "registry_ssl_context"]

_OIDC_KEYS = ("bearer.auth.issuer.endpoint.url", "bearer.auth.client.id", "bearer.auth.client.secret")
_LOGIN_KEYS = ("basic.auth.user.info", "bearer.auth.token", "bearer.auth.credentials.source", *_OIDC_KEYS,
               "bearer.auth.scope")
REGISTRY_CLIENT_KEYS = frozenset({*TLS_SETTINGS, *_LOGIN_KEYS})
TOKEN_MARGIN_S = 30.0  # a fetched token is fetched again this long before it expires


@dataclass(frozen=True)
class BasicLogin:
    user_info: str = field(repr=False)  # "user:password"


@dataclass(frozen=True)
class StaticToken:
    token: str = field(repr=False)


RegistryLogin = BasicLogin | StaticToken | OidcLogin


@dataclass(frozen=True)
class RegistrySecurity:
    """How a client reaches one registry: its address, its TLS (https only) and its login."""

    registry: str
    url: str
    tls: Tls | None = None
    login: RegistryLogin | None = None

    def secrets(self) -> list[str]:
        values: list[str | None] = []
        if self.tls:
            values += [self.tls.key_pem, self.tls.key_password, self.tls.keystore_password]
        if isinstance(self.login, BasicLogin):
            values.append(self.login.user_info)
        elif isinstance(self.login, StaticToken):
            values.append(self.login.token)
        elif isinstance(self.login, OidcLogin):
            values.append(self.login.client_secret)
        return [value for value in values if value]


def _login(config: dict[str, str], problems: list[str]) -> RegistryLogin | None:
    source = (config.get("bearer.auth.credentials.source") or "").strip().upper()
    given = [key for key in ("basic.auth.user.info", "bearer.auth.token") if config.get(key)]
    if source == "OAUTHBEARER":
        given += [key for key in _OIDC_KEYS if config.get(key)][:1]
    if len(given) > 1:
        problems.append(f"{given[1]}: given together with {given[0]}; a registry client logs in one way")
        return None
    if source not in ("", "STATIC_TOKEN", "USER_INFO", "OAUTHBEARER"):
        problems.append(f"bearer.auth.credentials.source: {source!r} is not one of STATIC_TOKEN, OAUTHBEARER")
        return None
    if source == "OAUTHBEARER":
        missing = [key for key in _OIDC_KEYS if not config.get(key)]
        if missing:
            problems.append(f"{missing[0]}: required by bearer.auth.credentials.source: OAUTHBEARER (client "
                            f"credentials); write {', '.join(missing)}")
            return None
        return OidcLogin(config["bearer.auth.issuer.endpoint.url"], config["bearer.auth.client.id"],
                         config["bearer.auth.client.secret"], config.get("bearer.auth.scope") or None)
    stray = [key for key in (*_OIDC_KEYS, "bearer.auth.scope") if config.get(key)]
    if stray:
        problems.append(f"{stray[0]}: only for bearer.auth.credentials.source: OAUTHBEARER; add it or remove this")
    if config.get("basic.auth.user.info"):
        if ":" not in config["basic.auth.user.info"]:
            problems.append("basic.auth.user.info: write it as user:password")
        return BasicLogin(config["basic.auth.user.info"])
    if config.get("bearer.auth.token"):
        return StaticToken(config["bearer.auth.token"])
    return None


def read_registry_security(registry: str, settings: Mapping[str, Any]) -> RegistrySecurity:
    """The model of a registry's settings (`url` and Confluent's client keys); SecurityError lists every problem,
    each naming its key."""
    config = {key: str(value) for key, value in settings.items()}
    known = ", ".join(sorted(REGISTRY_CLIENT_KEYS))
    problems = [f"{key}: not a registry client setting; a registry client takes {known}"
                for key in sorted(set(config) - REGISTRY_CLIENT_KEYS - {"url"})]
    url = config.get("url", "").rstrip("/")
    tls = tls_of(config, problems, url.startswith("https://"), f"the url {url!r} is not https://")
    login = _login(config, problems)
    if problems:
        raise SecurityError(registry, problems)
    return RegistrySecurity(registry, url, tls, login)


def registry_ssl_context(security: RegistrySecurity) -> ssl.SSLContext:
    """Python's TLS context for a registry: its CA (the system's when none is given), its client certificate (PEM
    files, inline PEM, or a PKCS12 keystore converted to PEM files readable by the owner alone), host names
    checked unless the model says otherwise."""
    import ssl

    tls = security.tls or Tls()
    context = ssl.create_default_context(cafile=tls.ca_location or None, cadata=tls.ca_pem or None)
    if not tls.verify_hostname:
        context.check_hostname = False
    name = f"registry-{security.registry.replace('.', '-')}"
    certificate, key, password = tls.certificate_location, tls.key_location, tls.key_password
    if tls.certificate_pem:
        certificate = str(write_private(f"{name}-chain", tls.certificate_pem.encode()))
    if tls.key_pem:
        key = str(write_private(f"{name}-key", tls.key_pem.encode()))
    if tls.keystore_location:
        material = keystore_to_pem(tls.keystore_location, "PKCS12", tls.keystore_password, tls.key_password, name)
        certificate, key = str(material.certificate_location), str(material.key_location)
        password = material.key_password
    if certificate:
        context.load_cert_chain(certificate, key or None, password or None)
    return context


class RegistryLogins:
    """The `Authorization` header of a registry's requests: fixed for a user or a static token; for client
    credentials a token fetched from the token endpoint, kept until shortly before it expires."""

    def __init__(self, security: RegistrySecurity, timeout_s: float = 30.0) -> None:
        self.security = security
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires = 0.0

    def header(self) -> str | None:
        login = self.security.login
        if isinstance(login, BasicLogin):
            import base64

            return "Basic " + base64.b64encode(login.user_info.encode()).decode()
        if isinstance(login, StaticToken):
            return f"Bearer {login.token}"
        if isinstance(login, OidcLogin):
            with self._lock:
                if self._token is None or time.monotonic() > self._expires:
                    self._token, lifetime = self._fetch(login)
                    self._expires = time.monotonic() + max(0.0, lifetime - TOKEN_MARGIN_S)
                return f"Bearer {self._token}"
        return None

    def _fetch(self, login: OidcLogin) -> tuple[str, float]:
        import base64
        import json
        import urllib.error
        import urllib.parse
        import urllib.request

        form = {"grant_type": "client_credentials", **({"scope": login.scope} if login.scope else {})}
        credentials = base64.b64encode(f"{login.client_id}:{login.client_secret}".encode()).decode()
        request = urllib.request.Request(login.token_url, urllib.parse.urlencode(form).encode(), {
            "Authorization": f"Basic {credentials}", "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json"}, method="POST")
        context = registry_ssl_context(self.security) if login.token_url.startswith("https://") else None
        where = f"the token endpoint {login.token_url} of registry '{self.security.registry}'"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=context) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            raise SecurityError(self.security.registry, [
                f"bearer.auth.client.id: {where} refused the client credentials: {error.code}"]) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise SecurityError(self.security.registry, [
                f"bearer.auth.issuer.endpoint.url: {where} did not answer: {reason}"]) from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not token:
            raise SecurityError(self.security.registry, [
                f"bearer.auth.issuer.endpoint.url: {where} answered without an access_token"])
        return str(token), float(body.get("expires_in") or 300)
