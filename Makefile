# sink: build and test entry points. `make help` lists the targets.
#
# `make run` runs the main job end to end on the local stack (scripts/demo).

SHELL := /usr/bin/env bash
STACK := scripts/stack
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_TEST_FLAGS ?= -race -count=1 -timeout 25m

.PHONY: help build run test test-clean test-ring test-chaos lint stack-up stack-down stack-status bench

# staticcheck, pinned: `go run` fetches this version through the Go module proxy and caches the build, so a
# fresh machine needs nothing installed beforehand. Raise it deliberately (the newest that supports our Go).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

help:
	@echo "make build        build bin/sink (version $(VERSION))"
	@echo "make run          the main job end to end: stack up, schema, sample events, sink run until caught up,"
	@echo "                  SIGTERM, summary (scripts/demo; DEMO_COUNT, DEMO_BAD_FRACTION, DEMO_CONFIG)"
	@echo "make test         start the local Kafka + Cassandra + schema registry stack, its secured pair and a three-node"
	@echo "                  Cassandra ring"
	@echo "                  (if needed) and run every test against them;"
	@echo "                  the stack stays up for the next run (STACK_DOWN=1 make test stops it afterwards)"
	@echo "make test-clean   make test, then stop the stack"
	@echo "make test-ring    only the ring tests (also part of make test), starting the ring if needed"
	@echo "make test-chaos   only the churn tests (build tag chaos; about three minutes, also part of make test): sink run"
	@echo "                  killed every 3 to 15 s beside a member joining and leaving"
	@echo "make lint         staticcheck ($(STATICCHECK)) over the module (also part of make test)"
	@echo "make stack-up / stack-down / stack-status"
	@echo "make bench        end-to-end benchmark on the local stack: sink vs the raw Cassandra ceiling, 1,000,000 events;"
	@echo "                  result JSON in bench/results (BENCH_FLAGS, e.g. BENCH_FLAGS=\"--events 200000 --quick\")"

build:
	go build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/sink ./cmd/sink

run:
	scripts/demo

# With SINK_TEST_KAFKA, SINK_TEST_CASSANDRA and SINK_TEST_REGISTRY all set, the tests use those servers and the stack
# is not touched. Otherwise the stack (Kafka, Cassandra, the schema registry) is started with its secured servers and
# a three-node Cassandra ring (`up --secure --cassandra-nodes 3`; a no-op for what already serves) and the addresses,
# certificate directory, password files and ring nodes are exported (SINK_TEST_*, SINK_TEST_SECURE_*,
# SINK_TEST_RING*). The ring tests stop and start nodes, so they run in a second pass of their own after everything
# else, never beside other tests. staticcheck runs beside the first pass (it needs no stack, and its first, uncached
# run then adds no wall time); its findings are printed after that pass. The exit status fails if go test (either
# pass) or staticcheck fails, also when STACK_DOWN=1 stops the stack afterwards. scripts/pyclients (the Python
# environment of the tests that produce through Confluent's Python serializers) runs beside the stack's start, so a
# cold install (about a minute) costs no wall time; the tests run it again, which waits for it and is a no-op then.
PYCLIENTS := scripts/pyclients
RING_TESTS := ^(TestEveryBatchIsCoordinatedByAReplicaOfItsPartition|TestLocalQuorumKeepsWritingWithOneReplicaDownAndResumesAfterTwo|TestReadinessFollowsWhetherWritesCanSucceedAtQuorum)$$
RING_PKGS := ./cassandra ./internal/secured

test:
	@py_log=$$(mktemp); \
	$(PYCLIENTS) >"$$py_log" 2>&1 & py_pid=$$!; \
	if [[ -n "$$SINK_TEST_KAFKA" && -n "$$SINK_TEST_CASSANDRA" && -n "$$SINK_TEST_REGISTRY" ]]; then \
		echo "make test: using SINK_TEST_KAFKA=$$SINK_TEST_KAFKA SINK_TEST_CASSANDRA=$$SINK_TEST_CASSANDRA SINK_TEST_REGISTRY=$$SINK_TEST_REGISTRY"; \
	else \
		$(STACK) up --secure --cassandra-nodes 3 || exit 1; \
		export $$($(STACK) env); \
	fi; \
	status=0; \
	lint_log=$$(mktemp); \
	go run $(STATICCHECK) ./... >"$$lint_log" 2>&1 & lint_pid=$$!; \
	go test $(GO_TEST_FLAGS) -skip '$(RING_TESTS)' ./... || status=$$?; \
	if ! wait $$py_pid; then echo "--- scripts/pyclients failed (the Python client tests say so too)"; cat "$$py_log"; fi; \
	rm -f "$$py_log"; \
	echo "--- staticcheck"; \
	if wait $$lint_pid; then echo "staticcheck: no findings"; else cat "$$lint_log"; status=1; fi; \
	rm -f "$$lint_log"; \
	(cd deploy/checks && GOFLAGS="$$GOFLAGS -mod=mod" go test -count=1 -timeout 15m ./...) || status=$$?; \
	echo "--- ring tests (three-node Cassandra)"; \
	go test $(GO_TEST_FLAGS) -run '$(RING_TESTS)' $(RING_PKGS) || status=$$?; \
	echo "--- churn tests (sink run killed every 3 to 15 s)"; \
	go test -count=1 -timeout 20m -tags chaos -run '$(CHAOS_TESTS)' ./pipeline || status=$$?; \
	if [[ "$(STACK_DOWN)" == 1 ]]; then $(STACK) down; fi; \
	exit $$status

# Only the ring tests, on the ring (started if needed).
test-ring:
	@$(STACK) up --cassandra-nodes 3 || exit 1; \
	export $$($(STACK) env); \
	go test $(GO_TEST_FLAGS) -run '$(RING_TESTS)' $(RING_PKGS)

# Only the churn tests (build tag chaos; also the last pass of `make test`, alone, as they kill and restart the
# sink for minutes). Like `make test`, they use the SINK_TEST_* servers when set, else the stack.
CHAOS_TESTS := ^TestChaos
test-chaos:
	@if [[ -z "$$SINK_TEST_KAFKA" || -z "$$SINK_TEST_CASSANDRA" ]]; then \
		$(STACK) up || exit 1; \
		export $$($(STACK) env); \
	fi; \
	go test -count=1 -timeout 20m -tags chaos -run '$(CHAOS_TESTS)' ./pipeline

lint:
	go run $(STATICCHECK) ./...

test-clean:
	@$(MAKE) --no-print-directory test STACK_DOWN=1

stack-up:
	$(STACK) up

stack-down:
	$(STACK) down

stack-status:
	$(STACK) status

# The full benchmark (package bench, docs/PERFORMANCE.md). It measures the binary it runs from, so it builds first.
bench: build
	@$(STACK) up || exit 1; \
	export $$($(STACK) env); \
	bin/sink bench --brokers "$$SINK_TEST_KAFKA" --cassandra "$$SINK_TEST_CASSANDRA" $(BENCH_FLAGS)
