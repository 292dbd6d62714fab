# lb: every entry point. `make run` and `make test` are the two a newcomer needs (README.md).
#
#   make            build build/lb and build/lb-origin
#   make test       build and run every test binary; last line "N passed, N failed"
#   make test SAN=1 the same under AddressSanitizer + UBSan, built into build-san/
#   make bench      Google Benchmark microbenchmarks (bench/RESULTS.md records figures)
#   make run        start the demo: four lb-origin backends, two redis-servers, two memcached
#                   and lb with conf/demo.toml
#   make install    lb, its systemd unit, docs and a starting config (PREFIX, DESTDIR below)
#   make deps       apt-get whichever Debian packages below are missing

SHELL := /bin/bash
SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
# GCC 12 reports false -Wmaybe-uninitialized inside libstdc++ (<regex>, std::function) once
# sanitizer instrumentation is on; the plain build keeps the warning as an error.
# -g1 (line tables) is what a sanitizer report needs to name file:line, and builds a quarter
# faster than full debug information.
SANFLAGS := -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
OPT := -O1 -g1 $(SANFLAGS) -Wno-maybe-uninitialized
TEST_OPT := -O0 -g1 $(SANFLAGS)
# An integration test's own code is a harness (clients, processes, waits): the code it proves
# is the lb it starts, built from the instrumented liblb.a. Instrumenting the harness as well
# made the SAN build's integration objects 1.75 times as slow to compile and checked nothing of
# lb's; LB_SANITIZED_LB tells a test the lb it starts is the slow, sanitized one.
INTEG_OPT := -O0 -g1 -DLB_SANITIZED_LB=1
SANLD := -fsanitize=address,undefined
else
BUILD ?= build
OPT := -O2 -g
TEST_OPT := -O0 -g1
INTEG_OPT := $(TEST_OPT)
SANLD :=
endif
# The test programs themselves (tests/) build at -O0: their code is assertions and set-up, the
# code under test is liblb.a at OPT, and gtest's macros make optimizing a test file 3-4 times
# slower than compiling it (25 s against 7 s for one integration test file on this machine).
# -g1 (line tables) for them: a failure's backtrace names file:line, and the test files,
# most of the build, compile faster than with full debug information.

DEB_PACKAGES := build-essential pkg-config libuv1-dev node-llhttp libtomlplusplus-dev \
  prometheus-cpp-dev libxxhash-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libsystemd-dev systemd curl wrk redis-server redis-tools memcached prometheus nutcracker \
  nettle-dev etcd-server etcd-client nlohmann-json3-dev tmux gnuplot-nox libssl-dev \
  python3-pymemcache python3-redis libnghttp2-dev nghttp2-client python3-h2

CXX ?= g++
CC ?= gcc
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp
DEFS := -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -DLB_VERSION=\"$(shell cat VERSION 2>/dev/null || echo 0.0.0)\"
CXXFLAGS_BASE := -std=c++20 -Wall -Wextra -Werror -MMD -MP -I. -I$(LLHTTP_INC) $(DEFS) -pthread
CXXFLAGS := $(OPT) $(CXXFLAGS_BASE)
TEST_CXXFLAGS := $(TEST_OPT) $(CXXFLAGS_BASE)
INTEG_CXXFLAGS := $(INTEG_OPT) $(CXXFLAGS_BASE)
# llhttp.h defaults LLHTTP_STRICT_MODE to 0, which lets llhttp skip any two bytes after chunk
# data and take non-token bytes in field names: lb sits at the edge and builds it strict
# (lb/http/parser.h says what lb checks on top).
LLHTTP_DEFS := -DLLHTTP_STRICT_MODE=1
CFLAGS_LLHTTP := $(OPT) -MMD -MP -I$(LLHTTP_INC) $(LLHTTP_DEFS)
LDLIBS := -ltomlplusplus -luv -lnghttp2 -lsystemd -lprometheus-cpp-core -lxxhash -lz -lnettle -lssl -lcrypto -lpthread -ldl -lrt
TEST_LDLIBS := -lgmock -lgtest -lgtest_main
BENCH_LDLIBS := -lbenchmark -lbenchmark_main

# Sources by wildcard so that adding a file needs no Makefile edit. Every .cc under lb/ and
# plugins/ goes into liblb.a except lb/app/main.cc; tools/origin/ is its own program.
LIB_SRCS := $(filter-out lb/app/main.cc,$(shell find lb plugins -name '*.cc' | sort))
ORIGIN_SRCS := $(wildcard tools/origin/*.cc)
# llhttp's sources by name, not by wildcard: the wildcard would be read before `make deps`
# installs node-llhttp and come back empty on a bare machine.
LLHTTP_SRCS := api.c http.c llhttp.c
LIB_OBJS := $(LIB_SRCS:%.cc=$(BUILD)/obj/%.o) $(LLHTTP_SRCS:%.c=$(BUILD)/obj/llhttp/%.o)
# Where tests go (DEVELOPERS.md, "Where tests go"): a unit test in tests/unit/ under the source
# path it proves (lb/proxy/redis/ -> tests/unit/proxy/redis/, plugins/keys/ ->
# tests/unit/plugins/keys/); an integration test, which runs the real lb, in
# tests/integration/<capability>/ (http, tcp, cache, health, membership, tls, cli, ...);
# helpers shared by test files in tests/support/, one flat folder of unique names. Every .cc
# under tests/unit and tests/integration is found here, at any depth.
UNIT_SRCS := $(shell find tests/unit -name '*.cc' 2>/dev/null | sort)
INTEG_SRCS := $(shell find tests/integration -name '*.cc' 2>/dev/null | sort)
TEST_SUPPORT := $(wildcard tests/support/*.cc)
BENCH_SRCS := $(wildcard bench/*.cc)

LIB := $(BUILD)/liblb.a
BINS := $(BUILD)/lb $(BUILD)/lb-origin
TEST_BINS := $(BUILD)/tests/unit_tests $(if $(INTEG_SRCS),$(BUILD)/tests/integration_tests)

.PHONY: all deps test bench run clean check-deps install uninstall
all: deps $(BINS)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing:" $$missing; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	  for s in redis-server memcached prometheus nutcracker etcd; do \
	    (systemctl disable --now $$s 2>/dev/null || service $$s stop 2>/dev/null) >/dev/null 2>&1 || true; done; \
	fi

# Every compile waits for `deps` (order-only: it never makes an object stale), so that with
# -j2 no compiler starts before apt-get has put uv.h and llhttp in place.
$(BUILD)/obj/%.o: %.cc | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# Every test file is compiled with tests/support/test_pch.h in front of it, precompiled once
# per build (that header says why). GCC takes NAME.gch in place of NAME when it sits beside
# it and was built with the same flags, so the header is copied into the build tree beside
# its .gch; a file whose flags differ (layers_test's -D below) reads the text instead.
TEST_PCH := $(BUILD)/obj/tests/pch/test_pch.h
$(TEST_PCH).gch: tests/support/test_pch.h Makefile | deps
	@mkdir -p $(dir $@)
	cp $< $(TEST_PCH)
	$(CXX) $(TEST_CXXFLAGS) -x c++-header $(TEST_PCH) -o $@

$(BUILD)/obj/tests/%.o: tests/%.cc $(TEST_PCH).gch | deps
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -include $(TEST_PCH) -c $< -o $@

# Integration test files take INTEG_CXXFLAGS: the same as TEST_CXXFLAGS in the plain build (one
# header for both), without the sanitizers under SAN=1 (a header of their own, by their flags).
# GNU make takes this rule over the one above for them: its stem is the shorter.
ifeq ($(INTEG_OPT),$(TEST_OPT))
INTEG_PCH := $(TEST_PCH)
else
INTEG_PCH := $(BUILD)/obj/tests/pch-integration/test_pch.h
$(INTEG_PCH).gch: tests/support/test_pch.h Makefile | deps
	@mkdir -p $(dir $@)
	cp $< $(INTEG_PCH)
	$(CXX) $(INTEG_CXXFLAGS) -x c++-header $(INTEG_PCH) -o $@
endif
$(BUILD)/obj/tests/integration/%.o: tests/integration/%.cc $(INTEG_PCH).gch | deps
	@mkdir -p $(dir $@)
	$(CXX) $(INTEG_CXXFLAGS) -include $(INTEG_PCH) -c $< -o $@

# The Makefile is a prerequisite: an object built before LLHTTP_DEFS changed must not survive.
$(BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/%.c Makefile | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LLHTTP) -c $< -o $@

# Before `deps` ran on a bare machine these files do not exist yet; the empty rule lets make
# plan the build anyway (the compile rule's order-only `deps` installs them first).
$(LLHTTP_SRCS:%=$(LLHTTP_DIR)/%):

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lb: $(BUILD)/obj/lb/app/main.o $(LIB)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(LDLIBS)

$(BUILD)/lb-origin: $(ORIGIN_SRCS:%.cc=$(BUILD)/obj/%.o) $(LIB)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(LDLIBS)

# The include-direction check (tools/layers) and the docs checks read this source tree.
SOURCE_DIR_TESTS := $(filter %/layers_test.cc %/selectors_doc_test.cc,$(UNIT_SRCS))
$(SOURCE_DIR_TESTS:%.cc=$(BUILD)/obj/%.o): TEST_CXXFLAGS += -DLB_SOURCE_DIR=\"$(CURDIR)\"

$(BUILD)/tests/unit_tests: $(UNIT_SRCS:%.cc=$(BUILD)/obj/%.o) $(TEST_SUPPORT:%.cc=$(BUILD)/obj/%.o) \
    $(BUILD)/obj/tools/layers/layers.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/tests/integration_tests: $(INTEG_SRCS:%.cc=$(BUILD)/obj/%.o) $(TEST_SUPPORT:%.cc=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/bench/lb_bench: $(BENCH_SRCS:%.cc=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(BENCH_LDLIBS) $(LDLIBS)

# `make test` builds with every core even when called without -j (CI's .ci/run calls plain
# `make test`; serially the two builds alone took over half an hour on 2 cores). GNU make 4.3
# ignores a -j added to MAKEFLAGS from inside the makefile, so the recipe runs a sub-make; a
# caller's own -j or -jN is kept as it is.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PARALLEL = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS))

test: deps
	@$(MAKE) --no-print-directory $(PARALLEL) $(BINS) $(TEST_BINS)
	@tests/run_all.sh $(BUILD)

bench: deps $(BINS) $(BUILD)/bench/lb_bench
	$(BUILD)/bench/lb_bench --benchmark_counters_tabular=true $(BENCH_ARGS)

run: deps $(BINS)
	@conf/run_demo.sh $(BUILD)

clean:
	rm -rf build build-san

# make install [PREFIX=/usr/local] [SYSCONFDIR=/etc] [DESTDIR=staging root]
#   PREFIX/bin/lb                          the proxy (lb-origin is a test tool: not installed)
#   PREFIX/lib/systemd/system/lb.service   conf/systemd/lb.service, its paths rewritten to
#                                          PREFIX and SYSCONFDIR; lb.socket beside it (optional
#                                          socket activation)
#   PREFIX/share/doc/lb/                   README.md, docs/*.md and *.svg, examples/ (conf/*.toml,
#                                          the Grafana dashboard, the Prometheus scrape config)
#   SYSCONFDIR/lb/lb.toml                  conf/lb.toml, only when there is none: an operator's
#                                          config is never overwritten
# DESTDIR stages everything under another root (packaging); the paths written into the unit
# are the final ones, without DESTDIR.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
DOCDIR = $(PREFIX)/share/doc/lb
UNITDIR = $(PREFIX)/lib/systemd/system
INSTALL_DOCS := README.md $(wildcard docs/*.md) $(wildcard docs/*.svg)
INSTALL_EXAMPLES := $(wildcard conf/*.toml) conf/grafana/lb.json conf/prometheus/prometheus.yml

install: $(BUILD)/lb
	install -D -m 0755 $(BUILD)/lb $(DESTDIR)$(PREFIX)/bin/lb
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(SYSCONFDIR)/lb
	sed -e 's|/usr/local|$(PREFIX)|g' -e 's|/etc/lb/|$(SYSCONFDIR)/lb/|g' conf/systemd/lb.service \
	  > $(DESTDIR)$(UNITDIR)/lb.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/lb.service
	sed -e 's|/usr/local|$(PREFIX)|g' conf/systemd/lb.socket > $(DESTDIR)$(UNITDIR)/lb.socket
	chmod 0644 $(DESTDIR)$(UNITDIR)/lb.socket
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(INSTALL_EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/lb/lb.toml ]; then \
	  echo "make install: keeping $(DESTDIR)$(SYSCONFDIR)/lb/lb.toml"; \
	else install -m 0644 conf/lb.toml $(DESTDIR)$(SYSCONFDIR)/lb/lb.toml; fi
	@[ -n "$(DESTDIR)" ] || echo "make install: edit $(SYSCONFDIR)/lb/lb.toml, then" \
	  "systemctl daemon-reload && systemctl enable --now lb;" \
	  "on a running lb, lb upgrade --pid \$$(systemctl show -p MainPID --value lb) starts this build without loss"

# Removes what install put in place except SYSCONFDIR/lb/lb.toml (the operator's config).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/lb $(DESTDIR)$(UNITDIR)/lb.service $(DESTDIR)$(UNITDIR)/lb.socket
	rm -rf $(DESTDIR)$(DOCDIR)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------------------------------
# Fuzzing (not part of `make test`): every tests/fuzz/NAME_fuzz.cc is a libFuzzer target,
# built with clang into build-fuzz/NAME_fuzz together with the whole library (toml++
# header-only there, so that the parser is instrumented too).
#
#   make fuzz                         build every target, run each for FUZZ_SECONDS (60) on a
#                                     scratch copy of its seeds (tests/fuzz/NAME_corpus/ or
#                                     tests/fuzz/corpus/NAME/)
#   make fuzz FUZZ_TARGETS=config FUZZ_SECONDS=600
FUZZ_BUILD := build-fuzz
FUZZ_CXX := clang++
FUZZ_CC := clang
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -std=c++20 -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
  -Wall -Wextra -I. -I$(LLHTTP_INC) -DTOML_HEADER_ONLY=1 \
  -DLB_VERSION=\"$(shell cat VERSION 2>/dev/null || echo 0.0.0)\" -pthread
# toml++'s debug asserts off, as in the Debian library lb links: its 3.3 parser asserts on
# "[\0" where the shipped build reports a parse error, and we fuzz what ships.
FUZZ_CXXFLAGS += '-DTOML_ASSERT(expr)=static_assert(true)'
FUZZ_TARGETS ?= $(patsubst tests/fuzz/%_fuzz.cc,%,$(wildcard tests/fuzz/*_fuzz.cc))
FUZZ_LIB_OBJS := $(LIB_SRCS:%.cc=$(FUZZ_BUILD)/obj/%.o) $(LLHTTP_SRCS:%.c=$(FUZZ_BUILD)/obj/llhttp/%.o)

.PHONY: fuzz
fuzz: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%_fuzz)
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf $(FUZZ_BUILD)/corpus/$$t && mkdir -p $(FUZZ_BUILD)/corpus/$$t && \
	  for d in tests/fuzz/$${t}_corpus tests/fuzz/corpus/$$t; do \
	    [ -d $$d ] && cp $$d/* $(FUZZ_BUILD)/corpus/$$t/; done; \
	  dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  echo "=== $${t}_fuzz for $(FUZZ_SECONDS)s"; \
	  $(FUZZ_BUILD)/$${t}_fuzz $$dict -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    -timeout=10 -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/$${t}- \
	    $(FUZZ_BUILD)/corpus/$$t || exit 1; \
	done

# Through an archive, as in the main build, so that a target links only what it reaches.
$(FUZZ_BUILD)/liblb.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/%_fuzz: $(FUZZ_BUILD)/obj/tests/fuzz/%_fuzz.o $(FUZZ_BUILD)/liblb.a
	$(FUZZ_CXX) $(FUZZ_SAN) -fsanitize=fuzzer -pthread -o $@ $^ \
	  $(filter-out -ltomlplusplus,$(LDLIBS))

.SECONDARY: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/obj/tests/fuzz/%_fuzz.o)

$(FUZZ_BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/%.c Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -I$(LLHTTP_INC) $(LLHTTP_DEFS) -c $< -o $@

ifneq ($(filter fuzz $(FUZZ_BUILD)/%,$(MAKECMDGOALS)),)
-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
endif
