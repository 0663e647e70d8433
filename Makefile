# Egret — run `make help` for the targets.
SHELL := /bin/bash
GO ?= go
GOBIN ?= $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION ?= v0.8.2
PROTOC_GEN_GO_VERSION ?= v1.36.12
PROTOC_GEN_GO_GRPC_VERSION ?= v1.3.0
TEST_TIMEOUT ?= 60m
export EGRET_REQUIRE_ZK ?= 1
export EGRET_REQUIRE_HADOOP ?= 1
export EGRET_REQUIRE_KAFKA ?= 1
export EGRET_REQUIRE_PROMETHEUS ?= 1
export EGRET_REQUIRE_CHROMIUM ?= 1
export EGRET_REQUIRE_CARBON ?= 1
export EGRET_REQUIRE_SLURM ?= 1
export EGRET_REQUIRE_NOMAD ?= 1
export EGRET_REQUIRE_K8S ?= 1

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

build: ## build every package and the egret binary into bin/
	$(GO) build ./...
	@mkdir -p bin
	@if [ -d cmd/egret ]; then $(GO) build -o bin/egret ./cmd/egret; fi

# The tests that start a real Kubernetes (internal/k8stest.Require) and the
# backend suite (test/e2e TestBackends) run beside the others, one after the
# other: test-deps starts scripts/k8s-deps.sh in the background (at nice 15),
# so that a first build of Kubernetes overlaps with the suite; the
# real-Kubernetes step waits for it (its lock), then runs them and the
# suite's Kubernetes column.
K8S_TESTS := ^(TestKwok|TestKubelet|TestRealCluster|TestRealPods|TestRealServerChecks|TestKubernetes)
K8S_PKGS := ./internal/k8stest ./schedulers/kubernetes ./test/e2e
BACKEND_SUITE := ^TestBackends$$
K8S_COLUMN := ^TestBackends$$/^kubernetes$$

# Every process the tests start records the config keys it reads here
# (core/spi); scripts/keysread then fails on a documented key nothing read.
KEYS_READ_DIR ?= $(CURDIR)/.keys-read
# make test keeps the output of its go test runs here (its last lines list what failed).
TEST_LOGS ?= $(CURDIR)/.test-logs

test: test-deps ## run every test (installs what the tests need when missing; beside them the backend suite, then the real-Kubernetes tests and the suite's Kubernetes column), then check that every documented config key was read (scripts/keysread); ends with the list of what failed
	@status=0; rm -rf $(KEYS_READ_DIR) $(TEST_LOGS); mkdir -p $(KEYS_READ_DIR) $(TEST_LOGS); export EGRET_KEYS_READ_DIR=$(KEYS_READ_DIR); \
	{ $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(BACKEND_SUITE)' -skip '$(K8S_COLUMN)' ./test/e2e >$(TEST_LOGS)/suite.log 2>&1 || echo "the backend suite" >>$(TEST_LOGS)/failed; \
	  { scripts/k8s-deps.sh && { $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(K8S_TESTS)' $(K8S_PKGS); k=$$?; \
	    $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(K8S_COLUMN)' ./test/e2e && [ $$k = 0 ]; }; } >$(TEST_LOGS)/k8s.log 2>&1 || echo "the real-Kubernetes tests" >>$(TEST_LOGS)/failed; } & side=$$!; \
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -skip '$(K8S_TESTS)|$(BACKEND_SUITE)' ./... 2>&1 | tee $(TEST_LOGS)/all.log; [ $${PIPESTATUS[0]} = 0 ] || status=1; \
	echo "waiting for the backend suite, then the real-Kubernetes tests"; wait $$side; \
	echo "the backend suite:"; cat $(TEST_LOGS)/suite.log; echo "the real-Kubernetes tests:"; cat $(TEST_LOGS)/k8s.log; \
	[ ! -s $(TEST_LOGS)/failed ] || status=1; \
	$(GO) run ./scripts/keysread $(KEYS_READ_DIR) || status=1; \
	if [ $$status != 0 ]; then echo "make test failed; what failed (logs in $(TEST_LOGS)):"; \
		cat $(TEST_LOGS)/failed 2>/dev/null; grep -h -E -e '--- FAIL|^FAIL|^panic:|timed out after' $(TEST_LOGS)/*.log; fi; \
	exit $$status


BACKENDS ?=
backends-matrix: test-deps ## run the backend suite (test/e2e TestBackends: every scenario on every backend, or on BACKENDS, a regexp of backend names) and regenerate docs/backends.md from its results
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '$(BACKEND_SUITE)/$(BACKENDS)' ./test/e2e -args -backends.update

test-deps: ## install the test dependencies (ZooKeeper, Prometheus, Chromium, Slurm and munge, the Python virtualenv of the multilang tests, the Hadoop mini-cluster's and the Kafka broker's Maven jars, the Nomad 1.6.3 agent built from its module; starts the real Kubernetes build of k8s-deps in the background) when missing
	@scripts/test-deps.sh

k8s-deps: ## build the real Kubernetes of the real-cluster tests into ~/.cache/egret-k8s (once per machine, see docs/schedulers/kubernetes.md for how long) and install containerd, runc and the CNI plugins
	@scripts/k8s-deps.sh

IMAGE ?= egret/egret:latest
image: ## build egret's container image without Docker: bin/egret-image.tar (an OCI archive for ctr images import or egret image push --from)
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/egret-linux-$$($(GO) env GOARCH) ./cmd/egret
	bin/egret-linux-$$($(GO) env GOARCH) image build --binary bin/egret-linux-$$($(GO) env GOARCH) --tag $(IMAGE) -o bin/egret-image.tar

# The test programs under testdata directories (./... leaves them out).
TESTDATA_PKGS = $(shell git ls-files '*.go' | grep -E '(^|/)testdata/' | xargs -n1 dirname | sort -u | sed 's|^|./|')

lint: ## gofmt, go vet, staticcheck (also of the test programs under testdata) and the layering of DESIGN.md §3 (scripts/layering)
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... $(TESTDATA_PKGS)
	@[ -x $(GOBIN)/staticcheck ] || GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(GOBIN)/staticcheck ./... $(TESTDATA_PKGS)
	$(GO) run ./scripts/layering

proto: ## regenerate the protobuf and gRPC Go code (needs protoc; installs protoc-gen-go and protoc-gen-go-grpc)
	@command -v protoc >/dev/null || { echo "protoc missing: apt-get install -y protobuf-compiler"; exit 1; }
	@[ -x $(GOBIN)/protoc-gen-go ] || GOFLAGS= $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@[ -x $(GOBIN)/protoc-gen-go-grpc ] || GOFLAGS= $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	PATH=$(GOBIN):$$PATH protoc --go_out=. --go_opt=module=github.com/egret-stream/egret proto/egretpb/*.proto
	PATH=$(GOBIN):$$PATH protoc --go_out=. --go_opt=module=github.com/egret-stream/egret \
		--go-grpc_out=. --go-grpc_opt=module=github.com/egret-stream/egret proto/pluginpb/*.proto

THRIFT_VERSION ?= 0.17.0
thrift: ## regenerate the Go code of the Aurora API subset (needs the thrift $(THRIFT_VERSION) compiler: apt-get install -y thrift-compiler)
	@command -v thrift >/dev/null || { echo "thrift missing: apt-get install -y thrift-compiler"; exit 1; }
	@thrift --version | grep -qx 'Thrift version $(THRIFT_VERSION)' || { echo "need thrift $(THRIFT_VERSION) (the generated code is committed from it), found: $$(thrift --version)"; exit 1; }
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	thrift --gen go:package_prefix=github.com/egret-stream/egret/schedulers/aurora/,skip_remote -out $$tmp schedulers/aurora/auroraapi/aurora.thrift && \
	cp $$tmp/auroraapi/*.go schedulers/aurora/auroraapi/ && gofmt -w schedulers/aurora/auroraapi/

bench: ## run the benchmark suite (calibration, T1-T3 on local clusters 3 runs each, T4 10 min, T5, micro-benchmarks; 40-55 min on this 2-core machine; then the scale harness at N = 10, 100, 300, 3-4 min) and rewrite docs/benchmarks.md
	$(GO) run ./bench/cmd/egret-bench -report docs/benchmarks.md -profile 10
	$(GO) run ./bench/scale/cmd/egret-scale -n 10,100,300 -merge -report docs/benchmarks.md

bench-scale: ## the scale harness (bench/scale: one real topology manager, N stand-in stream managers) at N = 10, 100, 300 (3-4 min); rewrites docs/benchmarks.md §Scale, keeping the N = 1000 row
	$(GO) run ./bench/scale/cmd/egret-scale -n 10,100,300 -merge -report docs/benchmarks.md

bench-scale-large: ## the scale harness at N = 1000 (2-4 min); rewrites docs/benchmarks.md §Scale, keeping the other rows
	$(GO) run ./bench/scale/cmd/egret-scale -n 1000 -merge -report docs/benchmarks.md

bench-quick: ## a one-minute subset of make bench, one run each (results in bench/results/*-quick.json; docs untouched)
	$(GO) run ./bench/cmd/egret-bench -quick

NEXMARK_EVENTS ?= 2000000
nexmark: ## run every Nexmark query (examples/nexmark) on local clusters, both container modes, at-least-once and effectively-once for the stateful ones; rewrites the Nexmark section of docs/benchmarks.md (NEXMARK_EVENTS per run)
	$(GO) run ./bench/cmd/egret-nexmark -events $(NEXMARK_EVENTS) -report docs/benchmarks.md

nexmark-quick: ## four Nexmark queries on 100,000 events each, default container mode, at-least-once (docs untouched)
	$(GO) run ./bench/cmd/egret-nexmark -quick

demo: ## run word count on a local 2-container cluster for 15 s, print live counts and throughput, kill it
	@scripts/demo.sh

demo-local: ## run word count in this one process for 15 s and print the top words and throughput
	$(GO) run ./examples/wordcount --local --duration 15s

.PHONY: help build test backends-matrix test-deps k8s-deps image lint proto thrift bench bench-scale bench-scale-large bench-quick nexmark nexmark-quick demo demo-local
