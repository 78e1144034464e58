# catalogd build, test and benchmark entry points. Every target installs what
# it needs by itself, so a fresh clone needs only `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
BIN := $(CURDIR)/bin
DATA_DIR ?= $(CURDIR)/tmp/data
LISTEN ?= 127.0.0.1:8080
# Where `make run` also serves OLM v0's registry API (gRPC), if anywhere:
# make run GRPC_LISTEN=127.0.0.1:50051.
GRPC_LISTEN ?=
# The version every binary and image is stamped with: the nearest tag plus
# commits since it, or the abbreviated commit when there is no tag; -dirty
# marks uncommitted changes. internal/version reports it.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# Expanded once, so a commit made while make runs cannot give the binaries
# and the image labels different versions.
VERSION := $(VERSION)
VERSION_LDFLAGS := -X github.com/catalogd/catalogd/internal/version.version=$(VERSION)

.PHONY: all help build run test unit race fmt vet lint tools
all: build

## help: list the targets and what each does.
help:
	@sed -n 's/^## \([^:]*\): /\1\t/p' $(MAKEFILE_LIST) | awk -F'\t' '{ printf "  %-28s %s\n", $$1, $$2 }'

# Fragments in mk/ add their own targets and append prerequisites of `make
# test` to TEST_DEPS (for example the envtest binaries).
TEST_DEPS :=
include $(wildcard mk/*.mk)

## tools: code generators and the linter pinned in hack/tools/go.mod, built once into bin/.
TOOLS := $(BIN)/controller-gen $(BIN)/oapi-codegen $(BIN)/openapi-gen $(BIN)/staticcheck
tools: $(TOOLS)
$(TOOLS): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && GOBIN=$(BIN) $(GO) install tool
	touch $(TOOLS)

# The build tags of the two in-cluster binaries. catalogd-manager is
# catalogd with the ClusterCatalog controllers (`catalogd manager`), and
# catalogd-package-api is that with the PackageManifest API
# (--package-api) too. The default catalogd (serve, validate, index
# publish) leaves both out: linking controller-runtime and client-go, or
# k8s.io/apiserver, costs every process memory whatever its command
# (docs/architecture.md, "What the binary links").
MANAGER_TAGS := manager
PACKAGEAPI_TAGS := manager,packageapi
# The packages with files for or against each tag: vet, lint and unit check
# them again, built with it. Without git to find them, every package.
tagged_pkgs = $(or $(sort $(patsubst %/,./%,$(dir $(shell git grep --untracked -lE '^//go:build.*\b$(1)\b' -- '*.go' 2>/dev/null)))),./...)
MANAGER_PKGS := $(call tagged_pkgs,manager)
PACKAGEAPI_PKGS := $(call tagged_pkgs,packageapi)

## build: bin/catalogd, bin/catalogd-manager (with the controllers), bin/catalogd-package-api (and the package API) and bin/kubectl-catalog, stamped with VERSION.
build:
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/catalogd ./cmd/catalogd
	$(GO) build -tags $(MANAGER_TAGS) -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/catalogd-manager ./cmd/catalogd
	$(GO) build -tags $(PACKAGEAPI_TAGS) -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/catalogd-package-api ./cmd/catalogd
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/kubectl-catalog ./cmd/kubectl-catalog

## run: serve the demo catalog on $(LISTEN) with no cluster (and OLM v0's registry API on $(GRPC_LISTEN) when set).
run: build
	$(BIN)/catalogd serve --listen $(LISTEN) --data-dir $(DATA_DIR) --catalog demo=test/testdata/demo $(if $(GRPC_LISTEN),--grpc-listen $(GRPC_LISTEN))

## test: everything CI checks.
test: vet lint unit race

unit: $(TEST_DEPS)

## vet: go vet ./..., and again with the manager's and the package API's tags where they matter.
vet:
	$(GO) vet ./...
	$(GO) vet -tags $(MANAGER_TAGS) $(MANAGER_PKGS)
	$(GO) vet -tags $(PACKAGEAPI_TAGS) $(PACKAGEAPI_PKGS)

## lint: staticcheck ./..., and again with the manager's and the package API's tags where they matter.
lint: $(BIN)/staticcheck
	$(BIN)/staticcheck ./...
	$(BIN)/staticcheck -tags $(MANAGER_TAGS) $(MANAGER_PKGS)
	$(BIN)/staticcheck -tags $(PACKAGEAPI_TAGS) $(PACKAGEAPI_PKGS)

## unit: every Go test (envtest ones with the binaries TEST_DEPS builds), then the packages with tagged files built with the manager, and with the package API.
unit:
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -tags $(MANAGER_TAGS) $(MANAGER_PKGS)
	$(GO) test -count=1 -tags $(PACKAGEAPI_TAGS) $(PACKAGEAPI_PKGS)

# The packages whose goroutines share state: the store's readers and
# swaps, the HTTP API over it, the directory watcher, the sync service, the
# package API's cache and watches, the server that wires them, the unpacker,
# the parallel catalog parser, the git and HTTP sources (a tree
# written through a pipe, caches shared by every fetch), and the GraphQL
# surface (its schema cache, shared by every query; its HTTP tests run in
# httpapi). -short leaves out the real community
# catalog (test/fbcfacts) and shorter sequences where tests offer them;
# RACE_SKIP the tests that push hundreds of MB through one goroutine to
# bound its memory, which take minutes under the detector and check no
# sharing that the other tests do not.
RACE_PKGS := ./internal/store/ ./internal/httpapi/ ./internal/catalogdir/ ./internal/catalogsync/ \
	./internal/server/ ./internal/unpack/ ./internal/fbc/ ./internal/source/gitsource/ ./internal/source/httpsource/ \
	./internal/graphqlapi/ ./internal/grpcapi/
RACE_PACKAGEAPI_PKGS := ./internal/packageapi/
RACE_SKIP := ^(TestBombsTakeBoundedMemory|TestUnpackBombs|TestBombImagesAreRefusedOnce|TestBombDirectoryIsRefusedOnce)$$

## race: the packages whose goroutines share state tested again with the race detector (-short, without the memory-bound bomb tests; the package API's with its tag).
race: $(TEST_DEPS)
	$(GO) test -race -short -count=1 -timeout 20m -skip '$(RACE_SKIP)' $(RACE_PKGS)
	$(GO) test -race -short -count=1 -timeout 20m -tags $(PACKAGEAPI_TAGS) $(RACE_PACKAGEAPI_PKGS)

## fmt: gofmt every Go file.
fmt:
	gofmt -w $$(git ls-files '*.go')
