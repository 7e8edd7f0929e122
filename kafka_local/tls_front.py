"""A TLS front on loopback for a plain-HTTP server behind it, as an ingress or a sidecar terminates TLS for a
schema registry: it serves the harness's server certificate and requires a client certificate signed by the
harness's CA (mTLS), then passes the bytes on both ways unchanged.

The registry itself serves HTTPS too, but its client-certificate check is fixed when the application is built
(`quarkus.http.ssl.client-auth` is NONE in the prebuilt one), so mTLS is required here, in front of it.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from pathlib import Path

from kafka_local.tls import STORE_PASSWORD, TlsFiles

__all__ = ["TlsFront"]


def _server_pem(files: TlsFiles) -> tuple[Path, Path]:
    """The server certificate and its key as PEM files beside the store (Python's ssl reads no PKCS12)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    certificate, key = files.folder / "front.pem", files.folder / "front-key.pem"
    if not key.is_file():
        private_key, cert, _chain = pkcs12.load_key_and_certificates(files.server_keystore.read_bytes(),
                                                                      STORE_PASSWORD.encode())
        assert private_key is not None and cert is not None
        certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key.touch(mode=0o600)
        key.write_bytes(private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return certificate, key


class TlsFront:
    """HTTPS on `port` in front of `127.0.0.1:backend_port`; every client must show a certificate of the CA."""

    def __init__(self, files: TlsFiles, backend_port: int) -> None:
        certificate, key = _server_pem(files)
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
        self._context.verify_mode = ssl.CERT_REQUIRED
        self._context.load_cert_chain(str(certificate), str(key))
        self.backend_port = backend_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        threading.Thread(target=self._accept, name="tls-front", daemon=True).start()

    def url(self, path: str = "") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            secured = self._context.wrap_socket(client, server_side=True)  # refuses a client without certificate
        except (ssl.SSLError, OSError):
            client.close()
            return
        try:
            backend = socket.create_connection(("127.0.0.1", self.backend_port), timeout=30)
        except OSError:
            secured.close()
            return
        threading.Thread(target=_pump, args=(backend, secured), daemon=True).start()
        _pump(secured, backend)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
