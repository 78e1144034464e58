# envtest binaries: the real kube-apiserver and etcd that
# sigs.k8s.io/controller-runtime/pkg/envtest starts, and the real kubectl that
# tests of the package API run against it, built from source through
# the Go module proxy (hack/envtest/go.mod pins the versions), because release
# tarballs cannot be downloaded here. The first build takes minutes
# (kube-apiserver is large); after that the binaries are reused until
# hack/envtest/go.mod or go.sum changes.

.PHONY: envtest-bins

ENVTEST_BIN := $(BIN)/k8s
ENVTEST_MOD := hack/envtest/go.mod hack/envtest/go.sum
# The Kubernetes version is read from the tools module, so go.mod stays the
# one place to change it.
ENVTEST_K8S_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2 }' hack/envtest/go.mod)
ENVTEST_K8S_MINOR := $(word 2,$(subst ., ,$(ENVTEST_K8S_VERSION)))
# Stamp the version the way Kubernetes' own build does, so /version and the
# apiserver's compatibility-version checks see v1.x.y, not v0.0.0-master.
ENVTEST_VERSION_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version, \
	-X $(pkg).gitVersion=$(ENVTEST_K8S_VERSION) \
	-X $(pkg).gitMajor=1 \
	-X $(pkg).gitMinor=$(ENVTEST_K8S_MINOR) \
	-X $(pkg).gitTreeState=clean)

## envtest-bins: kube-apiserver and etcd in bin/k8s for envtest, and the kubectl of the same version that tests run against servers they start.
envtest-bins: $(ENVTEST_BIN)/kube-apiserver $(ENVTEST_BIN)/etcd $(ENVTEST_BIN)/kubectl

$(ENVTEST_BIN)/kube-apiserver: $(ENVTEST_MOD)
	@mkdir -p $(@D)
	cd hack/envtest && CGO_ENABLED=0 $(GO) build -o $@ \
		-ldflags '-s -w $(ENVTEST_VERSION_LDFLAGS)' k8s.io/kubernetes/cmd/kube-apiserver
	touch $@

$(ENVTEST_BIN)/kubectl: $(ENVTEST_MOD)
	@mkdir -p $(@D)
	cd hack/envtest && CGO_ENABLED=0 $(GO) build -o $@ \
		-ldflags '-s -w $(ENVTEST_VERSION_LDFLAGS)' k8s.io/kubernetes/cmd/kubectl
	touch $@

$(ENVTEST_BIN)/etcd: $(ENVTEST_MOD)
	@mkdir -p $(@D)
	cd hack/envtest && CGO_ENABLED=0 $(GO) build -o $@ -ldflags '-s -w' go.etcd.io/etcd/server/v3
	touch $@

TEST_DEPS += envtest-bins

# Every `go test` started by make finds the binaries; tests that need them skip
# when this is unset (a plain `go test` outside make).
export KUBEBUILDER_ASSETS := $(ENVTEST_BIN)
