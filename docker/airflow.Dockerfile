# syntax=docker/dockerfile:1
# Airflow image for docker-compose.yaml: the official Airflow 3.3.2 image plus Java (spark-submit runs its
# driver JVM in the task's container), the project's pinned requirements and the project itself.
# Build context: the project root (see .dockerignore).
FROM apache/airflow:3.3.2-python3.11

USER root
# Headless OpenJDK 17 from Debian (no Maven: Spark resolves the jobs' jars itself, through --packages). JAVA_HOME goes through an architecture-independent link, so the image
# builds on amd64 and arm64 alike. (mkdir: slim images lack the man folder some JDK postinst steps need.)
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/java-17 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17

# Python packages go in as the airflow user (the image installs into its user site). The requirements
# come first so this slow layer is rebuilt only when requirements.txt changes; apache-airflow is named
# again so no requirement can move it off the image's version.
USER airflow
COPY --chown=airflow:0 requirements.txt /opt/project/requirements.txt
RUN pip install --no-cache-dir "apache-airflow==${AIRFLOW_VERSION}" -r /opt/project/requirements.txt

# The project itself: mirror_engine, spark_jobs, kafka_local as packages (dependencies are already in).
# docker-compose.yaml mounts dags/, plugins/, migrations/, spark_jobs/ and mirror_engine/ over these copies.
COPY --chown=airflow:0 . /opt/project
RUN cd /opt/project && pip install --no-cache-dir --no-deps .
