#!/usr/bin/env bash
# Builds the real Kubernetes that `make test` runs (internal/k8stest starts it
# on loopback) and installs the node's Debian packages. Idempotent: each
# binary is built once per machine (and per version) into a cache outside the
# repository, $EGRET_K8S_CACHE (default ~/.cache/egret-k8s/<version>), and
# never rebuilt while it is there. The first build takes about 30 minutes of
# one core (see docs/schedulers/kubernetes.md for the measured times).
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet  k8s.io/kubernetes v1.34.4
#   etcd                                                             go.etcd.io/etcd/server/v3 v3.6.4
#   kwok (fake nodes of the fast tier)                               sigs.k8s.io/kwok v0.8.0
#   containerd 1.6, runc, CNI plugins, busybox-static (real-pod tier) Debian packages
#
# The kubelet stays at 1.34 while Debian's containerd is 1.6 (kubelet 1.36
# needs the CRI RuntimeConfig call of containerd 2.0).
# EGRET_K8S_BUILD_FLAGS (default empty) is passed to go build: on a shared
# machine, "-p=1" with GOMAXPROCS=1 and nice keeps the build to one core.
#
# With --background the Go builds go on in the background at nice 15,
# logging to $cache/build.log, so that CI can overlap them with the other
# tests: internal/k8stest waits for the build's lock before it gives up on
# missing binaries.
set -euo pipefail

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.8.0

cache=${EGRET_K8S_CACHE:-$HOME/.cache/egret-k8s/$K8S_VERSION}
bin=$cache/bin
mkdir -p "$bin" "$cache/src"
if [ "${1:-}" != --locked ]; then
  exec 9>"$cache/.lock"
  flock 9 # one build at a time per cache; internal/k8stest waits on it
fi

log() { echo "k8s-deps: $*"; }
export GOWORK=off CGO_ENABLED=0 GOTOOLCHAIN=local
flags=${EGRET_K8S_BUILD_FLAGS:-}

# The Debian packages of the real-pod tier.
pkgs=()
command -v containerd >/dev/null || pkgs+=(containerd)
command -v runc >/dev/null || pkgs+=(runc)
[ -x /usr/lib/cni/bridge ] || pkgs+=(containernetworking-plugins)
[ -x /bin/busybox ] || pkgs+=(busybox-static)
command -v iptables >/dev/null || pkgs+=(iptables)
command -v conntrack >/dev/null || pkgs+=(conntrack)
if [ ${#pkgs[@]} -gt 0 ]; then
  log "installing ${pkgs[*]} (Debian packages) for the real-pod tier"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

all_built() {
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kwok; do
    [ -x "$bin/$b" ] || return 1
  done
  [ -s "$cache/kwok-stages.yaml" ]
}
if [ "${1:-}" = --background ] && ! all_built; then
  log "building Kubernetes $K8S_VERSION in the background (log: $cache/build.log)"
  # The child inherits fd 9, so the lock is held until it ends.
  nohup nice -n 15 "$0" --locked >"$cache/build.log" 2>&1 &
  exit 0
fi

# timed NAME CMD...: runs CMD and records how long it took in $cache/build-times.
timed() {
  local name=$1 start end
  shift
  start=$(date +%s)
  "$@"
  end=$(date +%s)
  echo "$name $((end - start))s $(date -u +%FT%TZ)" >>"$cache/build-times"
  log "$name built in $((end - start)) s"
}

# The control plane and the kubelet: k8s.io/kubernetes's go.mod replaces its
# staging modules with ./staging/src/...; rewrite them to the published
# k8s.io/* modules so the module zip builds on its own.
k8s_src=$cache/src/kubernetes
prepare_kubernetes() {
  [ -f "$k8s_src/.prepared" ] && return
  local dir
  dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$k8s_src"
  cp -r "$dir" "$k8s_src"
  chmod -R u+w "$k8s_src"
  rm -f "$k8s_src/go.work" "$k8s_src/go.work.sum"
  local args=() m
  for m in $(grep -oE 'k8s.io/[a-z0-9-]+ => ./staging' "$k8s_src/go.mod" | awk '{print $1}'); do
    case $m in
      # not published at v0.34.4; none is imported by the four binaries
      k8s.io/cli-runtime | k8s.io/code-generator | k8s.io/kube-proxy | k8s.io/sample-apiserver) args+=("-replace=$m=$m@v0.34.2") ;;
      # never published, not required by go.mod
      k8s.io/sample-cli-plugin | k8s.io/sample-controller) args+=("-dropreplace=$m") ;;
      *) args+=("-replace=$m=$m@$K8S_STAGING_VERSION") ;;
    esac
  done
  (cd "$k8s_src" && go mod edit "${args[@]}" &&
    GOFLAGS=-mod=mod go list -deps ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kubelet >/dev/null)
  touch "$k8s_src/.prepared"
}

build_k8s() { # build_k8s NAME
  local minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ld="$ld -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ld="$ld -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$k8s_src" && GOFLAGS=-mod=mod go build $flags -trimpath -ldflags="$ld" -o "$bin/$1.tmp" "./cmd/$1")
  mv "$bin/$1.tmp" "$bin/$1"
}

# build_module NAME MODULE VERSION PACKAGE: a Go program built through a
# wrapper module that requires MODULE@VERSION (go install pkg@version refuses
# modules with replace directives, as etcd's server module has).
build_module() {
  local name=$1 mod=$2 ver=$3 pkg=$4 w=$cache/src/$1-build
  rm -rf "$w"
  mkdir -p "$w"
  (cd "$w" && go mod init "egret.local/$name-build" >/dev/null 2>&1 && go get "$mod@$ver" >/dev/null 2>&1 &&
    GOFLAGS=-mod=mod go build $flags -trimpath -ldflags="-s -w" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
}

[ -x "$bin/etcd" ] || timed etcd build_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kube-controller-manager" ] || [ ! -x "$bin/kube-scheduler" ] || [ ! -x "$bin/kubelet" ]; then
  timed kubernetes-prepare prepare_kubernetes
fi
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  [ -x "$bin/$b" ] || timed "$b" build_k8s "$b"
done
[ -x "$bin/kwok" ] || timed kwok build_module kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
# kwok's stage files (node-initialize, pod-ready, pod-complete, pod-delete): the
# module's own fast stages, concatenated.
if [ ! -s "$cache/kwok-stages.yaml" ]; then
  kdir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  for f in node/fast/node-initialize pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    cat "$kdir/kustomize/stage/$f.yaml"
    echo "---"
  done >"$cache/kwok-stages.yaml.tmp"
  mv "$cache/kwok-stages.yaml.tmp" "$cache/kwok-stages.yaml"
fi
log "ready in $cache"
