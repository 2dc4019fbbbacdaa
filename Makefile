# drover — the two commands a newcomer needs are `make run` and `make test` (see README.md).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
VITEST := npx vitest run --reporter=default --reporter=json
RESULTS := .run/test-results
TIERS := unit int host k8s e2e proof

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

node_modules/.stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.stamp tools ## install npm packages and build/install the servers (cached)

tools: ## build nats-server and FerretDB from Go modules into .tools/bin, install Redis and kubectl (kubernetes-client) from Debian if missing
	@scripts/install-tools.sh

infra-up: deps ## start nats-server, FerretDB and Redis on loopback (idempotent; prints where)
	@scripts/infra-up.sh

infra-down: ## stop exactly what infra-up started
	@scripts/infra-down.sh

run: deps ## bring up the infrastructure and the whole control plane (process hosts) on this machine
	@scripts/run.sh

stop: ## stop what `make run` started
	@scripts/run.sh --stop

lint: node_modules/.stamp ## eslint (boundary rules: pure domain, no service→service imports) and prettier --check (width 120)
	npx eslint .
	npx prettier --check --log-level warn "**/*.{ts,mjs,js}"

typecheck: node_modules/.stamp ## tsc --noEmit, strict
	npx tsc -p tsconfig.json --noEmit

# tsc (~65 s of one core) and eslint + prettier (~25 s of one core) are independent and each
# single-threaded: on 2 cores they run side by side; -O keeps each one's output together.
check: node_modules/.stamp ## lint + typecheck (side by side)
	@$(MAKE) --no-print-directory -j2 -O lint typecheck

format: node_modules/.stamp ## rewrite every TypeScript/JavaScript file with prettier (width 120, .prettierrc.json)
	npx prettier --write --log-level warn "**/*.{ts,mjs,js}"

# A tier runs only when it has test files, so an empty tier is reported, never counted as a pass.
define tier
test-$(1): deps ## run the $(1) test tier
	@mkdir -p $(RESULTS); rm -f $(RESULTS)/$(1).json
	@if [[ -n "$$$$(scripts/tier-files.sh $(1))" ]]; then $(VITEST) --project $(1) --outputFile.json=$(RESULTS)/$(1).json; \
	 else echo "[drover] tier $(1): no test files yet"; fi
endef
$(foreach t,$(TIERS),$(eval $(call tier,$(t))))

test: deps check ## lint, typecheck and every test tier (unit, int, host, k8s, e2e, proof), then a summary
	@rm -rf $(RESULTS); status=0; for t in $(TIERS); do $(MAKE) --no-print-directory test-$$t || status=1; done; \
	 node scripts/test-summary.mjs $(RESULTS); exit $$status

bench: deps k8s-build ## run every benchmark (bench/*.bench.ts, with tsx, against private servers); merges into bench/results/latest.json
	@for f in bench/*.bench.ts; do echo "[drover] bench $$f"; node --import tsx "$$f"; done

k8s-build: ## build kube-apiserver, kubelet, kube-scheduler, kube-controller-manager, etcd and pause from Go modules (+ Debian's containerd, runc, CNI plugins, umoci, skopeo) into k8s/local-cluster/bin (cached)
	@k8s/local-cluster/build.sh

k8s-up: node_modules/.stamp k8s-build ## start the local Kubernetes cluster (real API server, scheduler, controller manager, a real node: upstream kubelet + containerd + runc, gateway); prints the kubeconfig path
	@node --import tsx k8s/local-cluster/cli.ts up

k8s-down: node_modules/.stamp ## stop exactly what k8s-up started (API server, etcd, scheduler, controller manager, kubelet, containerd, gateway, every container, mount, link and cgroup)
	@node --import tsx k8s/local-cluster/cli.ts down

image: node_modules/.stamp k8s-build ## build the pause and runtime images as archives without a daemon (.run/images/*.tar; k8s/image/build.sh)
	@k8s/image/build.sh all

# The k8s tier runs against a real kube-apiserver: build it first (a no-op when cached).
test-k8s: k8s-build
.PHONY: k8s-build k8s-up k8s-down image

test-restarts: deps ## the whole-stack restart test alone (six starts on a 20,000-event stream; also part of make test's e2e tier)
	npx vitest run --project e2e test/e2e/stack-restarts.e2e.test.ts

test-flood: deps ## fairness under a flood at the issue's scale: 10 000 runs from one tenant, another's steady runs' p99 at most 1.5x its p99 alone (longer than make test; make test floods 400)
	DROVER_FLOOD_RUNS=10000 DROVER_FLOOD_MAX_QUEUED=10000 DROVER_FLOOD_BASELINE_RUNS=200 DROVER_FLOOD_P99_RATIO=1.5 npx vitest run --project e2e test/e2e/fairness-flood.e2e.test.ts

test-proof-long: deps ## the proof at P=20 over HTTP and gRPC, three rounds in a row (longer than make test)
	PROOF_PARALLEL=20 PROOF_ROUNDS=3 npx vitest run --project proof

fuzz: node_modules/.stamp ## the event fuzz target, long: FUZZ_RUNS (default 20000) mutated message sequences through the decoders and every follower's fold (make test runs 100; FUZZ_SEED reproduces)
	nice -n 10 node --import tsx test/fuzz/run.ts

PROOF_P ?= 5
PROOF_WORKLOAD ?= builtin
proof: deps ## the crash-recovery proof against the real services: P=$(PROOF_P) over HTTP, then over gRPC (PROOF_P=15 make proof; PROOF_WORKLOAD=custom: tenant code; PROOF_WORKLOAD=control-flow: a map and a wait)
	@node --import tsx cli/drover.ts proof --parallel $(PROOF_P) --workload $(PROOF_WORKLOAD) --transport http
	@node --import tsx cli/drover.ts proof --parallel $(PROOF_P) --workload $(PROOF_WORKLOAD) --transport grpc

proof-k8s: deps k8s-build ## the proof with runtime Pods on a private local cluster: P=$(PROOF_P) over HTTP by Pod IP, gRPC through the shared Gateway, gRPC through NodePort Services
	@node --import tsx cli/drover.ts proof --parallel $(PROOF_P) --workload $(PROOF_WORKLOAD) --host kubernetes --exposure pod-ip --transport http
	@node --import tsx cli/drover.ts proof --parallel $(PROOF_P) --workload $(PROOF_WORKLOAD) --host kubernetes --exposure gateway --transport grpc
	@node --import tsx cli/drover.ts proof --parallel $(PROOF_P) --workload $(PROOF_WORKLOAD) --host kubernetes --exposure node-port --transport grpc

drover: node_modules/.stamp ## the operator CLI, e.g. make drover ARGS="replay run <sharedRunId>" (reads NATS_URL; exit 0 match, 1 divergence, 2 usage)
	@node --import tsx cli/drover.ts $(ARGS)

clean: ## remove run state and test results (keeps the cached tool builds)
	rm -rf .run

.PHONY: help deps tools infra-up infra-down run stop lint typecheck check test bench fuzz proof proof-k8s test-proof-long test-flood drover clean $(addprefix test-,$(TIERS))
