"""A real OAuth 2 authorization server on loopback for OAUTHBEARER clusters: `no.nav.security:mock-oauth2-server`.

It issues signed JWTs (RS256) for the client-credentials grant at `<issuer>/token` and publishes its keys at
`<issuer>/jwks`; a token's `sub` is the client id and its `aud` the requested scope. Brokers validate tokens
through the JWKS endpoint, as they would against Keycloak or Okta.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kafka_local.cluster import ClusterStartError, free_port
from kafka_local.maven import Artifact, JarSet, classpath, resolve
from kafka_local.nodes import reap

MOCK_OAUTH2_SERVER_VERSION = "2.1.10"
_MAIN_CLASS = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
ISSUER_ID = "default"


def oauth_jar_set() -> JarSet:
    return JarSet(name=f"mock-oauth2-server-{MOCK_OAUTH2_SERVER_VERSION}",
                  artifacts=(Artifact("no.nav.security", "mock-oauth2-server", MOCK_OAUTH2_SERVER_VERSION),))


@dataclass
class OAuthServer:
    home: str
    port: int
    pid: int = 0

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/{ISSUER_ID}"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    def stop(self, timeout_s: float = 15.0) -> None:
        if self.pid <= 0:
            return
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            reap(self.pid)
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        os.kill(self.pid, 9)
        reap(self.pid)


def start_oauth_server(home: Path, timeout_s: float = 60.0) -> OAuthServer:
    """Start the server in `home` (its log: `oauth.log`) and return once its discovery document answers."""
    lib = resolve(oauth_jar_set())
    home.mkdir(parents=True, exist_ok=True)
    server = OAuthServer(str(home), free_port())
    environment = {**os.environ, "SERVER_HOSTNAME": "127.0.0.1", "SERVER_PORT": str(server.port)}
    with open(home / "oauth.log", "ab") as log_out:
        process = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-cp", classpath(lib), _MAIN_CLASS],
            stdout=log_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment,
            start_new_session=True)
    server.pid = process.pid
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterStartError(f"the OAuth server exited with {process.returncode}; see {home / 'oauth.log'}")
        try:
            with urllib.request.urlopen(f"{server.issuer}/.well-known/openid-configuration", timeout=1) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise ClusterStartError(f"the OAuth server did not answer on port {server.port} in {timeout_s:.0f} s")
