"""Java key and trust stores turned into files librdkafka reads: PEM key, certificate chain and CA certificates.

librdkafka reads PEM files and PKCS#12 keystores, never JKS, and no PKCS#12 truststore. A JKS store is first
copied to PKCS#12 by the JDK's `keytool -importkeystore` (the only maintained JKS reader at hand: pyjks has had
no release since 2020); PKCS#12 is read with `cryptography`. What comes out is written to one private
directory per process:

- the directory is created by `mkdtemp` (mode 0700) on first use, every file in it with mode 0600;
- a private key is written encrypted (PKCS#8, the best encryption `cryptography` offers) with the password
  Java would use for it (`ssl.key.password`, else the keystore password), so key material never lies on disk
  in clear; keytool's intermediate PKCS#12 file, under a random password, is deleted as soon as it is read;
- the directory is removed at interpreter exit (`atexit`: a normal return, `sys.exit`, an uncaught exception,
  and SIGTERM where the process handles it by returning, as the engine does). After kill -9 nothing runs: the
  directory stays, still 0700, and the next process that converts a store removes such directories left by
  processes of the same user that are no longer alive (its name carries the pid).

Passwords reach keytool through its environment (`-storepass:env`), never its command line, and no message
here shows a password or key material: keytool's own error line is passed on with any password blanked.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

__all__ = ["KeyMaterial", "KeystoreError", "keystore_to_pem", "private_dir", "remove_private_dir",
           "truststore_to_pem", "write_private"]

_PREFIX = "mirror-engine-keys-"
_STALE = re.compile(re.escape(_PREFIX) + r"([0-9]+)-")
_KEYTOOL_TIMEOUT_S = 60.0
_lock = threading.Lock()
_dir: Path | None = None


class KeystoreError(ValueError):
    """A store could not be read or converted; the message names the file, never a password."""


@dataclass(frozen=True)
class KeyMaterial:
    """A keystore's private key (PEM, encrypted with `key_password` when it is not empty) and certificate chain."""

    key_location: Path
    certificate_location: Path
    key_password: str


def _remove_stale_dirs(root: Path) -> None:
    """Remove this user's key directories whose process is gone (left by a kill -9)."""
    for entry in root.glob(_PREFIX + "*"):
        match = _STALE.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue  # alive under another user, or vanished meanwhile


def private_dir() -> Path:
    """This process's directory for converted stores (mode 0700), created on first use, removed at exit."""
    global _dir
    with _lock:
        if _dir is None or not _dir.is_dir():
            root = Path(tempfile.gettempdir())
            _remove_stale_dirs(root)
            _dir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root))
            os.chmod(_dir, 0o700)
            atexit.register(remove_private_dir)
        return _dir


def remove_private_dir() -> None:
    """Remove the converted stores of this process (also called at exit); a later conversion makes a new one."""
    global _dir
    with _lock:
        if _dir is not None:
            shutil.rmtree(_dir, ignore_errors=True)
            _dir = None


def _write_private(name: str, data: bytes) -> Path:
    handle, path = tempfile.mkstemp(prefix=f"{name}-", suffix=".pem", dir=private_dir())  # mode 0600
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)
    return Path(path)


def _blank(text: str, *passwords: str | None) -> str:
    for password in passwords:
        if password:
            text = text.replace(password, "***")
    return text


def _keytool_error(location: Path, result: subprocess.CompletedProcess[str], *passwords: str | None) -> KeystoreError:
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines() if "error" in line.lower()]
    detail = _blank(lines[-1], *passwords) if lines else f"exit status {result.returncode}"
    if "Cannot recover key" in detail or "Get Key failed" in detail:
        detail = "wrong key password (ssl.key.password, or ssl.keystore.password when that is not set)"
    elif "password was incorrect" in detail or "tampered" in detail:
        detail = "wrong password, or not a JKS store"
    return KeystoreError(f"keytool cannot read {location}: {detail}")


def _keytool(arguments: list[str], passwords: dict[str, str], location: Path) -> subprocess.CompletedProcess[str]:
    keytool = shutil.which("keytool")
    if keytool is None:
        raise KeystoreError(f"converting the JKS store {location} needs the JDK's keytool on PATH (install a JDK), "
                            "or convert it to PKCS12 or PEM yourself")
    environment = {**os.environ, **passwords}
    # A JKS store may be read without its password (integrity unchecked, as Java does): keytool then asks for
    # it on stdin, and an empty line answers.
    return subprocess.run([keytool, *arguments], input="\n", capture_output=True, text=True, env=environment,
                          timeout=_KEYTOOL_TIMEOUT_S, check=False)


def _readable(location: Path) -> None:
    try:
        is_file = location.is_file()
    except OSError as error:  # e.g. a name longer than the file system allows
        raise KeystoreError(f"cannot read {location}: {error.strerror or error}") from None
    if not is_file:
        raise KeystoreError(f"cannot read {location}: no such file")
    if not os.access(location, os.R_OK):
        raise KeystoreError(f"cannot read {location}: permission denied")


def _jks_private_key_aliases(location: Path, store_password: str | None) -> list[str]:
    arguments = ["-list", "-v", "-keystore", str(location), "-storetype", "JKS"]
    passwords = {}
    if store_password:
        arguments.append("-storepass:env")
        arguments.append("MIRROR_ENGINE_STOREPASS")
        passwords["MIRROR_ENGINE_STOREPASS"] = store_password
    result = _keytool(arguments, passwords, location)
    if result.returncode != 0:
        raise _keytool_error(location, result, store_password)
    aliases, alias = [], None
    for line in result.stdout.splitlines():
        if line.startswith("Alias name: "):
            alias = line.removeprefix("Alias name: ").strip()
        elif line.startswith("Entry type: ") and "PrivateKeyEntry" in line and alias is not None:
            aliases.append(alias)
    return aliases


def _jks_to_pkcs12(location: Path, store_password: str | None, key_password: str | None,
                   alias: str | None) -> tuple[bytes, str]:
    """The store's entries (only `alias` if given) as PKCS#12 bytes, and the random password protecting them."""
    transfer = secrets.token_urlsafe(24)
    handle, target = tempfile.mkstemp(suffix=".p12", dir=private_dir())
    os.close(handle)
    os.unlink(target)  # keytool refuses to import into an existing empty file
    passwords = {"MIRROR_ENGINE_DESTPASS": transfer}
    arguments = ["-importkeystore", "-noprompt", "-srckeystore", str(location), "-srcstoretype", "JKS",
                 "-destkeystore", target, "-deststoretype", "PKCS12", "-deststorepass:env", "MIRROR_ENGINE_DESTPASS"]
    if store_password:
        arguments += ["-srcstorepass:env", "MIRROR_ENGINE_SRCSTOREPASS"]
        passwords["MIRROR_ENGINE_SRCSTOREPASS"] = store_password
    if alias is not None:
        arguments += ["-srcalias", alias, "-destkeypass:env", "MIRROR_ENGINE_DESTPASS"]
        if key_password:
            arguments += ["-srckeypass:env", "MIRROR_ENGINE_SRCKEYPASS"]
            passwords["MIRROR_ENGINE_SRCKEYPASS"] = key_password
    try:
        result = _keytool(arguments, passwords, location)
        if result.returncode != 0 or not os.path.exists(target):
            raise _keytool_error(location, result, store_password, key_password, transfer)
        return Path(target).read_bytes(), transfer
    finally:
        if os.path.exists(target):
            os.unlink(target)


def _load_pkcs12(data: bytes, password: str | None, location: Path) -> PKCS12KeyAndCertificates:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise KeystoreError(f"cannot read the PKCS12 store {location}: wrong password, or not a PKCS12 store") from None


def keystore_to_pem(location: str | Path, store_type: str, store_password: str | None, key_password: str | None,
                    name: str) -> KeyMaterial:
    """The private key and certificate chain of a JKS or PKCS12 keystore, as PEM files in `private_dir()`.

    The key is the store's only private key entry, decrypted with `key_password` (Java's `ssl.key.password`;
    the store password when it is None) and written encrypted with that same password. `name` prefixes the
    files' names (e.g. the cluster alias).
    """
    from cryptography.hazmat.primitives import serialization

    location = Path(location)
    _readable(location)
    effective_key_password = key_password if key_password is not None else (store_password or "")
    if store_type == "JKS":
        aliases = _jks_private_key_aliases(location, store_password)
        if len(aliases) != 1:
            raise KeystoreError(f"the JKS keystore {location} holds {len(aliases)} private keys; the engine needs "
                                "exactly one (Java would choose among several by key type; librdkafka cannot)")
        data, password = _jks_to_pkcs12(location, store_password, effective_key_password, aliases[0])
        bundle = _load_pkcs12(data, password, location)
    elif store_type == "PKCS12":
        bundle = _load_pkcs12(location.read_bytes(), store_password, location)
    else:
        raise KeystoreError(f"{store_type} is not a keystore type to convert (JKS or PKCS12)")
    key, cert, extra = bundle.key, bundle.cert, bundle.additional_certs
    if key is None or cert is None:
        raise KeystoreError(f"the {store_type} keystore {location} holds no private key with its certificate")
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(effective_key_password.encode()) if effective_key_password
        else serialization.NoEncryption())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    chain = [cert.certificate, *(c.certificate for c in extra if c.certificate != cert.certificate)]
    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    return KeyMaterial(_write_private(f"{name}-key", key_pem), _write_private(f"{name}-chain", chain_pem),
                       effective_key_password)


def truststore_to_pem(location: str | Path, store_type: str, password: str | None, name: str) -> Path:
    """Every certificate of a JKS or PKCS12 truststore, as one PEM file of CA certificates in `private_dir()`."""
    from cryptography.hazmat.primitives import serialization

    location = Path(location)
    _readable(location)
    if store_type == "JKS":
        data, transfer = _jks_to_pkcs12(location, password, None, None)
        bundle = _load_pkcs12(data, transfer, location)
    elif store_type == "PKCS12":
        bundle = _load_pkcs12(location.read_bytes(), password, location)
    else:
        raise KeystoreError(f"{store_type} is not a truststore type to convert (JKS or PKCS12)")
    certificates = [c.certificate for c in bundle.additional_certs]
    if bundle.cert is not None:
        certificates.insert(0, bundle.cert.certificate)
    if not certificates:
        raise KeystoreError(f"the {store_type} truststore {location} holds no certificate")
    return _write_private(f"{name}-ca", b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates))


def write_private(name: str, data: bytes) -> Path:
    """`data` in a new file (mode 0600) of `private_dir()`, removed with it at exit; `name` prefixes its name."""
    return _write_private(name, data)
