# lb: every entry point. `make run` and `make test` are the two a newcomer needs (README.md).
#
#   make            build build/lb and build/lb-origin
#   make test       build and run every test binary; last line "N passed, N failed"
#   make test SAN=1 the same under AddressSanitizer + UBSan, built into build-san/
#   make bench      Google Benchmark microbenchmarks (bench/RESULTS.md records figures)
#   make run        start the demo: four lb-origin backends and lb with conf/demo.toml
#   make deps       apt-get whichever Debian packages below are missing

SHELL := /bin/bash
SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build-san
OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
SANLD := -fsanitize=address,undefined
else
BUILD ?= build
OPT := -O2 -g
SANLD :=
endif

DEB_PACKAGES := build-essential pkg-config libuv1-dev node-llhttp libtomlplusplus-dev \
  prometheus-cpp-dev libxxhash-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev \
  curl wrk redis-server redis-tools memcached prometheus

CXX ?= g++
CC ?= gcc
LLHTTP_DIR := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp
DEFS := -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -DLB_VERSION=\"$(shell cat VERSION 2>/dev/null || echo 0.0.0)\"
CXXFLAGS := -std=c++20 $(OPT) -Wall -Wextra -Werror -MMD -MP -I. -I$(LLHTTP_INC) $(DEFS) -pthread
CFLAGS_LLHTTP := $(OPT) -MMD -MP -I$(LLHTTP_INC)
LDLIBS := -ltomlplusplus -luv -lprometheus-cpp-core -lxxhash -lz -lpthread -ldl -lrt
TEST_LDLIBS := -lgmock -lgtest -lgtest_main
BENCH_LDLIBS := -lbenchmark -lbenchmark_main

# Sources by wildcard so that adding a file needs no Makefile edit.
LIB_SRCS := $(filter-out lb/main.cc lb/origin_main.cc,$(wildcard lb/*.cc)) \
  $(wildcard plugins/*.cc) $(wildcard plugins/selectors/*.cc) $(wildcard plugins/keys/*.cc)
LIB_OBJS := $(LIB_SRCS:%.cc=$(BUILD)/obj/%.o) \
  $(patsubst $(LLHTTP_DIR)/%.c,$(BUILD)/obj/llhttp/%.o,$(wildcard $(LLHTTP_DIR)/*.c))
UNIT_SRCS := $(wildcard tests/unit/*.cc)
INTEG_SRCS := $(wildcard tests/integration/*.cc)
INTEG_SUPPORT := $(wildcard tests/support/*.cc)
BENCH_SRCS := $(wildcard bench/*.cc)

LIB := $(BUILD)/liblb.a
BINS := $(BUILD)/lb $(BUILD)/lb-origin
TEST_BINS := $(BUILD)/tests/unit_tests $(if $(INTEG_SRCS),$(BUILD)/tests/integration_tests)

.PHONY: all deps test bench run clean check-deps
all: deps $(BINS)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing:" $$missing; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	  for s in redis-server memcached prometheus; do \
	    (systemctl disable --now $$s 2>/dev/null || service $$s stop 2>/dev/null) >/dev/null 2>&1 || true; done; \
	fi

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/llhttp/%.o: $(LLHTTP_DIR)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_LLHTTP) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lb: $(BUILD)/obj/lb/main.o $(LIB)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(LDLIBS)

$(BUILD)/lb-origin: $(BUILD)/obj/lb/origin_main.o $(LIB)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit_tests: $(UNIT_SRCS:%.cc=$(BUILD)/obj/%.o) $(INTEG_SUPPORT:%.cc=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/tests/integration_tests: $(INTEG_SRCS:%.cc=$(BUILD)/obj/%.o) $(INTEG_SUPPORT:%.cc=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/bench/lb_bench: $(BENCH_SRCS:%.cc=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(SANLD) -pthread -o $@ $^ $(BENCH_LDLIBS) $(LDLIBS)

test: deps $(BINS) $(TEST_BINS)
	@tests/run_all.sh $(BUILD)

bench: deps $(BINS) $(BUILD)/bench/lb_bench
	$(BUILD)/bench/lb_bench --benchmark_counters_tabular=true $(BENCH_ARGS)

run: deps $(BINS)
	@conf/run_demo.sh $(BUILD)

clean:
	rm -rf build build-san

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
