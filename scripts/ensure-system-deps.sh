#!/usr/bin/env bash
# Java 17+ runs the Kafka brokers and Spark; Maven resolves their jars from Maven Central. With --browser (make
# test): Debian's chromium, the browser the UI tests drive (playwright never downloads one here).
# Only what is needed: no recommended packages (chromium's recommends are 100+ packages: cups, avahi, x11 tools).
# Installs what is missing from Debian's packages (needs root, as on CI and dev machines here).
set -euo pipefail
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv)
if [ "${1:-}" = "--browser" ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: install ${missing[*]} yourself, then run make again" >&2
    exit 1
  fi
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
