"""A Spark job's TLS files staged for executors on other machines: private files, relative names, no clear key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from kafka_local.tls import KEY_PASSWORD, STORE_PASSWORD, TlsFiles, make_tls_files
from mirror_engine.security import SecurityError, java_options, read_security, stage_job_files


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls") / "files")


def _inline(tls: TlsFiles) -> dict[str, str]:
    return {"bootstrap.servers": "broker-1:9093", "security.protocol": "SSL", "ssl.ca.pem": tls.ca.read_text(),
            "ssl.certificate.pem": tls.client_certificate.read_text(), "ssl.key.pem": tls.client_key.read_text(),
            "ssl.key.password": KEY_PASSWORD, "client.id": "mirror"}


def test_inline_pem_becomes_private_files_named_relatively_and_the_key_is_shipped_encrypted(tls, tmp_path):
    staged = stage_job_files("dc1", _inline(tls), tmp_path, "source")
    assert [f.name for f in staged.files] == ["source-ca.pem", "source-client.p12"]
    assert all(f.parent == tmp_path and stat.S_IMODE(f.stat().st_mode) == 0o600 for f in staged.files)
    config = staged.config
    assert config["ssl.ca.location"] == "source-ca.pem" and config["ssl.keystore.location"] == "source-client.p12"
    assert config["client.id"] == "mirror"
    assert not any(key.endswith(".pem") or key == "ssl.key.password" for key in config)
    keystore = staged.files[1].read_bytes()
    assert b"PRIVATE KEY" not in keystore
    assert config["ssl.keystore.password"] not in (KEY_PASSWORD, STORE_PASSWORD)  # a password of its own
    loaded = pkcs12.load_key_and_certificates(keystore, config["ssl.keystore.password"].encode())
    assert loaded[1] is not None and loaded[1].subject.rfc4514_string() == "CN=mirror"
    # Both clients read the staged settings: the Java client by the same relative names.
    java = java_options(read_security("dc1", config))
    assert java["ssl.truststore.location"] == "source-ca.pem"
    assert java["ssl.keystore.location"] == "source-client.p12" and java["ssl.keystore.type"] == "PKCS12"


def test_files_and_a_pkcs12_keystore_are_copied_under_their_own_names(tls, tmp_path):
    config = {"bootstrap.servers": "broker-1:9093", "security.protocol": "SSL", "ssl.ca.location": str(tls.ca),
              "ssl.keystore.location": str(tls.client_keystore_p12), "ssl.keystore.password": STORE_PASSWORD}
    staged = stage_job_files("dc2", config, tmp_path, "target")
    assert (tmp_path / "target-ca.pem").read_bytes() == tls.ca.read_bytes()
    assert (tmp_path / "target-client.p12").read_bytes() == tls.client_keystore_p12.read_bytes()
    assert staged.config["ssl.keystore.password"] == STORE_PASSWORD


def test_a_cluster_without_tls_files_needs_nothing(tmp_path):
    config = {"bootstrap.servers": "broker-1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
              "sasl.username": "mirror", "sasl.password": "x-secret"}
    staged = stage_job_files("dc1", config, tmp_path, "source")
    assert staged.config == config and staged.files == [] and list(Path(tmp_path).iterdir()) == []


def test_a_key_that_cannot_be_read_is_refused_naming_the_setting(tls, tmp_path):
    with pytest.raises(SecurityError) as caught:
        stage_job_files("dc1", {**_inline(tls), "ssl.key.password": "wrong-4711"}, tmp_path, "source")
    assert "ssl.key.pem" in str(caught.value) and "wrong-4711" not in str(caught.value)
