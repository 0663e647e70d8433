#!/usr/bin/env bash
# Installs what `make test` needs and a fresh machine lacks: ZooKeeper from
# Debian's packages (the real server the state-manager tests start), and
# the Python virtualenv of the multilang tests (pystorm and streamparse).
set -euo pipefail
if [ ! -f /usr/share/java/zookeeper.jar ]; then
  echo "installing zookeeper (Debian package) for the state-manager tests"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
fi
# The Python virtualenv of the multilang tests: pystorm and streamparse
# from PyPI (scripts/pyvenv.sh; instant once installed).
if command -v python3 >/dev/null; then
  "$(dirname "$0")/pyvenv.sh" >/dev/null
else
  echo "python3 is missing: the multilang tests need it (apt-get install python3 python3-venv)" >&2
fi
