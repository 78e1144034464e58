# Generated API artefacts: the ClusterCatalog CRD and the deepcopy methods,
# both produced by controller-gen from the Go types in api/, and the manager's
# RBAC (config/rbac/role.yaml) from the +kubebuilder:rbac markers in
# internal/ (internal/reconcile for ClusterCatalogs, internal/daemon/rbac.go
# for leader election, events and pull secrets).

.PHONY: manifests verify-manifests

MANIFESTS_CRD := config/crd/bases/olm.operatorframework.io_clustercatalogs.yaml
MANIFESTS_DEEPCOPY := api/v1/zz_generated.deepcopy.go api/packages/v1/zz_generated.deepcopy.go
MANIFESTS_GENERATED := $(MANIFESTS_CRD) $(MANIFESTS_DEEPCOPY)
CONTROLLER_GEN_ARGS := object crd paths=./api/... output:crd:artifacts:config=config/crd/bases
MANIFESTS_RBAC := config/rbac/role.yaml
RBAC_GEN_ARGS := rbac:roleName=catalogd-manager-role paths=./internal/...

## manifests: regenerate the CRD and deepcopy code from api/, and RBAC from internal/.
manifests: $(BIN)/controller-gen
	$(BIN)/controller-gen $(CONTROLLER_GEN_ARGS)
	$(BIN)/controller-gen $(RBAC_GEN_ARGS) output:rbac:artifacts:config=$(dir $(MANIFESTS_RBAC))

## verify-manifests: fail if the committed CRD, deepcopy code or RBAC is stale.
# Generates into a temporary copy of the module (api/ plus go.mod and go.sum),
# so the work tree is never touched, then compares with the committed files.
# RBAC generation only reads markers, so it runs on the work tree and writes
# into the temporary directory.
verify-manifests: $(BIN)/controller-gen
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp go.mod go.sum "$$tmp"/; \
	cp -R api "$$tmp"/api; \
	for f in $(MANIFESTS_DEEPCOPY); do rm -f "$$tmp/$$f"; done; \
	mkdir -p "$$tmp/config/crd/bases"; \
	(cd "$$tmp" && $(BIN)/controller-gen $(CONTROLLER_GEN_ARGS)); \
	$(BIN)/controller-gen $(RBAC_GEN_ARGS) output:rbac:artifacts:config="$$tmp/$(dir $(MANIFESTS_RBAC))"; \
	stale=; \
	for f in $(MANIFESTS_GENERATED) $(MANIFESTS_RBAC); do \
		if ! diff -u --label "$$f (committed)" --label "$$f (generated)" "$$f" "$$tmp/$$f"; then stale="$$stale $$f"; fi; \
	done; \
	if [ -n "$$stale" ]; then \
		echo "verify-manifests: generated files are out of date with api/ or the RBAC markers in internal/:$$stale" >&2; \
		echo "verify-manifests: run 'make manifests' and commit the result." >&2; \
		exit 1; \
	fi; \
	echo "verify-manifests: CRD, deepcopy code and RBAC are up to date."

TEST_DEPS += verify-manifests
