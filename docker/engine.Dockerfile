# syntax=docker/dockerfile:1
# Replication engine image for docker-compose.yaml: `mirror-engine` and its own dependencies only
# (no Airflow, no Spark, no Java). Build context: the project root (see .dockerignore).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/project
COPY . /opt/project
# requirements.txt as constraints: the engine's dependencies get the project's pinned versions, and
# nothing else from that file (Airflow, PySpark) is installed.
RUN pip install --no-cache-dir -c requirements.txt . \
 && useradd --system --uid 10001 --no-create-home --home-dir /opt/project engine

USER engine
# Status HTTP endpoint (Prometheus metrics).
EXPOSE 9464
CMD ["mirror-engine", "--help"]
