"""One side of a migration in the plan: its alias and how to reach it (an Airflow connection, or bootstrap servers
and librdkafka settings, with `${ENV}` references), and its settings rendered for a client."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import Field, model_validator

from mirror_engine.plan.errors import PlanError
from mirror_engine.plan.field_checks import StrictModel

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ALIAS_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_\-]*$"

class ClusterSpec(StrictModel):
    """One side of the migration: an alias and how to reach it.

    From Airflow, `conn_id` names the connection; from the CLI, `bootstrap_servers` and `client`
    (librdkafka settings such as security.protocol) are used. Values may reference environment
    variables as `${NAME}`, so secrets stay out of plan files.
    """

    alias: Annotated[str, Field(pattern=ALIAS_PATTERN, max_length=64)]
    conn_id: str | None = None
    bootstrap_servers: str | None = None
    client: dict[str, str | int | bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _reachable_somehow(self) -> ClusterSpec:
        if not self.conn_id and not self.bootstrap_servers:
            raise ValueError("give conn_id (an Airflow connection) or bootstrap_servers")
        if "bootstrap.servers" in self.client:
            raise ValueError("put bootstrap servers in bootstrap_servers, not in client")
        return self

    def client_config(self) -> dict[str, str]:
        """librdkafka settings for the CLI, with `${ENV}` references resolved."""
        if not self.bootstrap_servers:
            raise PlanError(
                f"cluster '{self.alias}'",
                [f"cluster '{self.alias}' names only the Airflow connection '{self.conn_id}': "
                 "give bootstrap_servers to use it outside Airflow"],
            )
        config = {"bootstrap.servers": resolve_env(self.bootstrap_servers, f"{self.alias}.bootstrap_servers")}
        for key, value in self.client.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            config[key] = resolve_env(text, f"{self.alias}.client.{key}")
        return config


def render_client_config(alias: str, config: dict[str, str], where: str) -> dict[str, Any]:
    """librdkafka settings of cluster `alias` rendered from the security model; PlanError naming `where.<key>`."""
    from mirror_engine.security import SecurityError, security_config

    try:
        return security_config(alias, config)
    except SecurityError as error:
        raise PlanError(f"cluster '{alias}'", [f"{where}.{problem}" for problem in error.problems]) from None


def resolve_env(text: str, field: str) -> str:
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise PlanError(field, [f"{field}: environment variable {name} is not set"])
        return os.environ[name]

    return _ENV_REFERENCE.sub(lookup, text)


