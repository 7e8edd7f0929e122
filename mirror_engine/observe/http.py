"""A worker's status on a loopback HTTP port: `/status` (JSON) and `/metrics` (Prometheus text format)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mirror_engine.observe.status import prometheus_text


class StatusServer:
    """Serves the latest status snapshot; the engine's loop replaces it, the server only reads it."""

    def __init__(self, snapshot: Callable[[], dict], port: int = 0, host: str = "127.0.0.1") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/status":
                    body, kind = json.dumps(snapshot(), indent=1).encode(), "application/json"
                elif path == "/metrics":
                    body, kind = prometheus_text(snapshot()).encode(), "text/plain; version=0.0.4; charset=utf-8"
                else:
                    self.send_error(404, "try /status or /metrics")
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # scrapes every few seconds would drown the engine's own log

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="status-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
