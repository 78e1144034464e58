# Installing catalogd into the cluster of the current kubeconfig ($KUBECONFIG,
# in-cluster config or ~/.kube/config):
#
#   make deploy IMG=registry.example/olm/catalogd:v1    # image from `make image-push`
#   make undeploy
#
# bin/deploy (hack/deploy) renders the kustomization with kustomize's Go API
# and server-side applies it, in place of kubectl, which cannot be downloaded
# here and takes far longer to build. DEPLOY_DIR picks another overlay, for
# example config/overlays/cert-manager. Both stop when the catalogd Deployment
# or Service in the cluster was applied by something else (OLM v1's catalogd,
# most likely); ADOPT=1 takes them over.

.PHONY: deploy undeploy

DEPLOY_TOOL := $(BIN)/deploy
DEPLOY_DIR ?= config/default

$(DEPLOY_TOOL): $(wildcard hack/deploy/*.go) go.mod go.sum
	$(GO) build -o $@ ./hack/deploy

## deploy: apply $(DEPLOY_DIR) with the catalogd image set to IMG (default: the kustomization's catalogd:latest).
deploy: $(DEPLOY_TOOL)
	$(DEPLOY_TOOL) $(if $(IMG),-image '$(IMG)') $(if $(ADOPT),-adopt) $(DEPLOY_DIR)

## undeploy: delete what $(DEPLOY_DIR) renders, except the shared olmv1-system namespace.
undeploy: $(DEPLOY_TOOL)
	$(DEPLOY_TOOL) -delete $(if $(ADOPT),-adopt) $(DEPLOY_DIR)
