# make test-cluster: catalogd on a real one-node Kubernetes cluster made of
# processes on this host (hack/cluster/README.md). Not part of `make test`:
# it needs root, installs Debian packages, and changes host networking while
# it runs (a bridge, iptables rules, IP forwarding), all undone by
# hack/cluster/down.sh.
#
# The node and control-plane components are built from the module proxy like
# the envtest binaries, through hack/cluster/bins/go.mod, and reused until it
# changes. The catalogd image is CLUSTER_IMAGE_TAR; by default a minimal one
# made here from static builds of cmd/catalogd with the controllers, without
# and with the package API (/catalogd, /catalogd-package-api), as the real
# image holds them.

.PHONY: test-cluster cluster-up cluster-down cluster-bins cluster-packages

CLUSTER_BIN := $(BIN)/cluster
CLUSTER_K8S := kubelet kube-proxy kube-controller-manager kube-scheduler kubectl
CLUSTER_BINS := $(addprefix $(CLUSTER_BIN)/,$(CLUSTER_K8S) pause mkimage)
CLUSTER_MOD := hack/cluster/bins/go.mod hack/cluster/bins/go.sum
CLUSTER_IMAGES_MOD := hack/cluster/images/go.mod hack/cluster/images/go.sum
CLUSTER_IMAGE_TAR ?= $(CLUSTER_BIN)/catalogd.tar
# Debian packages up.sh needs: the runtime, the CNI plugins and the tools
# kube-proxy and the bridge plugin call.
CLUSTER_PACKAGES := containerd runc containernetworking-plugins iptables conntrack openssl curl
# Recursive: ENVTEST_BIN comes from mk/envtest.mk, included after this file.
CLUSTER_ENV = CLUSTER_BIN=$(CLUSTER_BIN) K8S_BIN=$(ENVTEST_BIN)

## cluster-bins: kubelet, kube-proxy, kube-controller-manager, kube-scheduler, kubectl, pause and mkimage in bin/cluster.
cluster-bins: $(CLUSTER_BINS)

$(addprefix $(CLUSTER_BIN)/,$(CLUSTER_K8S)): $(CLUSTER_BIN)/%: $(CLUSTER_MOD)
	@mkdir -p $(@D)
	cd hack/cluster/bins && CGO_ENABLED=0 $(GO) build -o $@ \
		-ldflags '-s -w $(ENVTEST_VERSION_LDFLAGS)' k8s.io/kubernetes/cmd/$*
	touch $@

$(CLUSTER_BIN)/pause $(CLUSTER_BIN)/mkimage: $(CLUSTER_BIN)/%: $(CLUSTER_IMAGES_MOD) hack/cluster/images/%/main.go
	@mkdir -p $(@D)
	cd hack/cluster/images && CGO_ENABLED=0 $(GO) build -o $@ -ldflags '-s -w' ./$*

# Rebuilt every time: the Go build cache makes an unchanged catalogd cheap.
.PHONY: $(CLUSTER_BIN)/catalogd.tar
$(CLUSTER_BIN)/catalogd.tar: $(CLUSTER_BIN)/mkimage
	CGO_ENABLED=0 $(GO) build -tags $(MANAGER_TAGS) -o $(CLUSTER_BIN)/catalogd -ldflags '-s -w' ./cmd/catalogd
	CGO_ENABLED=0 $(GO) build -tags $(PACKAGEAPI_TAGS) -o $(CLUSTER_BIN)/catalogd-package-api -ldflags '-s -w' ./cmd/catalogd
	$(CLUSTER_BIN)/mkimage -name localhost/catalogd:cluster-test -out $@ -user 65532:65532 \
		-entrypoint /catalogd catalogd=$(CLUSTER_BIN)/catalogd catalogd-package-api=$(CLUSTER_BIN)/catalogd-package-api

## cluster-packages: apt-get install what the cluster needs, if anything is missing.
cluster-packages:
	@missing=; for p in $(CLUSTER_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## test-cluster: bring up the cluster, run test/cluster against catalogd deployed from config/, tear it down.
# bin/olm-packagemanifests is OLM v0's client, run through the aggregator
# (mk/olmclient.mk, read after this file, has its rule).
test-cluster: cluster-packages cluster-bins envtest-bins $(CLUSTER_IMAGE_TAR) $(BIN)/olm-packagemanifests
	$(CLUSTER_ENV) hack/cluster/test.sh $(CLUSTER_IMAGE_TAR)

## cluster-up / cluster-down: the same cluster by hand (KUBECONFIG=tmp/cluster/admin.kubeconfig).
cluster-up: cluster-packages cluster-bins envtest-bins
	$(CLUSTER_ENV) hack/cluster/up.sh

cluster-down:
	$(CLUSTER_ENV) hack/cluster/down.sh
