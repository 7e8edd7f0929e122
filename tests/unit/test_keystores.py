"""Java key and trust stores converted for librdkafka (`mirror_engine.security.keystores`), on keytool's stores."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from mirror_engine.mm2 import import_mm2_properties
from mirror_engine.security import KeystoreError, keystore_to_pem, private_dir, remove_private_dir, truststore_to_pem

MAKE_STORES = Path(__file__).resolve().parent / "mm2_corpus" / "secrets" / "tls" / "make-stores.sh"
STORE_PASSWORD, KEY_PASSWORD = "changeit", "corpus-key-secret"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh CA, a client key it signed, in JKS and PKCS12 keystores and truststores (the corpus's script)."""
    folder = tmp_path_factory.mktemp("stores")
    shutil.copy(MAKE_STORES, folder)
    subprocess.run(["sh", "make-stores.sh"], cwd=folder, check=True, capture_output=True, timeout=120)
    return folder


def _ca(stores: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate((stores / "ca.pem").read_bytes())


def _assert_private(path: Path) -> None:
    assert path.parent == private_dir()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize(("store", "store_type", "key_password"), [
    ("client.keystore.jks", "JKS", KEY_PASSWORD), ("client.keystore.p12", "PKCS12", None)])
def test_keystore_becomes_an_encrypted_pem_key_and_its_chain(stores: Path, store: str, store_type: str,
                                                             key_password: str | None):
    material = keystore_to_pem(stores / store, store_type, STORE_PASSWORD, key_password, "a-keystore")
    for path in (material.key_location, material.certificate_location):
        _assert_private(path)
    assert material.key_password == (key_password or STORE_PASSWORD)
    key_pem = material.key_location.read_bytes()
    assert b"ENCRYPTED PRIVATE KEY" in key_pem
    with pytest.raises(TypeError):  # never in clear on disk
        serialization.load_pem_private_key(key_pem, password=None)
    key = serialization.load_pem_private_key(key_pem, password=material.key_password.encode())
    chain = x509.load_pem_x509_certificates(material.certificate_location.read_bytes())
    assert chain[0].subject.rfc4514_string() == "CN=mirror-client"
    assert chain[0].public_key().public_numbers() == key.public_key().public_numbers()  # type: ignore[union-attr]
    chain[0].verify_directly_issued_by(_ca(stores))
    # OpenSSL (what librdkafka uses) reads them too, with the same password.
    result = subprocess.run(["openssl", "pkey", "-in", str(material.key_location), "-passin", "env:KEY_PASS",
                             "-noout"], env={**os.environ, "KEY_PASS": material.key_password}, capture_output=True)
    assert result.returncode == 0, result.stderr
    result = subprocess.run(["openssl", "verify", "-CAfile", str(stores / "ca.pem"),
                             str(material.certificate_location)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("store", "store_type", "password"), [
    ("truststore.jks", "JKS", STORE_PASSWORD),
    ("truststore.jks", "JKS", None),  # Java reads a JKS truststore without its password (integrity unchecked)
    ("truststore.p12", "PKCS12", STORE_PASSWORD)])
def test_truststore_becomes_a_pem_ca_file(stores: Path, store: str, store_type: str, password: str | None):
    ca_file = truststore_to_pem(stores / store, store_type, password, "b-truststore")
    _assert_private(ca_file)
    assert x509.load_pem_x509_certificates(ca_file.read_bytes()) == [_ca(stores)]


@pytest.mark.parametrize(("store", "store_type"), [("client.keystore.jks", "JKS"), ("client.keystore.p12", "PKCS12")])
def test_a_wrong_password_is_refused_without_showing_it(stores: Path, store: str, store_type: str):
    with pytest.raises(KeystoreError) as caught:
        keystore_to_pem(stores / store, store_type, "not-the-password", "not-the-key-password", "a")
    assert "wrong password" in str(caught.value) and str(stores / store) in str(caught.value)
    assert "not-the-password" not in str(caught.value) and "not-the-key-password" not in str(caught.value)


def test_a_missing_store_is_refused_by_its_path(tmp_path: Path):
    with pytest.raises(KeystoreError, match="no such file"):
        truststore_to_pem(tmp_path / "absent.jks", "JKS", None, "a")


def test_mm2_file_with_jks_stores_gets_pem_files_and_keeps_environment_references(stores: Path):
    text = textwrap.dedent(f"""\
        config.providers = env
        config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
        clusters = a, b
        a.bootstrap.servers = a:9093
        b.bootstrap.servers = b:9093
        security.protocol = SSL
        ssl.keystore.location = {stores}/client.keystore.jks
        ssl.keystore.password = ${{env:STORE_PASSWORD}}
        ssl.key.password = ${{env:KEY_PASSWORD}}
        ssl.truststore.location = {stores}/truststore.jks
        a->b.enabled = true
        """)
    environ = {"STORE_PASSWORD": STORE_PASSWORD, "KEY_PASSWORD": KEY_PASSWORD}
    plan = import_mm2_properties(text, "tls.properties", environ=environ).plan
    client = plan.source.client
    assert client["ssl.key.password"] == "${KEY_PASSWORD}"  # resolved when the engine connects, as before
    assert "ssl.keystore.location" not in client and "ssl.keystore.password" not in client
    for name in ("ssl.key.location", "ssl.certificate.location", "ssl.ca.location"):
        _assert_private(Path(str(client[name])))
    assert client["ssl.ca.location"] != plan.target.client["ssl.ca.location"]  # each cluster its own files


def test_mm2_file_refused_when_a_store_password_variable_is_missing(stores: Path):
    text = ("config.providers = env\n"
            "config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
            "clusters = a, b\na.bootstrap.servers = a:9093\nb.bootstrap.servers = b:9093\n"
            f"a.ssl.keystore.location = {stores}/client.keystore.jks\n"
            "a.ssl.keystore.password = ${env:NOT_SET_ANYWHERE}\na->b.enabled = true\n")
    with pytest.raises(ValueError) as caught:
        import_mm2_properties(text, "tls.properties", environ={})
    assert [line.split(": ", 1)[0] for line in caught.value.problems] == ["a.ssl.keystore.password"]  # type: ignore[attr-defined]


def test_remove_private_dir_removes_the_converted_files(stores: Path):
    ca_file = truststore_to_pem(stores / "truststore.p12", "PKCS12", STORE_PASSWORD, "t")
    folder = ca_file.parent
    remove_private_dir()
    assert not folder.exists()
    assert truststore_to_pem(stores / "truststore.p12", "PKCS12", STORE_PASSWORD, "t").parent != folder


_CONVERT = """
import os, signal, sys
from mirror_engine.security.keystores import truststore_to_pem
print(truststore_to_pem(sys.argv[1], "PKCS12", "changeit", "t").parent, flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(0)
"""


def _convert_in_child(stores: Path, ending: str) -> tuple[Path, int]:
    result = subprocess.run([sys.executable, "-c", _CONVERT, str(stores / "truststore.p12"), ending],
                            capture_output=True, text=True, timeout=60)
    return Path(result.stdout.strip()), result.returncode


def test_the_private_dir_is_gone_when_the_process_exits(stores: Path):
    folder, returncode = _convert_in_child(stores, "exit")
    assert returncode == 0 and folder.name.startswith("mirror-engine-keys-")
    assert not folder.exists()


def test_a_dir_left_by_kill_9_is_removed_by_the_next_process(stores: Path):
    folder, returncode = _convert_in_child(stores, "kill")
    assert returncode == -signal.SIGKILL
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700  # nothing runs on kill -9
    assert not [path for path in folder.iterdir() if path.stat().st_mode & 0o077]
    _convert_in_child(stores, "exit")
    assert not folder.exists()


def _librdkafka_client(settings: dict[str, str]) -> None:
    from confluent_kafka import Producer

    # librdkafka loads the key, chain and CA when the client is created (no broker is contacted here).
    Producer({"bootstrap.servers": "127.0.0.1:9", "security.protocol": "SSL", **settings}).flush(0)


@pytest.mark.parametrize("keystore", ["client.keystore.jks", "client.keystore.p12"])
def test_librdkafka_loads_what_an_mm2_file_with_java_stores_becomes(stores: Path, keystore: str):
    store_type = "JKS" if keystore.endswith(".jks") else "PKCS12"
    key_password = f"a.ssl.key.password = {KEY_PASSWORD}\n" if store_type == "JKS" else ""
    text = ("clusters = a, b\na.bootstrap.servers = a:9093\nb.bootstrap.servers = b:9093\na.security.protocol = SSL\n"
            f"a.ssl.keystore.type = {store_type}\na.ssl.keystore.location = {stores}/{keystore}\n"
            f"a.ssl.keystore.password = {STORE_PASSWORD}\n{key_password}"
            f"a.ssl.truststore.location = {stores}/truststore.jks\na->b.enabled = true\n")
    client = {name: str(value) for name, value in import_mm2_properties(text, "tls").plan.source.client.items()}
    _librdkafka_client(client)
    from confluent_kafka import KafkaException

    password = "ssl.key.password" if store_type == "JKS" else "ssl.keystore.password"
    with pytest.raises(KafkaException):  # the same files with another password: librdkafka refuses them
        _librdkafka_client({**client, password: "not-the-password"})
