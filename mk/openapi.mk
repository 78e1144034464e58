# The API description (openapi.yaml) and the Go code generated from it: the
# wire types (api/catalogapi, models only) and the client (client/, which
# re-exports those types). oapi-codegen writes the `output` named in its
# config relative to the working directory, so both targets run it from the
# directory to write in.

.PHONY: generate verify-generate

# Directories holding an oapi-codegen.yaml whose output is openapi.gen.go.
OAPI_CODEGEN_DIRS := api/catalogapi client

## generate: regenerate api/catalogapi and client/ from openapi.yaml.
generate: $(BIN)/oapi-codegen
	for d in $(OAPI_CODEGEN_DIRS); do \
		(cd $$d && $(BIN)/oapi-codegen -config $(CURDIR)/$$d/oapi-codegen.yaml $(CURDIR)/openapi.yaml) || exit 1; \
	done

## verify-generate: fail when api/catalogapi or client/ is stale with respect to openapi.yaml.
verify-generate: $(BIN)/oapi-codegen
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for d in $(OAPI_CODEGEN_DIRS); do \
		mkdir -p "$$tmp/$$d"; \
		(cd "$$tmp/$$d" && $(BIN)/oapi-codegen -config $(CURDIR)/$$d/oapi-codegen.yaml $(CURDIR)/openapi.yaml) || exit 1; \
		if ! diff -u $$d/openapi.gen.go "$$tmp/$$d/openapi.gen.go" >"$$tmp/diff"; then \
			head -n 40 "$$tmp/diff" >&2; \
			echo "$$d/openapi.gen.go is stale: openapi.yaml or $$d/oapi-codegen.yaml changed without regenerating. Run 'make generate' and commit the result." >&2; \
			exit 1; \
		fi; \
	done

TEST_DEPS += verify-generate
