"""Kafka principals as a plan names them, and the rule that a principal map never widens access.

An ACL's principal is `Type:name`. The plan's `sync.principal_map` renames principals between the
clusters; every ACL created on the target goes through it. A map entry is therefore a grant of
rights on the target, and a malformed or wildcard entry would grant them to the wrong principals
(or to every one): such entries are refused when the plan loads, naming the entry.
"""

from __future__ import annotations

__all__ = ["MAX_PRINCIPAL_MAP_ENTRIES", "PRINCIPAL_TYPES", "WILDCARD_NAME", "PrincipalError", "check_principal_map",
           "map_principal", "parse_principal"]

# The principal types Kafka's ACLs name (KafkaPrincipal.USER_TYPE, and Group for group-based principals).
PRINCIPAL_TYPES = ("User", "Group")
WILDCARD_NAME = "*"  # `User:*`: every user
MAX_PRINCIPAL_MAP_ENTRIES = 1000


class PrincipalError(ValueError):
    """A principal or a map entry a plan may not use; the message says why."""


def parse_principal(text: str) -> tuple[str, str]:
    """(type, name) of a principal written `Type:name`; PrincipalError says what is wrong otherwise."""
    principal_type, colon, name = text.partition(":")
    if not colon:
        raise PrincipalError(f"'{text}' is not a principal: write it as Type:name, e.g. User:alice")
    if principal_type not in PRINCIPAL_TYPES:
        raise PrincipalError(f"'{text}' has the principal type '{principal_type}'; ACLs name "
                             f"{' or '.join(f'{t}:name' for t in PRINCIPAL_TYPES)}")
    if not name:
        raise PrincipalError(f"'{text}' has an empty name")
    if ":" in name:
        # Kafka would read everything after the first ':' as one name: a list or a typo, never one principal.
        raise PrincipalError(f"'{text}' has a ':' in the name: an entry names one principal, Type:name")
    if name != name.strip() or any(not char.isprintable() for char in name):
        raise PrincipalError(f"'{text}' has a space or a control character around or in the name")
    if WILDCARD_NAME in name and name != WILDCARD_NAME:
        raise PrincipalError(f"'{text}': '*' is a wildcard only as the whole name ({principal_type}:*); "
                             "Kafka has no principal patterns")
    return principal_type, name


def _check_entry(source: str, target: str) -> None:
    parse_principal(source)
    target_type, target_name = parse_principal(target)
    if target_name == WILDCARD_NAME and parse_principal(source)[1] != WILDCARD_NAME:
        raise PrincipalError(f"maps one principal to the wildcard {target}, which would give every "
                             f"{target_type.lower()} of the target its rights; map it to one principal")


def check_principal_map(mapping: dict[str, str]) -> None:
    """Raise PrincipalError naming the first entry that does not map one principal to one principal, or that
    widens a principal's rights to everyone."""
    if len(mapping) > MAX_PRINCIPAL_MAP_ENTRIES:
        raise PrincipalError(f"{len(mapping)} entries; a map may hold at most {MAX_PRINCIPAL_MAP_ENTRIES}")
    for source, target in mapping.items():
        try:
            _check_entry(source, target)
        except PrincipalError as error:
            raise PrincipalError(f"entry '{source}' -> '{target}': {error}") from None


def map_principal(principal: str, mapping: dict[str, str]) -> str:
    """The target's principal for a source ACL's principal. Checked again here, not only at plan load, because
    this is where a wrong entry would become a grant."""
    mapped = mapping.get(principal, principal)
    if mapped != principal:
        _check_entry(principal, mapped)
    return mapped
