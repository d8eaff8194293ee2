# conflux: plain Makefile. `make help` lists the targets.
CXX      ?= g++
BUILD    ?= release
PREFIX   ?= /usr/local
BUILDDIR ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
PKG_CONFIG ?= pkg-config

# Debian packages the project needs; `make deps` installs the missing ones.
DEB_PACKAGES ?= g++ make pkg-config openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools \
  libboost-program-options-dev libtomlplusplus-dev libfmt-dev libgtest-dev libopenblas-dev \
  zlib1g-dev clang-format time slurm-wlm munge

PKGS := ompi-c hdf5-openmpi fmt tomlplusplus openblas zlib
# Lazily expanded so that `make deps` can install them first within one invocation.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lboost_program_options -lpthread -ldl \
  $(CUDA_LIBS)

# GPU support (docs/gpu.md). CUDA=1 compiles src/**/*.cu with nvcc and links the CUDA runtime,
# cuBLAS and NCCL; CUDA=0 is the CPU-only build. Default: 1 when nvcc is installed.
CUDA_HOME ?= /usr/local/cuda
CUDA      ?= $(if $(wildcard $(CUDA_HOME)/bin/nvcc),1,0)
ifeq ($(filter 0 1,$(CUDA)),)
  $(error CUDA must be 0 or 1, not '$(CUDA)')
endif
NVCC      ?= $(CUDA_HOME)/bin/nvcc
# A100 (sm_80) and H100/H200 (sm_90) machine code, plus compute_90 PTX for newer GPUs.
CUDA_ARCH_FLAGS ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]

# NVCC_OPTFLAGS: the same for nvcc (host code through -Xcompiler). The asan build does not
# instrument .cu objects: the sanitizers cannot see device memory anyway.
ifeq ($(BUILD),release)
  OPTFLAGS ?= -O3 -march=x86-64-v2 -DNDEBUG
  NVCC_OPTFLAGS ?= -O3 -DNDEBUG -Xcompiler -march=x86-64-v2
else ifeq ($(BUILD),debug)
  OPTFLAGS ?= -O0 -g3 -D_GLIBCXX_ASSERTIONS
  NVCC_OPTFLAGS ?= -O0 -g -lineinfo -D_GLIBCXX_ASSERTIONS
else ifeq ($(BUILD),asan)
  OPTFLAGS ?= -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
  NVCC_OPTFLAGS ?= -O1 -g -lineinfo
  LDFLAGS  += -fsanitize=address,undefined
else
  $(error BUILD must be release, debug or asan, not '$(BUILD)')
endif

CXXFLAGS ?= -std=c++20 -Wall -Wextra -Wpedantic
CPPFLAGS += -Iinclude -MMD -MP -DOMPI_SKIP_MPICXX
# nvcc: C++20, host warnings as for g++ (-Wpedantic would only flag nvcc's generated code).
# FMT_USE_CONSTEXPR: fmt 9 turns constexpr off when it sees nvcc but keeps consteval format
# strings, which then fail to compile; with it on, .cu files use fmt (and error.hpp) normally.
NVCCFLAGS ?= -std=c++20 $(CUDA_ARCH_FLAGS) -Xcompiler -Wall,-Wextra -DFMT_USE_CONSTEXPR=1
ifeq ($(CUDA),1)
  # Every object of a CUDA build sees CONFLUX_HAVE_CUDA=1 and the CUDA headers (as system
  # headers: they are not -Wpedantic clean).
  CPPFLAGS += -DCONFLUX_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include
  # No -lcublas: cuBLAS (with cuBLASLt, ~190 MB of writable memory per process) is dlopen'ed
  # by gpu/cublas_api only when a GPU trainer needs it, so CPU ranks under [limits] stay small.
  CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lnccl
  # foo_nocuda.cpp: the CPU build's stand-in for foo.cu.
  SRC_FILTER := -not -name '*_nocuda.cpp'
  OUT      := $(BUILDDIR)/$(BUILD)
else
  SRC_FILTER :=
  # Separate objects, so that switching CUDA never mixes the two builds.
  OUT      := $(BUILDDIR)/$(BUILD)-cpu
endif
OBJDIR   := $(OUT)/obj
# Release binaries go to build/bin (what users run); debug/asan ones beside their objects.
BINDIR   := $(if $(filter release,$(BUILD)),$(BUILDDIR)/bin,$(OUT)/bin)
# Which build the binaries in BINDIR come from: rewritten only when CUDA changes, so that
# switching relinks them from the right objects.
FLAVOR   := $(BINDIR)/.flavor

LIB_SRCS   := $(shell find src -name '*.cpp' -not -path 'src/cli/*' $(SRC_FILTER) | sort) \
  $(if $(filter 1,$(CUDA)),$(shell find src -name '*.cu' -not -path 'src/cli/*' | sort))
CLI_SRCS   := $(shell find src/cli -name '*.cpp' | sort)
UNIT_SRCS  := $(shell find tests -name '*.cpp' -not -path 'tests/mpi/*' $(SRC_FILTER) | sort)
MPI_SRCS   := $(shell find tests/mpi -name '*.cpp' 2>/dev/null | sort)
BENCH_SRCS := $(shell find benchmarks -name '*.cpp' 2>/dev/null | sort)
PLUGIN_SRCS := $(shell find examples/plugins -maxdepth 1 \( -name '*.c' -o -name '*.cpp' \) \
  2>/dev/null | sort)

LIB := $(OUT)/libconflux.a
obj = $(patsubst %.cu,$(OBJDIR)/%.cu.o,$(patsubst %.cpp,$(OBJDIR)/%.o,$(1)))

CONFLUX     := $(BINDIR)/conflux
UNIT_TESTS  := $(BINDIR)/conflux-unit-tests
MPI_TESTS   := $(BINDIR)/conflux-mpi-tests
BENCH       := $(BINDIR)/conflux-bench
# Plugins sit in lib/ beside bin/ (build/lib for release, build/<BUILD>/lib otherwise), where
# the unit tests look for them relative to their own binary.
PLUGIN_DIR  := $(patsubst %/bin,%/lib,$(BINDIR))
PLUGINS     := $(patsubst %,$(PLUGIN_DIR)/libconflux-%.so,$(notdir $(basename $(PLUGIN_SRCS))))
# Built the same whatever BUILD is: a sanitizer-instrumented plugin could only be loaded by a
# sanitizer build of conflux, and users load these into release binaries.
PLUGIN_FLAGS := -O2 -Wall -Wextra -shared -fPIC -Iinclude

# Optional: the PyTorch baseline of `make bench`, and gnuplot for the PNG plots of conflux-bench
# --plot (skipped with a message without it).
BENCH_PACKAGES ?= python3-torch python3-numpy gnuplot-nox

.PHONY: all deps bench-deps test build-tests plugins demo bench docs install format format-check clean help \
  FORCE
all: $(CONFLUX) $(if $(BENCH_SRCS),$(BENCH)) plugins

help:
	@echo "make [BUILD=release|debug|asan]  build build/bin/conflux (and conflux-bench)"
	@echo "     [CUDA=0|1]                    1 (default when $(CUDA_HOME)/bin/nvcc exists): also"
	@echo "                                   the GPU code (nvcc, cuBLAS, NCCL); CUDA=0 forces the"
	@echo "                                   CPU-only build (CUDA_HOME=$(CUDA_HOME), docs/gpu.md)"
	@echo "make plugins                       build examples/plugins/*.c* into lib/libconflux-*.so"
	@echo "make deps                          install missing Debian packages"
	@echo "make demo                          deps + build + train the MNIST demo (2 trainers)"
	@echo "make test                          deps + build + all unit and MPI tests"
	@echo "make bench                         run benchmarks/ (MNIST vs PyTorch DDP, data service,"
	@echo "                                   checkpoints, scaling, grad sync, training) into bench-results/"
	@echo "make docs                          regenerate docs/config.md from the schema"
	@echo "make install PREFIX=/opt/conflux   install binaries, headers, configs"
	@echo "make format | format-check         clang-format every source file"

deps:
	@tools/install-deps.sh $(DEB_PACKAGES)

$(OBJDIR)/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(OPTFLAGS) $(CPPFLAGS) $(PKG_CFLAGS) $(EXTRA_CPPFLAGS) -c $< -o $@

$(OBJDIR)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) -ccbin $(CXX) $(NVCCFLAGS) $(NVCC_OPTFLAGS) $(CPPFLAGS) $(PKG_CFLAGS) $(EXTRA_CPPFLAGS) \
	  -c $< -o $@

# The git revision `conflux --version` prints, from a stamp rewritten only when it changes, so
# that a commit recompiles src/cli/version.cpp alone; the shell reads the stamp at compile time.
REVISION := $(OUT)/revision
$(REVISION): FORCE
	@mkdir -p $(dir $@)
	@if rev=$$(git rev-parse --short=12 HEAD 2>/dev/null); then \
	  git diff --quiet HEAD 2>/dev/null || rev="$$rev+local changes"; else rev=unknown; fi; \
	  echo "$$rev" | cmp -s - $@ 2>/dev/null || echo "$$rev" > $@
$(OBJDIR)/src/cli/version.o: $(REVISION)
$(OBJDIR)/src/cli/version.o: EXTRA_CPPFLAGS += -DCONFLUX_REVISION="\"$$(cat $(REVISION))\"" \
  -DCONFLUX_BUILD_TYPE=\"$(BUILD)\"

$(FLAVOR): FORCE
	@mkdir -p $(dir $@)
	@echo 'CUDA=$(CUDA)' | cmp -s - $@ 2>/dev/null || echo 'CUDA=$(CUDA)' > $@

$(LIB): $(call obj,$(LIB_SRCS))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(CONFLUX): $(call obj,$(CLI_SRCS)) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(PKG_LIBS)

$(BENCH): $(call obj,$(BENCH_SRCS)) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(PKG_LIBS)

plugins: $(PLUGINS)

$(PLUGIN_DIR)/libconflux-%.so: examples/plugins/%.c include/conflux/data/transform/plugin_abi.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(PLUGIN_FLAGS) $< -o $@

$(PLUGIN_DIR)/libconflux-%.so: examples/plugins/%.cpp include/conflux/data/transform/plugin_abi.h
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(PLUGIN_FLAGS) $< -o $@

$(UNIT_TESTS): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)
# Order-only: the tests dlopen the example plugins at run time but do not link them.
$(UNIT_TESTS): $(call obj,$(UNIT_SRCS)) $(LIB) $(FLAVOR) | $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(shell $(PKG_CONFIG) --libs gtest_main) $(PKG_LIBS)

$(MPI_TESTS): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)
$(MPI_TESTS): $(call obj,$(MPI_SRCS)) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(shell $(PKG_CONFIG) --libs gtest) $(PKG_LIBS)

$(call obj,$(UNIT_SRCS) $(MPI_SRCS)): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)

build-tests: $(CONFLUX) $(UNIT_TESTS) $(MPI_TESTS) plugins

# The README's test command: installs what is missing, builds, runs every test.
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) build-tests
	@CONFLUX_BIN=$(BINDIR) tests/run-all.sh

# The README's demo command: MNIST MLP on 2 trainer ranks under mpirun.
demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(CONFLUX)
	@CONFLUX_BIN=$(BINDIR) tools/run-demo.sh

# One at a time when installing them together fails, so that a missing PyTorch costs no plots.
bench-deps:
	@tools/install-deps.sh $(BENCH_PACKAGES) || for p in $(BENCH_PACKAGES); do \
	  tools/install-deps.sh $$p || echo "bench: $$p unavailable (python3-*: no PyTorch baseline;" \
	    "gnuplot-nox: no plots)"; done

bench: deps bench-deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@benchmarks/mnist_epoch_vs_pytorch.sh
	@benchmarks/data_service.sh
	@benchmarks/checkpoint.sh
	@benchmarks/plan_accuracy.sh
	@benchmarks/scenarios.sh

# docs/config.md = its hand-written head + the schema table printed by the binary.
docs: $(CONFLUX)
	@sed -n '1,/^it lists every key.$$/p' docs/config.md > $(OUT)/config-head.md
	@{ cat $(OUT)/config-head.md; echo; $(CONFLUX) config reference; } > docs/config.md
	@echo "docs/config.md regenerated"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib \
	  $(DESTDIR)$(PREFIX)/lib/conflux $(DESTDIR)$(PREFIX)/share/conflux/configs
	install -m 755 $(CONFLUX) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	$(if $(BENCH_SRCS),install -m 755 $(BENCH) $(DESTDIR)$(PREFIX)/bin/)
	$(if $(PLUGINS),install -m 755 $(PLUGINS) $(DESTDIR)$(PREFIX)/lib/conflux/)
	cp -r include/conflux $(DESTDIR)$(PREFIX)/include/
	install -m 644 configs/*.toml $(DESTDIR)$(PREFIX)/share/conflux/configs/

FORMAT_FILES = $(shell find include src tests benchmarks examples -name '*.hpp' -o -name '*.cpp' \
  -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' 2>/dev/null | sort)
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILDDIR)

-include $(shell find $(BUILDDIR) -name '*.d' 2>/dev/null)
