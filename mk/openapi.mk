# The API description (openapi.yaml) and the Go client generated from it.
# oapi-codegen writes the `output` named in its config relative to the
# working directory, so both targets run it from the directory to write in.

.PHONY: generate verify-generate

OAPI_CODEGEN_CONFIG := $(CURDIR)/client/oapi-codegen.yaml
OAPI_CODEGEN_OUTPUT := client/openapi.gen.go

## generate: regenerate client/openapi.gen.go from openapi.yaml.
generate: $(BIN)/oapi-codegen
	cd client && $(BIN)/oapi-codegen -config $(OAPI_CODEGEN_CONFIG) $(CURDIR)/openapi.yaml

## verify-generate: fail when client/ is stale with respect to openapi.yaml.
verify-generate: $(BIN)/oapi-codegen
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && $(BIN)/oapi-codegen -config $(OAPI_CODEGEN_CONFIG) $(CURDIR)/openapi.yaml); \
	if ! diff -u $(OAPI_CODEGEN_OUTPUT) "$$tmp/$(notdir $(OAPI_CODEGEN_OUTPUT))" >"$$tmp/diff"; then \
		head -n 40 "$$tmp/diff" >&2; \
		echo "$(OAPI_CODEGEN_OUTPUT) is stale: openapi.yaml or client/oapi-codegen.yaml changed without regenerating. Run 'make generate' and commit the result." >&2; \
		exit 1; \
	fi

TEST_DEPS += verify-generate
