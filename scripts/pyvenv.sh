#!/usr/bin/env bash
# Creates (or refreshes) the Python virtualenv of the multilang tests and
# benchmark and prints the path of its bin directory. The packages are
# those of test/e2e/testdata/multilang/requirements.txt, from PyPI; a
# stamp file makes a second run with the same requirements instant.
#
#   EGRET_PYVENV  the virtualenv's directory (default ~/.cache/egret/pyvenv)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
req="$root/test/e2e/testdata/multilang/requirements.txt"
venv="${EGRET_PYVENV:-${XDG_CACHE_HOME:-$HOME/.cache}/egret/pyvenv}"
command -v python3 >/dev/null || { echo "pyvenv.sh: python3 is not installed (apt-get install python3 python3-venv)" >&2; exit 1; }
want="$(python3 --version 2>&1) $(sha256sum "$req" | cut -d' ' -f1)"
if [ -x "$venv/bin/python3" ] && [ "$(cat "$venv/.egret-stamp" 2>/dev/null)" = "$want" ]; then
  echo "$venv/bin"
  exit 0
fi
echo "pyvenv.sh: installing $(grep -v '^#' "$req" | xargs) into $venv" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2 || { echo "pyvenv.sh: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
echo "$want" >"$venv/.egret-stamp"
echo "$venv/bin"
