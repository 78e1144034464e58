# make fuzz: runs every fuzz target of the repository (each `func FuzzXxx` in
# a tracked _test.go file) for FUZZTIME each, one after the other. `go test`
# already runs their seed corpora; this explores beyond them. A failure
# leaves the crashing input in the package's testdata/fuzz/FuzzXxx/: commit
# it with the fix, and `go test` replays it from then on.

FUZZTIME ?= 30s

.PHONY: fuzz

## fuzz: every fuzz target for FUZZTIME (default 30s) each; not part of `make test`.
fuzz:
	git grep -n -E '^func Fuzz[A-Za-z0-9_]*\(' -- '*_test.go' | \
	while IFS=: read -r file _ decl; do \
		name=$$(echo "$$decl" | sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/'); \
		pkg=./$$(dirname "$$file"); \
		echo "== $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
	done
