# moat: thin wrapper around Meson/Ninja.
#   make          build build/moat
#   make demo     install missing build packages, build, run a sample in a sandbox
#   make test     install missing build packages, build, run the whole suite
#   make asan     build and test under AddressSanitizer + UndefinedBehaviorSanitizer
#   make soak     the long versions of both passes, the full compatibility
#                 suite included (not in CI; docs/testing.md)
#   make bench    benchmarks against peers measured in the same run
#   make fuzz     libFuzzer (clang) on the gateway's parsers, FUZZ_SECONDS each

BUILD   ?= build
ASAN    ?= build-asan
MESON   ?= meson
NINJA   ?= ninja

.PHONY: all deps demo test asan asan-build soak bench fuzz clean format

all: $(BUILD)/build.ninja
	$(NINJA) -C $(BUILD)

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD) --buildtype=debugoptimized

deps:
	@scripts/install-deps

demo: deps all
	@scripts/demo $(BUILD)

test: deps all
	@tests/run $(BUILD)

# The sanitizer build leaves out the attack and limit programs, which are
# never instrumented, and borrows the plain build's.
$(ASAN)/build.ninja:
	$(MESON) setup $(ASAN) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
		-Dtest_programs=false

asan-build: deps all $(ASAN)/build.ninja
	$(NINJA) -C $(ASAN)

asan: asan-build
	@MOAT_SANITIZED=1 MOAT_TEST_PROGRAMS=$(BUILD) tests/run $(ASAN)

# Both passes at full length: 1,000 leak runs, every attack in both modes
# under the sanitizers. Not part of CI (about an hour on two cores).
soak: asan-build
	@MOAT_SOAK=1 MOAT_SCRIPT_TIMEOUT=$${MOAT_SCRIPT_TIMEOUT:-14400} tests/run $(BUILD); a=$$?; \
	MOAT_SOAK=1 MOAT_SANITIZED=1 MOAT_TEST_PROGRAMS=$(BUILD) tests/run $(ASAN); b=$$?; \
	[ $$a -eq 0 ] && [ $$b -eq 0 ]

bench: deps all
	@scripts/bench $(BUILD)

# The fuzz targets with libFuzzer's own main instead of the replay one; new
# inputs that raise coverage go to $(FUZZDIR)/corpus-NAME, crashes to
# $(FUZZDIR). Replay a crash with build/tests/test_fuzz_NAME FILE.
FUZZDIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = http tls socks5 host chunked keeper httpresp jsonrpc oci
FUZZ_SRCS = src/lib/netaddr.c src/lib/hostname.c src/lib/netrules.c src/lib/proxyproto.c src/lib/httpresp.c \
	src/lib/hostglob.c src/lib/error.c src/lib/keeper-proto.c src/lib/util.c src/lib/jsonrpc.c src/lib/mcp.c
fuzz:
	@mkdir -p $(FUZZDIR)
	@for t in $(FUZZ_TARGETS); do \
		clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
			-D_GNU_SOURCE -Isrc/lib -Itests/fuzz tests/fuzz/fuzz_$$t.c $(FUZZ_SRCS) -lidn2 -ljansson -lm \
			-o $(FUZZDIR)/fuzz_$$t || exit 1; \
		mkdir -p $(FUZZDIR)/corpus-$$t; \
		$(FUZZDIR)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZDIR)/ \
			$(FUZZDIR)/corpus-$$t tests/fuzz/corpus/$$t || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN) $(FUZZDIR)
