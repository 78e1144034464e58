# make bench: index build and HTTP benchmarks on a generated catalog of about
# 8,000 bundles with bundle objects (~100 MB of JSON), generated once into tmp/;
# one GVK is provided by 95 bundles and packages have up to hundreds of
# versions, as in published catalogs.
BENCH_CATALOG := $(CURDIR)/tmp/bench-catalog
BENCH_GEN_FLAGS := -packages 300 -bundles 8000 -object-bytes 5500 -wide-gvk-bundles 95 -long-package-bundles 150 -seed 1

$(BENCH_CATALOG)/.done: test/fbcgen/*.go test/gen/*.go
	rm -rf $(BENCH_CATALOG)
	$(GO) run ./test/gen -out $(BENCH_CATALOG) $(BENCH_GEN_FLAGS)
	touch $@

# A catalog of about 1.3 GB whose bundles carry their CRDs, about 2 MB of
# base64 each, as olm.bundle.object: the largest single blobs (issue 9),
# and the GiB catalog BenchmarkBulk serves against its http.ServeFile floor
# (issue 16). Benchmarks that report peak RSS run in processes of their own: a process
# keeps the memory an earlier benchmark took.
BENCH_CRD_CATALOG := $(CURDIR)/tmp/bench-crd-catalog
BENCH_CRD_GEN_FLAGS := -packages 40 -bundles 160 -object-bytes 12000 -crd-bytes 2000000 -seed 1

$(BENCH_CRD_CATALOG)/.done: test/fbcgen/*.go test/gen/*.go
	rm -rf $(BENCH_CRD_CATALOG)
	$(GO) run ./test/gen -out $(BENCH_CRD_CATALOG) $(BENCH_CRD_GEN_FLAGS)
	touch $@

# BenchmarkBuildIncremental: full against incremental builds after 1, 10
# and 100 packages changed, on both catalogs above, one process per figure
# so that each peak RSS is its own (100 is skipped where a catalog has too
# few packages).
#
# opm, the operator-registry version in go.mod built from hack/opm, is what
# bench compares kubectl catalog with and bench-validate compares
# catalogd validate with.
OPM := $(BIN)/opm
OPM_TAGS := containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper

$(OPM): hack/opm/go.mod hack/opm/go.sum
	cd hack/opm && $(GO) build -tags '$(OPM_TAGS)' -o $@ github.com/operator-framework/operator-registry/cmd/opm

# The registry API's differential test (internal/grpcapi) runs opm serve
# itself, so make test builds it as it builds envtest's binaries.
TEST_DEPS += $(OPM)

.PHONY: opm
## opm: bin/opm, operator-registry's opm at go.mod's version, what the registry API's differential test and the benchmarks compare with.
opm: $(OPM)

# A GB of each bomb shape of issue 18 (spaces, newlines, YAML separators,
# comment lines, one JSON string) beside a valid catalog, fed to the
# catalogd binary: its VmHWM and the time to refuse each (goal: at most
# 150 MiB, time linear in the bytes; CATALOGD_BOMB_MIB sets the sizes).
# About 1 GB of disk at a time.
#
# kubectl catalog's commands are timed end to end (process start included)
# against catalogd serve, offline warm and offline cold, beside opm alpha list
# ($(OPM)).
#
# `catalogd serve` from an image, a git repository and an archive of the
# bench catalog, each from loopback servers: time to Serving and peak RSS
# (test/sources).
#
# `catalogd serve` of each bench catalog's image with the index `catalogd
# index publish` pushed beside it, taken (prebuilt) and built
# (--prebuilt-index=false): time to Serving, CPU, peak RSS, bytes
# downloaded (BenchmarkPrebuilt, test/sources). The same for a
# ClusterCatalog served by `catalogd-manager manager` on envtest's API server, from
# its creation until the API server shows it Serving
# (BenchmarkPrebuiltManager, test/e2e).
#
# `catalogd validate` is timed against `opm validate` on community-v4.20,
# the real catalog whose figure is the one watched (see bench-validate).
#
# `catalogd serve --watch` on a copy of each catalog (1.4 GB more of
# disk while it runs): one bundle edited in 1 and in 10 packages' files,
# the time from the save to the new digest and to the edited bundle
# served, with incremental index builds and with --incremental-index=false.
#
# The 50,000-bundle replaces chain is served in a process of its own too:
# its upgrade, channel and page latencies (BenchmarkReplacesChainHTTP) are
# those of one package far longer than any in the generated catalog.
.PHONY: bench
## bench: index, query and kubectl catalog benchmarks on generated catalogs (tmp/), opm beside them; catalogd validate against opm validate on community-v4.20.
bench: $(BENCH_CATALOG)/.done $(BENCH_CRD_CATALOG)/.done $(OPM) build envtest-bins
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'Parse|Build$$|BuildToParse' -benchtime 3x -benchmem ./internal/index/
	CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'BuildCRDObjects' -benchtime 1x -benchmem ./internal/index/
	CATALOGD_BENCH_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'Read$$' -benchtime 3x ./internal/catalogdir/
	for c in bench:CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) crd:CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG); do \
		for m in full 1 10 100 1-hashing; do \
			env $${c#*:} $(GO) test -run '^$$' -bench "BuildIncremental/$${c%%:*}/$$m\$$" -benchtime 1x ./internal/index/ || exit 1; \
		done; \
	done
	$(GO) test -run '^$$' -bench 'BuildReplacesChain/10000' -benchtime 1x ./internal/index/
	$(GO) test -run '^$$' -bench 'BuildReplacesChain/50000' -benchtime 1x ./internal/index/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench . -skip 'ReplacesChainHTTP' -benchtime 1x -timeout 30m ./internal/httpapi/
	$(GO) test -run '^$$' -bench 'ReplacesChainHTTP' -benchtime 1x ./internal/httpapi/
	CATALOGD_BENCH_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'Bulk' -benchtime 1x -timeout 30m ./internal/httpapi/
	$(GO) test -run '^$$' -bench 'Bombs' -benchtime 1x -timeout 30m ./test/stress/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'Serve' -benchtime 3x -timeout 30m ./test/sources/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'Prebuilt' -benchtime 1x -timeout 30m ./test/sources/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'PrebuiltManager' -benchtime 1x -timeout 30m ./test/e2e/
	$(MAKE) --no-print-directory bench-firstbuild
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'WatchEdit' -benchtime 3x -timeout 30m ./test/stress/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) OPM=$(OPM) $(GO) test -run '^$$' -bench 'Commands' -benchtime 3x -timeout 30m ./internal/catalogcli/
	$(call validate_vs_opm,$(COMMUNITY_CATALOG))
	$(MAKE) --no-print-directory bench-packageapi
	$(MAKE) --no-print-directory bench-grpc
	$(MAKE) --no-print-directory bench-grpc-memory
	$(MAKE) --no-print-directory bench-memory

# make bench-grpc: issue 38's figures, BenchmarkRegistryVsOPM: every method
# of OLM v0's registry API on the bench catalog, answered by catalogd and by
# opm serve ($(OPM)), p50 of 20 calls each, with the load beside it.
.PHONY: bench-grpc
## bench-grpc: OLM v0's registry API (gRPC) against opm serve on the bench catalog, p50 per method.
bench-grpc: $(BENCH_CATALOG)/.done $(OPM)
	@echo "== BenchmarkRegistryVsOPM ($$(uptime | sed 's/.*load/load/'))"
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) OPM=$(OPM) $(GO) test -run '^$$' -bench 'RegistryVsOPM' -benchtime 20x -timeout 30m ./internal/grpcapi/

# make bench-grpc-memory: what the registry API adds to an idle catalogd
# serve on the bench catalog (goal: at most 16 MiB), idle and after every
# bundle was asked, beside opm serve's, three runs, each a new process.
.PHONY: bench-grpc-memory
## bench-grpc-memory: idle RSS of catalogd serve without and with --grpc-listen (and after asking every bundle) on the bench catalog, beside opm serve's.
bench-grpc-memory: $(BENCH_CATALOG)/.done $(OPM)
	@echo "== BenchmarkRegistryMemory ($$(uptime | sed 's/.*load/load/'))"
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) OPM=$(OPM) $(GO) test -run '^$$' -bench 'RegistryMemory' -benchtime 1x -count 3 -timeout 60m ./test/stress/

# make bench-packageapi: issue 26's figures, BenchmarkPackageAPI on the bench
# catalog against envtest, three runs, each a process of its own (its RSS
# growth is the process's) with the load beside it: a list of every
# PackageManifest and a get of one over HTTPS with token and access review
# (goals 300 ms, 20 ms), the worst time from a swap to its watch event over
# ten swaps (goal 1 s), and the resident memory the server adds (goal 20
# MiB; BenchmarkManagerMemory in bench-memory measures the real binaries).
.PHONY: bench-packageapi
## bench-packageapi: the package API's list, get, watch-after-swap and RSS growth on the bench catalog, three runs with the load.
bench-packageapi: $(BENCH_CATALOG)/.done envtest-bins
	for i in 1 2 3; do \
		echo "== BenchmarkPackageAPI ($$(uptime | sed 's/.*load/load/'))"; \
		CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -tags $(PACKAGEAPI_TAGS) -run '^$$' -bench 'PackageAPI' -timeout 30m ./internal/packageapi/ || exit 1; \
		CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -tags $(PACKAGEAPI_TAGS) -run '^$$' -bench 'PackageAPI/WatchAfterSwap' -benchtime 10x -timeout 30m ./internal/packageapi/ || exit 1; \
	done

# make bench-memory: the real binary's memory on the bench catalog and on
# community-v4.20 (skipped where ../shared is absent), and that of
# catalogd-package-api (-tags manager,packageapi) on the bench catalog, three runs
# of each, each a new `catalogd serve` with an empty data directory: the build's
# peak (VmHWM) and the resident set idle after it, split into the
# binary's pages and the heaps (see BenchmarkServeMemory in test/stress).
# Then `catalogd manager` against envtest on the bench catalog as a
# ClusterCatalog: catalogd-manager, catalogd-package-api without and with
# --package-api, idle and after a list, start-up pages given back and kept
# (BenchmarkManagerMemory). Then a server's memory under eight readers
# (BenchmarkReadersMemory, in process), with SQLite's share of it as SQLite
# counts it. Load is printed first: the figures mean little on a busy
# machine.
.PHONY: bench-memory
## bench-memory: peak RSS of the first index build and idle RSS after it, catalogd serve on the bench catalog and community-v4.20, catalogd-package-api on the bench catalog.
bench-memory: $(BENCH_CATALOG)/.done envtest-bins
	@echo "== bench-memory ($$(uptime | sed 's/.*load/load/'))"
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'ServeMemory|ManagerMemory' -benchtime 1x -count 3 -timeout 60m ./test/stress/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'ReadersMemory' -benchtime 1x -count 3 -timeout 30m ./test/readermemory/
	@echo "== bench-memory done ($$(uptime | sed 's/.*load/load/'))"

# The real published catalog, beside the worktree: the figure of
# `catalogd validate` against `opm validate` watched is the one on it.
COMMUNITY_CATALOG := $(abspath $(CURDIR)/../shared/catalogs/community-v4.20)

# validate_vs_opm DIR: three alternating runs of `opm validate` and
# `catalogd validate` on DIR, wall time and peak RSS of each process, or a
# message saying why they are skipped (DIR or opm absent). Load is printed
# first: the figures mean little on a busy machine.
define validate_vs_opm
	@if [ ! -d "$(1)" ]; then echo "bench-validate: skipping $(1): it is absent"; \
	elif [ ! -x "$(OPM)" ]; then echo "bench-validate: skipping $(1): $(OPM) is absent"; \
	else echo "== $(1) ($$(uptime | sed 's/.*load/load/'))"; \
		for i in 1 2 3; do \
			/usr/bin/time -f "opm validate:      %e s wall, %M KiB peak RSS" $(OPM) validate "$(1)" >/dev/null || exit 1; \
			/usr/bin/time -f "catalogd validate: %e s wall, %M KiB peak RSS" $(BIN)/catalogd validate "$(1)" >/dev/null || exit 1; \
		done; \
	fi
endef

# make bench-validate: `catalogd validate` against `opm validate` on
# community-v4.20 (skipped where ../shared is absent) and on the bench
# catalog.
.PHONY: bench-validate
## bench-validate: catalogd validate against opm validate, time and peak RSS, on community-v4.20 (where ../shared has it) and the bench catalog.
bench-validate: $(BENCH_CATALOG)/.done $(OPM) build
	$(call validate_vs_opm,$(COMMUNITY_CATALOG))
	$(call validate_vs_opm,$(BENCH_CATALOG))

# make bench-firstbuild: issue 35's figures, our side: `catalogd serve` of
# the bench catalog as a directory on an empty data directory, from start
# to Serving, five runs, each a process of its own (BenchmarkFirstBuild in
# test/sources): wall, CPU (user+sys) and peak RSS, with the default flags
# and with --page-out-startup=false (keep-pages). Load is printed before
# and after: the figures mean little on a busy machine.
.PHONY: bench-firstbuild
## bench-firstbuild: catalogd serve's first build of the bench catalog until Serving (wall, CPU, peak RSS), five runs with the load.
bench-firstbuild: $(BENCH_CATALOG)/.done
	@echo "== bench-firstbuild ($$(uptime | sed 's/.*load/load/'))"
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'FirstBuild' -benchtime 1x -count 5 -timeout 30m ./test/sources/
	@echo "== bench-firstbuild done ($$(uptime | sed 's/.*load/load/'))"

# make bench-incremental: the figures of issue 25, each three times with
# the load beside it: BenchmarkBuildIncremental after 1 and 10 changed
# packages and in full on both catalogs (time, peak RSS, bytes written;
# one process per figure), BenchmarkBulk's /all (plain, gzip, TLS, beside
# http.ServeFile of the same bytes) on both, and BenchmarkWatchEdit, the
# time from a save to the edit served with --watch on both (incremental
# and full builds: the ratio issue 35 asks for).
.PHONY: bench-incremental
## bench-incremental: incremental builds, /all serving and --watch edits on both bench catalogs, three runs each with the load.
bench-incremental: $(BENCH_CATALOG)/.done $(BENCH_CRD_CATALOG)/.done
	for c in bench:CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) crd:CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG); do \
		for m in 1 10 full; do \
			for i in 1 2 3; do \
				echo "== BuildIncremental/$${c%%:*}/$$m ($$(uptime | sed 's/.*load/load/'))"; \
				env $${c#*:} $(GO) test -run '^$$' -bench "BuildIncremental/$${c%%:*}/$$m\$$" -benchtime 1x ./internal/index/ || exit 1; \
			done; \
		done; \
	done
	for c in $(BENCH_CATALOG) $(BENCH_CRD_CATALOG); do \
		for i in 1 2 3; do \
			echo "== Bulk/all $$c ($$(uptime | sed 's/.*load/load/'))"; \
			CATALOGD_BENCH_CATALOG=$$c $(GO) test -run '^$$' -bench 'Bulk/all' -benchtime 1x -timeout 30m ./internal/httpapi/ || exit 1; \
		done; \
	done
	@echo "== WatchEdit ($$(uptime | sed 's/.*load/load/'))"
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) CATALOGD_BENCH_CRD_CATALOG=$(BENCH_CRD_CATALOG) $(GO) test -run '^$$' -bench 'WatchEdit' -benchtime 3x -timeout 30m ./test/stress/
