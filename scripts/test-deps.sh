#!/usr/bin/env bash
# Installs what `make test` needs and a fresh machine lacks: ZooKeeper,
# Prometheus, Chromium, carbon-cache, Slurm and munge from Debian's packages, the Python
# virtualenv of the multilang tests (pystorm and streamparse), and the Maven
# artifacts of the Hadoop mini-cluster and Kafka broker tests, and the Nomad
# 1.6.3 agent built from source (scripts/nomad-agent.sh), and Kubernetes
# (scripts/k8s-deps.sh, in the background).
set -euo pipefail
# The real Kubernetes of the real-cluster tests (internal/k8stest; EGRET_REQUIRE_K8S=1):
# containerd, runc and the CNI plugins from Debian now, and etcd, the control
# plane, the kubelet and kwok built from their modules once per machine into
# ~/.cache/egret-k8s. The build goes on in the background at nice 15 (it
# takes the longest of all, see docs/schedulers/kubernetes.md) while the rest
# is installed and the other tests run; make test waits for it (its lock)
# before the real-Kubernetes tests, and they wait for it too.
"$(dirname "$0")/k8s-deps.sh" --background
# Debian packages, each installed when missing: ZooKeeper (the real server
# the state-manager tests start), Prometheus (the real server that scrapes
# a topology in test/e2e) and Chromium (the headless browser of the
# tracker UI tests in test/e2e) and graphite-carbon (the real carbon-cache
# the graphite sink writes to in test/e2e).
pkgs=()
[ -f /usr/share/java/zookeeper.jar ] || pkgs+=(zookeeper)
command -v prometheus >/dev/null || pkgs+=(prometheus)
[ -x /usr/lib/chromium/chromium ] || pkgs+=(chromium)
command -v carbon-cache >/dev/null || pkgs+=(graphite-carbon)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "installing ${pkgs[*]} (Debian packages) for the tests"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
# A one-node Slurm for the Slurm scheduler's tests (schedulers/slurm starts
# munged, slurmctld and slurmd itself): Debian's slurm-wlm and munge.
if ! command -v sbatch >/dev/null || [ ! -x /usr/sbin/slurmctld ] || [ ! -x /usr/sbin/munged ]; then
  echo "installing slurm-wlm and munge (Debian packages) for the Slurm scheduler tests"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq slurm-wlm munge >/dev/null
fi
# The Python virtualenv of the multilang tests: pystorm and streamparse
# from PyPI (scripts/pyvenv.sh; instant once installed).
if command -v python3 >/dev/null; then
  "$(dirname "$0")/pyvenv.sh" >/dev/null
else
  echo "python3 is missing: the multilang tests need it (apt-get install python3 python3-venv)" >&2
fi

# The Hadoop mini-cluster tests (test/hadoop) build a small Java launcher
# against Hadoop 3.4.2's artifacts from Maven Central: resolve them into
# ~/.m2 now (about 105 MB the first time) so the tests do not download.
# Java 17 and Maven must be installed (CI has both).
if command -v mvn >/dev/null && command -v javac >/dev/null; then
  pom="$(dirname "$0")/../schedulers/yarn/yarntest/minicluster/pom.xml"
  if ! mvn -B -q -o -f "$pom" dependency:resolve >/dev/null 2>&1; then
    echo "resolving the Hadoop mini-cluster's Maven artifacts (first run: about 105 MB)"
    mvn -B -q -f "$pom" dependency:resolve
  fi
  # The Kafka connector's tests (connectors/kafka, internal/kafkatest) run a
  # real Kafka 4.4.0 broker from Maven Central jars (about 43 MB the first
  # time); internal/kafkatest builds its class path offline from ~/.m2.
  kpom="$(dirname "$0")/../internal/kafkatest/broker/pom.xml"
  if ! mvn -B -q -o -f "$kpom" dependency:resolve >/dev/null 2>&1; then
    echo "resolving the Kafka broker's Maven artifacts (first run: about 43 MB)"
    mvn -B -q -f "$kpom" dependency:resolve
  fi
else
  echo "java/javac or mvn missing: the Kafka broker tests (EGRET_REQUIRE_KAFKA=1) will fail under make test"
  echo "java/javac or mvn missing: the Hadoop mini-cluster tests (test/hadoop) will fail under make test (EGRET_REQUIRE_HADOOP=1); install openjdk-17-jdk-headless and maven"
fi

# The Nomad agent of the real-agent tests (schedulers/nomad, test/e2e;
# EGRET_REQUIRE_NOMAD=1): built once per machine from the module zip of
# github.com/hashicorp/nomad v1.6.3 and cached in ~/.cache/egret
# (scripts/nomad-agent.sh; a few minutes the first time, instant after).
"$(dirname "$0")/nomad-agent.sh" >/dev/null
