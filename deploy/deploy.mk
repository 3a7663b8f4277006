# The deploys' make targets (included by the Makefile): the Docker engine, the images, the compose
# deploy test, and Helm with the manifest checker. deploy/README.md says what each one does.
#
#   make docker        install Debian's docker.io + debootstrap when missing, start dockerd
#   make images        build every image (base, onceflow services, Kafka, PostgreSQL, Prometheus, S3Proxy)
#   make deploy-test   images, then the compose cluster with its kills and audits (also run by make test)
#   make helm          helm from the Go module proxy into .cache/helm
#   make helm-check    helm lint --strict + helm template + strict decoding into the Kubernetes types

.PHONY: docker wheelhouse images compose helm kubecheck helm-check deploy-test deploy-down

HELM_VERSION := v3.22.0
HELM := .cache/helm/$(HELM_VERSION)/helm
COMPOSE_VERSION := $(shell sed -n 's:^require github.com/docker/compose/v2 \(v[^ ]*\).*:\1:p' tools/compose/go.mod)
COMPOSE := .cache/compose/$(COMPOSE_VERSION)/docker-compose
KUBECHECK := .cache/kubecheck/kubecheck
KUBE_VERSION := 1.31.0
# Go builds of the tools: the module proxy only (GOFLAGS=-mod=mod would rewrite go.sum: never).
GO ?= go
GO_ENV := GOFLAGS=-trimpath GOTOOLCHAIN=local

docker: ## start a Docker engine: installs docker.io + debootstrap from Debian when missing (root)
	@bash deploy/images/engine.sh

wheelhouse: setup-env ## the locked wheels of uv.lock for the images' Python, and onceflow's own (.cache/wheelhouse)
	@UV="$(UV)" PYTHON="$(PYTHON)" bash deploy/images/wheelhouse.sh

images: docker wheelhouse kafka s3proxy hadoop-aws ## build every image of the deploys (base by debootstrap when it cannot be pulled)
	@bash deploy/images/build.sh

# The go builds: `go install`/`go build` from the Go module proxy into .cache, with a stamp of what was
# built so an unchanged version does nothing. They fetch into the user's module cache (GOMODCACHE, like
# ~/.m2 for Maven) and compile with Go's own build cache (GOCACHE, ~/.cache/go-build, which Go trims
# itself): the three share the standard library and many modules, so on a fresh machine the second and
# third build reuse what the first compiled (helm + kubecheck + compose: 174 s against 262 s with a cache
# of their own each).
define go-tool
	@if [ -x "$(1)" ] && [ "$$(cat $(1).stamp 2>/dev/null)" = "$(2)" ]; then \
	  echo "setup: $(3) ok ($(1))"; exit 0; fi; \
	command -v $(GO) >/dev/null 2>&1 || { \
	  echo "setup: $(3) is built from the Go module proxy and needs Go 1.24+ (apt-get install golang, or"; \
	  echo "setup: https://go.dev/dl); then run this again."; exit 1; }; \
	echo "setup: building $(3) with $$($(GO) version | cut -d' ' -f3) (Go module proxy; a few minutes once)"; \
	mkdir -p $(dir $(1)); \
	( $(4) ); built=$$?; [ $$built -eq 0 ] || { \
	  echo "setup: could not build $(3) (see the errors above); it needs the Go module proxy."; exit 1; }; \
	echo "$(2)" > $(1).stamp; echo "setup: $(3) ok ($(1))"
endef

helm: ## helm from the Go module proxy (go install helm.sh/helm/v3/cmd/helm) into .cache/helm
	$(call go-tool,$(HELM),$(HELM_VERSION),helm $(HELM_VERSION),\
	  $(GO_ENV) GOBIN=$(CURDIR)/$(dir $(HELM)) $(GO) install -ldflags "-s -w" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION))

# Compose v2 is a module with exclude directives, which `go install pkg@version` refuses: tools/compose
# is a wrapper module that requires it, and `go build` builds its command from there.
compose: ## docker compose v2 from the Go module proxy (tools/compose) into .cache/compose and ~/.docker/cli-plugins
	$(call go-tool,$(COMPOSE),$(COMPOSE_VERSION),docker compose $(COMPOSE_VERSION),\
	  cd tools/compose && $(GO_ENV) $(GO) build -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$(COMPOSE_VERSION)" \
	    -o $(CURDIR)/$(COMPOSE) github.com/docker/compose/v2/cmd)
	@mkdir -p $(HOME)/.docker/cli-plugins && ln -sf $(CURDIR)/$(COMPOSE) $(HOME)/.docker/cli-plugins/docker-compose

kubecheck: ## the strict manifest checker (tools/kubecheck, on k8s.io/api) into .cache/kubecheck
	$(call go-tool,$(KUBECHECK),$$(cat tools/kubecheck/go.sum tools/kubecheck/*.go | sha256sum | cut -c1-16),kubecheck,\
	  cd tools/kubecheck && $(GO_ENV) $(GO) build -o $(CURDIR)/$(KUBECHECK) .)

helm-check: helm kubecheck ## helm lint --strict and helm template (default and cluster values), every manifest decoded strictly
	@bash deploy/helm/check.sh

deploy-test: images compose ## the compose cluster for real (make test runs it): kills, restarts, broken settings, EXACT audits
	@bash deploy/compose/deploy-test.sh

deploy-down: ## stop the compose deploy and remove its volumes
	@docker compose -f deploy/compose/docker-compose.yml down -v --remove-orphans

# The Helm tests of tests/deploy run helm and kubecheck; make test also runs the compose deploy test
# last (DEPLOY_TEST=0 leaves it out, and says so, where no Docker engine can run).
pytest: helm kubecheck
ifeq ($(DEPLOY_TEST),0)
test:
	@echo "deploy-test: NOT RUN (DEPLOY_TEST=0): the compose deploy was not started"
else
test: deploy-test
endif
