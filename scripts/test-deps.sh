#!/usr/bin/env bash
# Installs what `make test` needs and a fresh machine lacks: ZooKeeper from
# Debian's packages (the real server the state-manager tests start).
set -euo pipefail
if [ ! -f /usr/share/java/zookeeper.jar ]; then
  echo "installing zookeeper (Debian package) for the state-manager tests"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
fi
