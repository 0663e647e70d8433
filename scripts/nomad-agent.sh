#!/usr/bin/env bash
# Builds the Nomad agent the Nomad tests run (schedulers/nomad, test/e2e) from
# the module zip of github.com/hashicorp/nomad v1.6.3 (MPL-2.0: the last
# releases before 1.7 are the open-source ones; 1.6.4 and later must not be
# used), once per machine, and prints the binary's path.
#
# The module cannot be `go install`ed: its go.mod replaces github.com/hashicorp/nomad/api
# with ./api, a nested module that module zips leave out. The build copies the
# module into a scratch directory outside the repository, points that replace
# at the api module of the same commit (a pseudo-version the module proxy
# serves), keeps the other replaces (forks of go-winio, hcl and go-metrics,
# which are ordinary module versions) and builds with `nice`.
#
# The binary is cached in $EGRET_CACHE (default ~/.cache/egret)/nomad-1.6.3/nomad;
# a second run only prints its path. The project's own go.mod never names
# github.com/hashicorp/nomad.
set -euo pipefail
version=v1.6.3
# The api module at the commit tagged v1.6.3 (e0497bff14378d68cad76a801cc0eba93ce05039).
api_version=v0.0.0-20231030125810-e0497bff1437
cache="${EGRET_CACHE:-$HOME/.cache/egret}/nomad-${version#v}"
bin="$cache/nomad"
if [ -x "$bin" ] && "$bin" version 2>/dev/null | grep -q "Nomad ${version}"; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { echo "go is missing: the Nomad agent is built from source" >&2; exit 1; }
mkdir -p "$cache"
scratch="$(mktemp -d "$cache/build.XXXXXX")"
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
start=$(date +%s)
# -mod=mod and an empty GOFLAGS: the build resolves the module's own go.sum, not the project's.
export GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local
dir="$(cd "$scratch" && go mod download -json "github.com/hashicorp/nomad@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[ -d "$dir" ] || { echo "go mod download github.com/hashicorp/nomad@$version gave no directory" >&2; exit 1; }
cp -r "$dir" "$scratch/nomad"
chmod -R u+w "$scratch/nomad"
cd "$scratch/nomad"
go mod edit -dropreplace=github.com/hashicorp/nomad/api \
  -replace="github.com/hashicorp/nomad/api=github.com/hashicorp/nomad/api@$api_version"
echo "building the Nomad $version agent in $scratch (first time only; several minutes)" >&2
# Bounded: a build that hangs must fail test-deps, not CI's whole run.
if ! timeout 45m nice -n 10 go build -trimpath -o "$scratch/nomad.bin" . >&2; then
  echo "building the Nomad $version agent failed or took over 45 minutes (see above); set EGRET_NOMAD_BIN to a nomad binary to run the tests with it" >&2
  exit 1
fi
"$scratch/nomad.bin" version >&2
mv "$scratch/nomad.bin" "$bin"
echo "built $bin in $(( $(date +%s) - start ))s" >&2
echo "$bin"
