"""How a Spark job reaches a plan's clusters: the security model rendered as Kafka source options, checked once.

The options come from the same model as the engine's librdkafka settings (`mirror_engine.security.model`),
read from the settings as written (the plan, or what the Airflow task put in the job's environment).
Before any read, `check_logins` logs in to each cluster with the Java client Spark itself uses, so a login
that cannot succeed ends the job at once with a sentence naming the cluster and the setting, instead of
minutes of retries inside Spark's tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import SparkSession

from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.security import ClusterSecurity, SecurityError, java_options, oauth_urls, read_security, redact

log = logging.getLogger(__name__)
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
_LOGIN_TIMEOUT_S = 60  # a loaded machine: 20 s was not enough for a JVM admin client at load average 60 to 80


class ClusterLoginError(RuntimeError):
    """A cluster refused Spark's Java client, or its settings cannot be given to it; the message names both."""


def plan_security(plan: MigrationPlan) -> tuple[ClusterSecurity, ClusterSecurity]:
    """(source, target) security models of a plan; PlanError naming `<side>.client.<key>` for what is refused."""
    models = []
    for (side, spec), config in zip((("source", plan.source), ("target", plan.target)), plan.raw_client_configs(),
                                    strict=True):
        try:
            models.append(read_security(spec.alias, config))
        except SecurityError as error:
            raise PlanError(f"cluster '{spec.alias}'", [f"{side}.client.{p}" for p in error.problems]) from None
    return models[0], models[1]


def kafka_source_options(security: ClusterSecurity, file_path: Callable[[str], str] | None = None) -> dict[str, str]:
    """Spark Kafka source options (`kafka.` prefixed) for one cluster; PlanError when one cannot be rendered."""
    try:
        java = java_options(security, file_path)
    except SecurityError as error:
        raise PlanError(f"cluster '{security.cluster}'", error.problems) from None
    options = {f"kafka.{name}": value for name, value in java.items()}
    options["kafka.isolation.level"] = "read_committed"
    return options


def executor_oauth_options(*models: ClusterSecurity) -> str:
    """JVM options allowing the executors' Kafka clients to call the OAuth token endpoints of `models` ("" when
    none logs in with OIDC): set on the executors of jobs that read such a cluster, and on no other JVM."""
    urls = list(dict.fromkeys(url for model in models for url in oauth_urls(model)))
    return f"-D{ALLOWED_URLS_PROPERTY}={','.join(urls)}" if urls else ""


def allow_oauth_urls(spark: SparkSession, *models: ClusterSecurity) -> None:
    """Let the driver's Java Kafka clients call the OAuth token endpoints of `models` (Kafka lists them)."""
    urls = [url for model in models for url in oauth_urls(model)]
    if not urls:
        return
    system = spark.sparkContext._jvm.java.lang.System  # type: ignore[union-attr]
    present = [u for u in (system.getProperty(ALLOWED_URLS_PROPERTY) or "").split(",") if u]
    system.setProperty(ALLOWED_URLS_PROPERTY, ",".join(dict.fromkeys([*present, *urls])))


def _reason(security: ClusterSecurity, error_class: str, message: str) -> str:
    where = f"cluster '{security.cluster}' ({security.bootstrap_servers})"
    if error_class.endswith("SaslAuthenticationException"):
        mechanism = getattr(security.login, "mechanism", type(security.login).__name__)
        return (f"{where} refused the login of Spark's Kafka source (sasl.mechanism {mechanism}): {redact(message)}; "
                "check the cluster's credentials (sasl.username/sasl.password, or the OAuth client settings)")
    if error_class.endswith("SslAuthenticationException"):
        return (f"{where}: the TLS handshake of Spark's Kafka source failed: {redact(message)}; check ssl.ca.location "
                "(the CA that signed the broker's certificate) and the client certificate (ssl.certificate.location "
                "or ssl.keystore.location)")
    if error_class.endswith("TimeoutException"):
        return (f"{where} did not answer Spark's Kafka source in {_LOGIN_TIMEOUT_S} s; check security.protocol "
                "and bootstrap.servers")
    return f"{where}: Spark's Kafka source cannot connect: {error_class.rsplit('.', 1)[-1]}: {redact(message)}"


def check_logins(spark: SparkSession, clusters: list[tuple[ClusterSecurity, dict[str, str]]]) -> None:
    """Log in to each cluster with the Java client of Spark's Kafka source; ClusterLoginError at the first refusal."""
    from py4j.protocol import Py4JJavaError

    jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
    for security, options in clusters:
        properties = jvm.java.util.Properties()
        for name, value in options.items():
            if name.startswith("kafka.") and name != "kafka.isolation.level":
                properties.setProperty(name.removeprefix("kafka."), value)
        properties.setProperty("request.timeout.ms", str(_LOGIN_TIMEOUT_S * 1000))
        properties.setProperty("default.api.timeout.ms", str(_LOGIN_TIMEOUT_S * 1000))
        admin = None
        try:
            admin = jvm.org.apache.kafka.clients.admin.Admin.create(properties)
            admin.describeCluster().clusterId().get(_LOGIN_TIMEOUT_S, jvm.java.util.concurrent.TimeUnit.SECONDS)
        except Py4JJavaError as error:
            cause = error.java_exception
            while cause.getCause() is not None and cause.getClass().getName().endswith(
                    ("ExecutionException", "KafkaException")):
                cause = cause.getCause()
            raise ClusterLoginError(_reason(security, cause.getClass().getName(), str(cause.getMessage()))) from None
        finally:
            if admin is not None:
                admin.close(jvm.java.time.Duration.ofSeconds(2))
        log.info("cluster '%s': Spark's Kafka source logged in", security.cluster)
