#!/usr/bin/env bash
# make demo: runs word count on a real local cluster (2 containers: every
# daemon and every instance its own process), prints live counts and
# throughput for about 15 s, then kills the topology.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DEMO_SECONDS:-15}
work=$(mktemp -d /tmp/egret-demo-XXXXXX)
export EGRET_HOME="$work/home"
egret="$work/egret"
cleanup() {
  "$egret" kill local wordcount >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "building egret and the word count topology"
go build -o "$egret" ./cmd/egret
go build -o "$work/wordcount" ./examples/wordcount

props=(--config-property egret.metrics.export.interval=1s)
echo
"$egret" "${props[@]}" submit local "$work/wordcount" -- --containers 2
echo
"$egret" list local
start=$(date +%s)
prev=0 prevt=$start
while (( $(date +%s) - start < DURATION )); do
  sleep 3
  now=$(date +%s.%N)
  prev=$("$egret" metrics local wordcount --output json | python3 -c '
import json, sys
st = json.load(sys.stdin)["components"]
prev, t0, t1 = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
words = st.get("sentence", {}).get("user.words", 0)
counted = st.get("count", {}).get("user.counted", 0)
print(f"words emitted {words:>12,.0f}   words counted {counted:>12,.0f}   {(counted - prev) / (t1 - t0):>10,.0f} words/s", file=sys.stderr)
print(counted)' "$prev" "$prevt" "$now")
  prevt=$now
done
echo
"$egret" metrics local wordcount
echo
"$egret" kill local wordcount
