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

.PHONY: bench
bench: $(BENCH_CATALOG)/.done
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench 'Parse|Build' -benchtime 3x -benchmem ./internal/index/
	CATALOGD_BENCH_CATALOG=$(BENCH_CATALOG) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./internal/httpapi/
