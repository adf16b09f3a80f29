# wats: build, test and run a local devnet. Needs only Go (1.26+).
GO       ?= go
BIN      := bin/wats
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# FUZZTIME is each fuzz target's budget: a count of executions (Nx). A
# duration (10s) works too, but Go 1.26's fuzz coordinator can then fail a
# target with a spurious "context deadline exceeded" as time runs out
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 100000x
N        ?= 1000000

.PHONY: all build test test-short race fuzz bench bench-sync bench-fetch bench-attack bench-kubo devnet sim lint tidy clean screenshots

all: build

## build: compile the wats binary into bin/wats
build:
	@[ -x $(BIN) ] || echo "building $(BIN); the first build downloads and compiles the dependencies, a few minutes on a cold Go cache"
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/wats

## test: vet, then every test (unit, multi-node on 127.0.0.1, end-to-end devnet) with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

## screenshots: the dashboard's screenshots in docs/img, taken by its browser test (needs chromium)
screenshots:
	mkdir -p docs/img
	WATS_SCREENSHOTS=$(CURDIR)/docs/img WATS_REQUIRE_BROWSER=1 $(GO) test -count=1 -run TestDashboardInABrowser ./cmd/wats

## test-short: the fast tests only (no end-to-end devnet)
test-short:
	$(GO) test -short -count=1 ./...

## fuzz: run every fuzz target briefly (FUZZTIME executions each)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: the Go benchmarks of the hot paths
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-sync: fill one node with N events, measure new nodes' catch-ups from it over libp2p on loopback (3 rounds)
bench-sync: build
	$(BIN) bench sync -n $(N)

## bench-fetch: two daemons; import a SIZE-byte blob into one, time the other's fetch over bitswap
SIZE ?= 268435456
bench-fetch: build
	$(BIN) bench fetch --size $(SIZE)

## bench-attack: a real daemon under each attack of docs/reliability.md (DURATION each, KILLS kill -9s)
DURATION ?= 30s
KILLS    ?= 50
bench-attack: build
	$(BIN) bench attack --scenario all --duration $(DURATION) --kills $(KILLS)

## bench-kubo: kubo against wats, same run: import and fetch of ROUNDS fresh SIZE-byte files through each CLI (IPFS=path of a kubo binary)
ROUNDS ?= 5
bench-kubo: build
	$(BIN) bench vs-ipfs --ipfs "$(IPFS)" --size $(SIZE) --rounds $(ROUNDS)

## devnet: build, then run a 3-node devnet with a demo in the foreground (Ctrl-C stops it)
devnet: build
	$(BIN) devnet run -n 3 --demo

## sim: the simulated internet of docs/scale.md (as root, with ip and nft): 2 public nodes, NATS nodes behind home routers (s: symmetric NAT; +1: a quiet node for the hole punching step)
NATS ?= 7+1,7+1,7+1,7s+1
sim: build
	$(GO) run ./internal/netsim/simrun -bin $(BIN) -public 2 -nats $(NATS)

## lint: gofmt, go vet, go mod tidy check
lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin
