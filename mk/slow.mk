# make test-slow: the long stress runs of test/stress, kept out of `make test`
# for their time (several minutes): 50 SIGKILLs in index builds and swaps
# from each of a directory and an image, on a catalog of 1500 bundles
# (TestCrashDuringBuild), 100 rebuilds under concurrent load
# (TestRebuildUnderLoad) and a catalog directory of a million tiny files
# (TestMillionTinyFiles, about 4 GB of disk while it runs). `make test` runs
# their short versions: 6 and 4 kills on a catalog of 150 bundles (more, up
# to 10, until one kill landed in a build and one in a swap), 10 rebuilds,
# and just over the 100,000 files a catalog may hold, as hard links. Knobs,
# from the environment: CATALOGD_STRESS_KILLS, CATALOGD_STRESS_SWAPS,
# CATALOGD_STRESS_SEED (the kill delays), CATALOGD_STRESS_REQUESTS (the load's
# request budget).

.PHONY: test-slow

## test-slow: crash, full-disk, load and hostile-client tests at full length.
test-slow:
	CATALOGD_SLOW=1 $(GO) test -count=1 -timeout 60m -v ./test/stress/ 2>&1 | \
		grep -E '^(=== RUN|--- |PASS|FAIL|ok)|(crash|load|hostile|files|fuzz|stress)_test.go'
