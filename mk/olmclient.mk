# The real OLM v0 client the package API's tests run: packageserver's
# generated clientset from operator-lifecycle-manager, pinned by
# hack/olmclient/go.mod and built from the Go module proxy, as hack/opm
# builds opm.

OLM_CLIENT := $(BIN)/olm-packagemanifests

$(OLM_CLIENT): hack/olmclient/go.mod hack/olmclient/go.sum hack/olmclient/main.go
	cd hack/olmclient && CGO_ENABLED=0 $(GO) build -o $@ .

TEST_DEPS += $(OLM_CLIENT)
