# go.mod and go.sum of every module kept tidy, so requirements say which are
# direct and the module graph carries nothing no package needs. hack/tools and
# hack/envtest are modules of their own (see their go.mod) and kept the same.

.PHONY: tidy verify-tidy

TIDY_MODULES := . hack/tools hack/envtest

## tidy: run go mod tidy in every module.
tidy:
	for m in $(TIDY_MODULES); do (cd $$m && $(GO) mod tidy); done

## verify-tidy: fail when go mod tidy would change a module's go.mod or go.sum.
# `go mod tidy -diff` prints the change it would make and exits non-zero,
# without writing anything.
verify-tidy:
	@untidy=; \
	for m in $(TIDY_MODULES); do \
		if ! (cd $$m && $(GO) mod tidy -diff); then untidy="$$untidy $$m"; fi; \
	done; \
	if [ -n "$$untidy" ]; then \
		echo "verify-tidy: go.mod or go.sum is not tidy in:$$untidy" >&2; \
		echo "verify-tidy: run 'make tidy' and commit the result." >&2; \
		exit 1; \
	fi; \
	echo "verify-tidy: go.mod and go.sum are tidy in $(TIDY_MODULES)."

TEST_DEPS += verify-tidy
