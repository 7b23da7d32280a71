# moat: thin wrapper around Meson/Ninja.
#   make          build build/moat
#   make demo     install missing build packages, build, run a sample in a sandbox
#   make test     install missing build packages, build, run the whole suite
#   make asan     build and test under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench    benchmarks against peers measured in the same run

BUILD   ?= build
ASAN    ?= build-asan
MESON   ?= meson
NINJA   ?= ninja

.PHONY: all deps demo test asan bench clean format

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

$(ASAN)/build.ninja:
	$(MESON) setup $(ASAN) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

asan: deps $(ASAN)/build.ninja
	$(NINJA) -C $(ASAN)
	@MOAT_SANITIZED=1 tests/run $(ASAN)

bench: deps all
	@scripts/bench $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN)
