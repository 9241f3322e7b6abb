# hlomem: XLA-style buffer assignment in the open.
#   make demo   run the CLI on the bundled example
#   make test   the fast tier: gofmt check, go vet, go test -short (unit, script and
#               golden tests, a fixed sample of the shared corpus)
#   make test-corpus (or test-all)  every test on every corpus module, the
#               race detector, every fuzz target for FUZZTIME_CORPUS
#   make build  the hlomem binary in ./hlomem
#   make bench  benchmarks (corpus inputs and seeded generators)
#   make bench-pack  the packers on seeded problems of 10^4 to 10^6 buffers
#               (assign/pack BenchmarkPackScale), 3 runs
#   make bench-passes  every pipeline pass on seeded modules of 10^3 to 10^6
#               instructions (compile's BenchmarkPass), 3 runs, as a markdown
#               table of medians (internal/benchtable)
#   make fuzz   a short run of every fuzz target (FUZZTIME per target)

GO       ?= go
CORPUS   ?= $(abspath ../shared/corpus)
FUZZTIME ?= 20s
FUZZTIME_CORPUS ?= 5s
BENCH    ?= .

.PHONY: demo test test-corpus test-all test-race check bench bench-pack bench-passes fuzz build

build:
	$(GO) build ./...
	$(GO) build -o hlomem ./cmd/hlomem
	@echo "built ./hlomem"

demo:
	$(GO) run ./cmd/hlomem report --html=transformer-memory.html testdata/transformer.hlo
	@echo "memory viewer: transformer-memory.html"
	$(GO) run ./cmd/hlomem assign --format=report testdata/demo.hlo
	$(GO) run ./cmd/hlomem run --device=a100-40gb testdata/demo.hlo
	$(GO) run ./cmd/hlomem run --device=tpu-v4 --verify --inputs=random testdata/demo.hlo

# check: gofmt, go vet, and the corpus present (both tiers start with it).
check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@test -d "$(CORPUS)" || { echo "corpus not found at $(CORPUS); set CORPUS=..."; exit 1; }

# test: the fast tier. -short gives each corpus-wide test corpus.Representative's sample.
test: check
	HLOMEM_CORPUS="$(CORPUS)" $(GO) test -short -timeout 10m ./...

# test-corpus: everything, every corpus module, then the race detector on
# the packages whose tests exercise concurrency (gpu's concurrent
# allocators, the portfolio's parallel packers), then every fuzz target
# for a few seconds (its checked-in seeds, the corpus' and what it finds).
test-corpus: check
	HLOMEM_CORPUS="$(CORPUS)" $(GO) test -timeout 40m ./...
	$(MAKE) test-race
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME_CORPUS)

test-race:
	HLOMEM_CORPUS="$(CORPUS)" $(GO) test -race -short -timeout 10m ./gpu ./assign/pack

test-all: test-corpus

bench:
	HLOMEM_CORPUS="$(CORPUS)" $(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

# bench-pack: the portfolio (from 131,072 buffers the large packers) and
# the large packers on their own, on the four seeded shapes, 3 runs each
# (about 2 minutes on 2 cores).
bench-pack:
	$(GO) test -run '^$$' -bench 'PackScale/.*/.*/(portfolio|large)$$' -benchtime 1x -count 3 -timeout 60m ./assign/pack

# bench-passes: BenchmarkPass (compile/passes_bench_test.go) as a table:
# the medians of 3 runs per pass, shape and size from 10^3 to 10^6
# instructions, and the growth exponents 10^4 to 10^6 (about 20 minutes
# on 2 cores). The raw benchmark output is kept in bench-passes.txt.
bench-passes:
	{ HLOMEM_PASS_SIZES=1000,10000,100000 $(GO) test -run '^$$' -bench 'Pass/' -benchtime 1x -count 3 -timeout 60m -v ./compile; \
	  HLOMEM_PASS_SIZES=1000000 $(GO) test -run '^$$' -bench 'Pass/' -benchtime 1x -count 3 -timeout 90m -v ./compile; } | tee bench-passes.txt | $(GO) run ./internal/benchtable

fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$target ($(FUZZTIME))"; \
	    out=$$(mktemp); \
	    if ! HLOMEM_CORPUS="$(CORPUS)" $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg >$$out 2>&1; then \
	      cat $$out; \
	      if grep -q 'context deadline exceeded' $$out && ! grep -q 'Failing input written' $$out; then \
	        echo "== the fuzzing engine timed out stopping a worker (no failing input): once more"; \
	        HLOMEM_CORPUS="$(CORPUS)" $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
	      else rm -f $$out; exit 1; fi; \
	    else cat $$out; fi; \
	    rm -f $$out; \
	  done; \
	done
