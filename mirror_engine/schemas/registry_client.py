"""A client of a schema registry's Confluent-compatible REST API (`/subjects`, `/schemas/ids`, `/config`,
`/mode`), which Confluent Schema Registry, Karapace, Apicurio (`/apis/ccompat/v7`) and Redpanda serve, and of
Apicurio's own admin export/import, which keeps ids across instances.

Standard library only (urllib, imported at the first request: an engine without registries never loads it,
nor ssl). The registry's TLS (a CA, a client certificate for mTLS) and its login (basic, a bearer token, or
tokens fetched with client credentials) are read into the clusters' security model (`read_registry_security`)
from the settings Confluent's clients take; a credential never appears in an error, which names the registry's
address and the request's path only.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mirror_engine.security import RegistryLogins, SecurityError, read_registry_security, registry_ssl_context

if TYPE_CHECKING:
    import ssl

__all__ = ["Reference", "RegistryClient", "RegistryError", "Schema", "SubjectVersion"]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# Confluent's error codes that mean "no such thing" (subject, version, schema, subject's config).
NOT_FOUND = 404
SUBJECTS_LIMIT = 10_000_000


class RegistryError(Exception):
    """A request the registry refused or did not answer: `status` (0: unreachable) and its `error_code`."""

    def __init__(self, message: str, status: int = 0, error_code: int = 0) -> None:
        super().__init__(message)
        self.status, self.error_code = status, error_code


@dataclass(frozen=True)
class Reference:
    """A schema's reference to another: the name it is imported by, and the subject and version holding it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """A schema as the registry returns it: its text, its type (AVRO, JSON, PROTOBUF) and references."""

    text: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()

    def request(self, references: tuple[Reference, ...] | None = None) -> dict[str, Any]:
        """The body registering it, with `references` (the target's versions) instead of its own if given."""
        body: dict[str, Any] = {"schema": self.text}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        chosen = self.references if references is None else references
        if chosen:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in chosen]
        return body

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> Schema:
        return cls(str(answer["schema"]), str(answer.get("schemaType") or "AVRO"),
                   tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                         for r in answer.get("references") or ()))


@dataclass(frozen=True)
class SubjectVersion:
    subject: str
    version: int
    schema_id: int
    schema: Schema
    deleted: bool = False


@dataclass
class RegistryClient:
    """One registry (`name`: which side, for sentences): `settings` as the plan renders them (`url`, and the client
    settings Confluent's clients take, `REGISTRY_CLIENT_KEYS`). SecurityError, naming the key, for settings that
    cannot be used."""

    settings: dict[str, str]
    timeout_s: float = 30.0
    name: str = "registry"
    _context: ssl.SSLContext | None = field(default=None, init=False, repr=False)
    _logins: RegistryLogins = field(init=False, repr=False)

    @property
    def url(self) -> str:
        return self.settings["url"].rstrip("/")

    def __post_init__(self) -> None:
        security = read_registry_security(self.name, self.settings)
        self._logins = RegistryLogins(security, self.timeout_s)
        if self.url.startswith("https://"):
            self._context = registry_ssl_context(security)

    # The Confluent-compatible API.
    def subjects(self, deleted: bool = False) -> list[str]:
        """Every subject. With a `limit` far above any registry's size: Apicurio lists 1,000 subjects unless asked
        for more (Confluent's and others' registries list all and ignore it, or honour it)."""
        query = f"?limit={SUBJECTS_LIMIT}" + ("&deleted=true" if deleted else "")
        return [str(s) for s in self._call("GET", "/subjects" + query)]

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The subject's versions in order (soft-deleted ones too with `deleted`); [] for no such subject."""
        answer = self._call("GET", f"/subjects/{_quoted(subject)}/versions" + ("?deleted=true" if deleted else ""),
                            missing=[])
        return sorted(int(v) for v in answer)

    def version(self, subject: str, version: int, deleted: bool = False) -> SubjectVersion:
        answer = self._call("GET", f"/subjects/{_quoted(subject)}/versions/{version}"
                            + ("?deleted=true" if deleted else ""))
        return SubjectVersion(subject, int(answer["version"]), int(answer["id"]), Schema.from_answer(answer))

    def schema(self, schema_id: int) -> Schema | None:
        """The schema of an id, or None when the registry knows no such id."""
        answer = self._call("GET", f"/schemas/ids/{schema_id}", missing=None)
        return None if answer is None else Schema.from_answer(answer)

    def subject_versions_of(self, schema_id: int) -> list[tuple[str, int]]:
        """Every (subject, version) registered with the id."""
        answer = self._call("GET", f"/schemas/ids/{schema_id}/versions", missing=[])
        return [(str(a["subject"]), int(a["version"])) for a in answer]

    def lookup(self, subject: str, schema: Schema,
               references: tuple[Reference, ...] | None = None) -> tuple[int, int] | None:
        """(id, version) of the schema under the subject, or None when the subject does not hold it."""
        answer = self._call("POST", f"/subjects/{_quoted(subject)}", schema.request(references), missing=None)
        return None if answer is None else (int(answer["id"]), int(answer["version"]))

    def register(self, subject: str, schema: Schema, references: tuple[Reference, ...] | None = None,
                 schema_id: int | None = None, version: int | None = None) -> int:
        """Register the schema under the subject (with an explicit id and version in IMPORT mode); its id."""
        body = schema.request(references)
        if schema_id is not None:
            body["id"] = schema_id
        if version is not None:
            body["version"] = version
        return int(self._call("POST", f"/subjects/{_quoted(subject)}/versions", body)["id"])

    def compatible_with_latest(self, subject: str, schema: Schema, references: tuple[Reference, ...]) -> bool:
        """Whether the subject's compatibility level lets the schema follow its latest version."""
        answer = self._call("POST", f"/compatibility/subjects/{_quoted(subject)}/versions/latest",
                            schema.request(references))
        return bool(answer.get("is_compatible", True))

    def soft_delete(self, subject: str, version: int) -> None:
        self._call("DELETE", f"/subjects/{_quoted(subject)}/versions/{version}")

    def compatibility(self, subject: str | None = None) -> str | None:
        """The global compatibility level, or a subject's own (None where it has none)."""
        path = "/config" if subject is None else f"/config/{_quoted(subject)}"
        answer = self._call("GET", path, missing=None)
        if answer is None:
            return None
        return str(answer.get("compatibilityLevel") or answer.get("compatibility") or "") or None

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        path = "/config" if subject is None else f"/config/{_quoted(subject)}"
        self._call("PUT", path, {"compatibility": level})

    def mode(self) -> str:
        return str(self._call("GET", "/mode").get("mode", ""))

    def set_mode(self, mode: str) -> None:
        self._call("PUT", "/mode", {"mode": mode})

    # Apicurio's own API, beside its Confluent-compatible one.
    @property
    def apicurio_base(self) -> str | None:
        """Apicurio's root for a `.../apis/ccompat/vN` address, else None."""
        marker = "/apis/ccompat/"
        return self.url.split(marker)[0] if marker in self.url else None

    def is_apicurio(self) -> bool:
        base = self.apicurio_base
        if base is None:
            return False
        try:
            self._request("GET", f"{base}/apis/registry/v3/system/info")
        except RegistryError:
            return False
        return True

    def export_all(self) -> bytes:
        """Apicurio's admin export: every artifact, version and id, as a zip."""
        return self._request("GET", f"{self.apicurio_base}/apis/registry/v3/admin/export", accept="application/zip")

    def import_all(self, archive: bytes) -> None:
        """Apicurio's admin import of an export, into an empty registry: ids kept."""
        self._request("POST", f"{self.apicurio_base}/apis/registry/v3/admin/import", archive,
                      content_type="application/zip")

    # The transport.
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None, missing: Any = ...) -> Any:
        try:
            data = self._request(method, self.url + path, json.dumps(body).encode() if body is not None else None,
                                 content_type=_CONTENT_TYPE)
        except RegistryError as error:
            if error.status == NOT_FOUND and missing is not ...:
                return missing
            raise
        return json.loads(data) if data else None

    def _request(self, method: str, url: str, data: bytes | None = None, content_type: str = _CONTENT_TYPE,
                 accept: str = "application/json") -> bytes:
        import urllib.error
        import urllib.request

        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            authorization = self._logins.header()
        except SecurityError as error:  # its token endpoint refused or did not answer: said as the registry's
            raise RegistryError(str(error)) from None
        if authorization:
            headers["Authorization"] = authorization
        request = urllib.request.Request(url, data, headers, method=method)
        where = f"{method} {url.split('?')[0]}"
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self._context) as answer:
                return bytes(answer.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                detail = json.loads(text)
                message, code = str(detail.get("message", text)), int(detail.get("error_code", 0))
            except (ValueError, AttributeError):
                message, code = text[:300], 0
            raise RegistryError(f"the schema registry refused {where}: {error.code} {message}", error.code,
                                code) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise RegistryError(f"the schema registry at {self.url} did not answer {where}: {reason}") from None


def _quoted(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")
