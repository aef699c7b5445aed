# idforge: the two commands a new machine needs are `make run` and `make test`.
# Each installs what is missing (scripts/install-deps), builds, then runs or tests.

JOBS ?= $(shell nproc)
# Tests ctest runs at once under the sanitizers: one more than the cores, as most of them
# wait on servers, leases and timeouts. On this 2-vCPU VM (2026-11-29) the ASan stage took
# 360 s at 3 against about 470 at 2, all passing, once the 8-thread concurrency suites
# had moved to TSan only (with them, tests that time the server under load failed at 3).
TEST_JOBS ?= $(shell echo $$(( $(JOBS) + 1 )))
CMAKE ?= cmake
SECONDS ?= 2

.PHONY: all deps deps-build deps-background build binary deb run demo test test-build test-unit test-tsan test-asan test-fuzz bench bench-load bench-floor bench-tags bench-security bench-stores bench-clients fuzz torture screenshot format clean

all: build

deps:
	@scripts/install-deps

# What building needs, without the servers the tests run (scripts/install-deps).
deps-build:
	@scripts/install-deps build

# The test servers, installed in the background while `make test` builds; a step that
# needs them first runs `scripts/install-deps --wait build`.
deps-background: deps-build
	@scripts/install-deps --background build

build: deps
	@$(CMAKE) --preset release >/dev/null
	@$(CMAKE) --build --preset release -j $(JOBS)

# The binary alone (build/idforge), for what runs it: no test or benchmark programs.
binary: deps-build
	@$(CMAKE) --preset release >/dev/null
	@$(CMAKE) --build --preset release -j $(JOBS) --target idforge

# The Debian package build/idforge_<version>_<arch>.deb: the binary, its man pages, a
# default /etc/idforge/idforge.toml and the systemd unit idforge.service
# (docs/operations.md, "Installing the Debian package"). tests/package/check.sh checks it.
deb: build
	@$(CMAKE) --build --preset release --target deb

# The server on embedded defaults (SQLite and local worker ids in ./idforge-data, HTTP
# on 127.0.0.1:8080, Redis protocol on 127.0.0.1:6380), in the foreground: it prints
# its URLs; Ctrl-C stops it (gracefully: in-flight requests finish, the lease is freed).
run: binary
	@build/idforge serve

# The command line on defaults: a few IDs, one decoded, the default layout.
demo: binary
	@scripts/run-demo build/idforge

# Concurrency tests under ThreadSanitizer; unit, server and integration tests under
# ASan + UBSan; each fuzz target for a few seconds; then the release binary's tests (e2e,
# browser, the short torture run). ctest runs last so its summary line closes the output;
# at one more test than the cores, as the torture run, started first, keeps 1.2 of them busy.
test: deps-background test-build test-tsan test-asan test-fuzz
	@ctest --test-dir build --output-on-failure --no-label-summary -j $(TEST_JOBS) \
	  -L 'e2e|torture-short'

# What the release tests run: the binary, the end-to-end tests, the torture run (g++;
# the unit, server and integration tests build and run with clang under the sanitizers).
test-build: deps-build
	@$(CMAKE) --preset release >/dev/null
	@$(CMAKE) --build --preset release -j $(JOBS) --target idforge idforge_e2e_tests idforge_torture

# A few seconds per fuzz target, built in the ASan tree by test-asan's own build (one ninja
# run keeps both cores busy to its end), here only run (make fuzz for real runs).
test-fuzz: test-asan
	@FUZZ_PRESET=asan FUZZ_BUILD=build-asan scripts/fuzz 3

# The concurrency suites (test names *Concurrency.*, millions of IDs from 8 threads) run
# under ThreadSanitizer, where a race shows, and not again under ASan, where they took 97
# of the stage's 1,000 test-seconds with both cores busy (2026-11-29). tests/CMakeLists.txt
# fails the configure if a file defining one is not built for TSan.
CONCURRENCY_SUITES = Concurrency

# Built file by file (the tsan preset sets IDFORGE_UNITY=OFF), so a file that does not
# include what it uses fails here even where a unity batch would hide it.
test-tsan: deps-build
	@$(CMAKE) --preset tsan >/dev/null
	@$(CMAKE) --build --preset tsan -j $(JOBS) --target idforge_tsan_tests
	@echo "== ThreadSanitizer: concurrency tests and the server's event loops"
	@TSAN_OPTIONS="halt_on_error=1" build-tsan/tests/idforge_tsan_tests \
	  --gtest_filter='*$(CONCURRENCY_SUITES)*:Net*:ParseEndpoint*' --gtest_brief=1

# Unit, server and integration tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (clang 14), but the concurrency suites (above). The e2e tests run the release binary in
# `make test`.
# Their servers' and nodes' directories (IDFORGE_TEST_TMPDIR) go to /dev/shm when it has
# 4 GB free: an fsync there returns at once, so three tests at a time do not wait on each
# other's flushes (the stage took 189 to 206 s there against 243 s on disk, 2026-11-29).
# What a killed server or node leaves behind is the same as on disk.
ASAN_TARGETS = idforge idforge_unit_tests idforge_server_tests idforge_net_portable_tests \
  idforge_integration_tests idforge_fuzz
TEST_TMPDIR ?= $(shell [ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}')" -gt 4000000 ] \
  2>/dev/null && echo /dev/shm || echo /tmp)
test-asan: deps-build
	@$(CMAKE) --preset asan -DIDFORGE_FUZZ=ON >/dev/null
	@$(CMAKE) --build --preset asan -j $(JOBS) --target $(ASAN_TARGETS)
	@scripts/install-deps --wait build
	@echo "== AddressSanitizer + UBSan: unit, server and integration tests (directories in $(TEST_TMPDIR))"
	@ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
	  IDFORGE_TEST_TMPDIR=$(TEST_TMPDIR) ctest --test-dir build-asan --output-on-failure --no-label-summary -j $(TEST_JOBS) \
	  -L 'unit|server|integration' -E '$(CONCURRENCY_SUITES)\.'

bench: build
	@build/idforge bench --seconds $(SECONDS)
	@build/bench/idforge_micro_bench --benchmark_min_time=0.2

# The server under load beside redis-server and nginx (docs/benchmarks.md).
bench-load: build
	@bench/load/run.sh --idforge build/idforge

# Segment IDs through the server on PostgreSQL and MariaDB (docs/benchmarks.md).
bench-stores: build
	@bench/load/stores.sh --idforge build/idforge

# What the fleet floor costs per registry kind: ranges/s with and without it
# (docs/benchmarks.md, "The fleet floor").
FLOOR_MS ?= 2000
bench-floor: build
	@$(CMAKE) --build --preset release -j $(JOBS) --target idforge_integration_tests
	@IDFORGE_FLOOR_BENCH_MS=$(FLOOR_MS) build/tests/idforge_integration_tests \
	  --gtest_filter='FleetFloorCostTest.*'

# One node with 1,000, 10,000 and 50,000 tags: time to every tag's first ID beside the
# store's own rate, memory, /metrics and /v1/status (docs/benchmarks.md, "Many tags").
TAGS ?= 1000,10000,50000
bench-tags: build
	@bench/load/tags.py --idforge build/idforge --tags $(TAGS)

# TLS against plain TCP, tokens, and small requests' p99 beside maximum batches
# (docs/benchmarks.md, "Security").
bench-security: build
	@bench/load/security.sh --idforge build/idforge

# The seven clients' next() with and without their buffer, beside an in-process counter
# (docs/benchmarks.md, "Clients").
bench-clients: build
	@bench/clients/run.sh --idforge build/idforge

# libFuzzer targets (clang), each for SECONDS (docs/reliability.md, "Fuzzing").
fuzz: deps
	@scripts/fuzz $(SECONDS)

# The torture run for MINUTES (docs/reliability.md, "Torture run"); a short version
# runs in make test.
MINUTES ?= 10
torture: build
	@scripts/torture $(MINUTES)

# Refreshes docs/img/web-page.png from the browser test.
screenshot: build
	@IDFORGE_SCREENSHOT=docs/img/web-page.png scripts/browser-test build/idforge

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf build build-debug build-asan build-tsan build-clang
