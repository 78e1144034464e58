# The catalogd container image, built by hack/image without a Docker engine
# or base image: static binaries (CGO_ENABLED=0) for each platform, one layer
# with the binaries (/catalogd built with -tags $(MANAGER_TAGS), and
# /catalogd-package-api built with -tags $(PACKAGEAPI_TAGS), which the
# package API overlay runs), the CA
# bundle and a nonroot user, every timestamp at
# SOURCE_DATE_EPOCH (the commit time by default), so rebuilding a commit
# gives the same digest.
#
#   make image                                    # bin/image/oci and bin/image/catalogd.tar
#   make image-push IMG=registry.example/olm/catalogd:v1
#   make image-push IMG=localhost:5000/catalogd:dev INSECURE_REGISTRY=1   # plain HTTP

.PHONY: image image-binaries image-push

IMAGE_DIR := $(BIN)/image
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_TAG ?= catalogd:$(VERSION)
IMAGE_SOURCE ?= https://github.com/catalogd/catalogd
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# Expanded once, like VERSION.
IMAGE_REVISION := $(IMAGE_REVISION)
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
# The Debian CA bundle of the build machine.
IMAGE_CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
# docker-save format holds one platform: the one `docker load` or
# `kind load image-archive` gets.
IMAGE_TARBALL_PLATFORM ?= linux/amd64

image_bin = $(IMAGE_DIR)/catalogd-$(subst /,-,$(1))
image_pkgapi_bin = $(IMAGE_DIR)/catalogd-package-api-$(subst /,-,$(1))

IMAGE_ARGS = -version '$(VERSION)' -revision '$(IMAGE_REVISION)' -source '$(IMAGE_SOURCE)' \
	-created '$(SOURCE_DATE_EPOCH)' -ca-bundle '$(IMAGE_CA_BUNDLE)' -tag '$(IMAGE_TAG)' \
	$(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(call image_bin,$(p)) -package-api-binary $(p)=$(call image_pkgapi_bin,$(p)))

## image-binaries: static catalogd (with the controllers) and catalogd-package-api binaries for $(IMAGE_PLATFORMS) in bin/image/.
# Always rebuilt (go build's cache makes that cheap when nothing changed), so
# the image never packs a stale binary.
image-binaries:
	@mkdir -p $(IMAGE_DIR)
	$(foreach p,$(IMAGE_PLATFORMS),CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(p))) GOARCH=$(word 2,$(subst /, ,$(p))) \
		$(GO) build -trimpath -tags $(MANAGER_TAGS) -ldflags '-s -w $(VERSION_LDFLAGS)' -o $(call image_bin,$(p)) ./cmd/catalogd; \
		CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(p))) GOARCH=$(word 2,$(subst /, ,$(p))) \
		$(GO) build -trimpath -tags $(PACKAGEAPI_TAGS) -ldflags '-s -w $(VERSION_LDFLAGS)' -o $(call image_pkgapi_bin,$(p)) ./cmd/catalogd;)

## image: the image as an OCI layout (bin/image/oci) and a docker-loadable tarball (bin/image/catalogd.tar).
image: image-binaries
	$(GO) run ./hack/image $(IMAGE_ARGS) -oci-layout $(IMAGE_DIR)/oci \
		-tarball $(IMAGE_DIR)/catalogd.tar -tarball-platform $(IMAGE_TARBALL_PLATFORM)

## image-push: push the image (all platforms) to IMG; INSECURE_REGISTRY=1 for plain HTTP.
image-push: image-binaries
	@test -n '$(IMG)' || { echo 'image-push: set IMG=host[:port]/repo:tag' >&2; exit 1; }
	$(GO) run ./hack/image $(IMAGE_ARGS) -push '$(IMG)' $(if $(INSECURE_REGISTRY),-insecure)
