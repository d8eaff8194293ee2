# conflux: plain Makefile. `make help` lists the targets.
CXX      ?= g++
BUILD    ?= release
PREFIX   ?= /usr/local
BUILDDIR ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
PKG_CONFIG ?= pkg-config

# The MPI implementation to build with (docs/launching.md, "MPI implementations"): openmpi or
# mpich. Default: Open MPI when its pkg-config file is installed, else MPICH when its is, else
# Open MPI (which `make deps` then installs). Headers and libraries come from the matching
# pkg-config packages, never from the `mpicxx` alternative, so both can be installed at once.
ifndef MPI
  MPI := $(shell if $(PKG_CONFIG) --exists ompi-c 2>/dev/null; then echo openmpi; \
    elif $(PKG_CONFIG) --exists mpich 2>/dev/null; then echo mpich; else echo openmpi; fi)
endif
MPI_PKGS_openmpi := ompi-c hdf5-openmpi
MPI_PKGS_mpich   := mpich hdf5-mpich
MPI_DEBS_openmpi := openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
MPI_DEBS_mpich   := mpich libmpich-dev libhdf5-mpich-dev
ifeq ($(MPI_PKGS_$(MPI)),)
  $(error MPI must be openmpi or mpich, not '$(MPI)')
endif
# The other implementation: `make test` also runs the MPI suites against a build with it.
OTHER_MPI := $(if $(filter openmpi,$(MPI)),mpich,openmpi)

# Debian packages that building and running conflux need; `make deps` installs the missing
# ones. hdf5-tools: h5dump, to read checkpoints and model files.
DEB_PACKAGES ?= g++ make pkg-config $(MPI_DEBS_$(MPI)) hdf5-tools \
  libboost-program-options-dev libtomlplusplus-dev libfmt-dev libopenblas-dev zlib1g-dev \
  protobuf-compiler libprotobuf-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libonnx-dev \
  libdnnl-dev
# (libjpeg62-turbo-dev: libjpeg-turbo's libjpeg API, jpeglib.h, whose jpeg_crop_scanline and
# jpeg_skip_scanlines decode only a crop's region; 2.1's TurboJPEG API cannot crop.
# libonnx-dev: ONNX's own schema, onnx/onnx.proto, compiled for `conflux export`.
# libdnnl-dev: oneDNN's convolutions, train.conv_kernels = onednn; it has no pkg-config file.)
# What only the tests need (`make test-deps`, run by `make test`): GoogleTest; GNU time (peak
# memory); SLURM and munge (the local test cluster of tests/cli/slurm-tests.sh); iproute2 and
# util-linux (ip, unshare, nsenter: the simulated hosts of tools/sim-cluster.sh); cmake (the
# find_package check of tests/cli/install-tests.sh); the other MPI with its parallel HDF5 (the
# MPI suites run under both); gnuplot and chromium (`conflux report` and its headless-browser
# check in tests/cli/report-tests.sh); python3 (the independent checkers in tests/);
# python3-numpy, python3-h5py and python3-torch (tests/cli/torch-tests.sh loads a run's
# model.h5 into PyTorch with tools/conflux_to_torch.py and compares it with conflux eval);
# python3-onnx (ONNX's checker on `conflux export`'s files, tests/cli/export-tests.sh);
# python3-venv (the real clients' virtual environment, CLIENTS_VENV below).
TEST_PACKAGES ?= libgtest-dev time slurm-wlm munge iproute2 util-linux cmake $(MPI_DEBS_$(OTHER_MPI)) gnuplot-nox \
  chromium python3 python3-numpy python3-h5py python3-torch python3-onnx python3-venv
# The real clients of conflux's files for tests/cli/clients-tests.sh (TensorBoard's reader, ONNX
# Runtime, h5py): `make test-deps` pip-installs tests/requirements-clients.txt (exact versions
# and wheel hashes) into this virtual environment of Debian's python3, never system-wide and
# never for the build; without PyPI it says so and the suite's checks are counted skips.
CLIENTS_VENV ?= $(BUILDDIR)/venv
# `make format` and `make format-check`.
FORMAT_PACKAGES ?= clang-format

PKGS := $(MPI_PKGS_$(MPI)) fmt tomlplusplus openblas zlib protobuf-lite libturbojpeg libjpeg libpng
# Lazily expanded so that `make deps` can install them first within one invocation.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -ldnnl -lgomp -lboost_program_options -lpthread -ldl \
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
# No MPI C++ bindings (conflux uses the C API): Open MPI's and MPICH's switches.
CPPFLAGS += -Iinclude -MMD -MP -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX
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
  OUT_BASE := $(BUILDDIR)/$(BUILD)
else
  SRC_FILTER :=
  # Separate objects, so that switching CUDA never mixes the two builds.
  OUT_BASE := $(BUILDDIR)/$(BUILD)-cpu
endif
# Separate objects and binaries per MPI too: build/release-cpu-mpich, build/release-mpich.
out_for    = $(OUT_BASE)$(if $(filter mpich,$(1)),-mpich)
# Release Open MPI binaries go to build/bin (what users run); the others beside their objects.
bindir_for = $(if $(filter release-openmpi,$(BUILD)-$(1)),$(BUILDDIR)/bin,$(call out_for,$(1))/bin)
OUT      := $(call out_for,$(MPI))
OBJDIR   := $(OUT)/obj
BINDIR   := $(call bindir_for,$(MPI))
# Which build the binaries in BINDIR come from, as make variables (the install test reads
# them): rewritten only when it changes, so that switching CUDA relinks from the right objects.
FLAVOR   := $(BINDIR)/.flavor
FLAVOR_TEXT := BUILD=$(BUILD) CUDA=$(CUDA) MPI=$(MPI)

LIB_SRCS   := $(shell find src -name '*.cpp' -not -path 'src/cli/*' $(SRC_FILTER) | sort) \
  $(if $(filter 1,$(CUDA)),$(shell find src -name '*.cu' -not -path 'src/cli/*' | sort))
CLI_SRCS   := $(shell find src/cli -name '*.cpp' | sort)
# tests/cli/ holds shell suites and the install test's consumer program, not unit tests.
# tests/bench/ tests conflux-bench's own code: its binary links that code, the unit tests none.
UNIT_SRCS  := $(shell find tests -name '*.cpp' -not -path 'tests/mpi/*' -not -path 'tests/cli/*' \
  -not -path 'tests/bench/*' $(SRC_FILTER) | sort)
BENCH_TEST_SRCS := $(shell find tests/bench -name '*.cpp' 2>/dev/null | sort)
MPI_SRCS   := $(shell find tests/mpi -name '*.cpp' 2>/dev/null | sort)
BENCH_SRCS := $(shell find benchmarks -name '*.cpp' 2>/dev/null | sort)
# testkit/: what conflux-bench and the tests share but libconflux.a must not ship (the JPEG and
# PNG encoders of the test images; docs/design.md, "Areas and their order").
TESTKIT_SRCS := $(shell find testkit -name '*.cpp' 2>/dev/null | sort)
PLUGIN_SRCS := $(shell find examples/plugins -maxdepth 1 \( -name '*.c' -o -name '*.cpp' \) \
  2>/dev/null | sort)

# C++ generated by protoc from proto/*.proto (telemetry's TensorBoard event files).
GENDIR     := $(OUT)/gen
PROTOS     := $(sort $(wildcard proto/*.proto))
PROTO_SRCS := $(patsubst proto/%.proto,$(GENDIR)/%.pb.cc,$(PROTOS))
# ONNX's schema as Debian ships it (libonnx-dev), for `conflux export --format onnx`.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
PROTO_SRCS += $(GENDIR)/onnx/onnx.pb.cc
PROTO_HDRS := $(PROTO_SRCS:.cc=.h)
CPPFLAGS   += -I$(GENDIR)

LIB := $(OUT)/libconflux.a
obj = $(patsubst %.cu,$(OBJDIR)/%.cu.o,$(patsubst %.cpp,$(OBJDIR)/%.o,$(1)))

CONFLUX     := $(BINDIR)/conflux
UNIT_TESTS  := $(BINDIR)/conflux-unit-tests
MPI_TESTS   := $(BINDIR)/conflux-mpi-tests
BENCH_TESTS := $(BINDIR)/conflux-bench-tests
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
BENCH_PACKAGES ?= python3-torch python3-torchvision python3-numpy gnuplot-nox libjpeg-turbo-progs

# The datasets: conflux reads data.dir, else $CONFLUX_DATA, else a per-user directory, never a
# path relative to the working directory (docs/design.md, "Data directory"). The targets that
# run it (test, demo, bench) pass the development and CI layout, ../shared/data beside the
# clone, as $CONFLUX_DATA when it exists and CONFLUX_DATA is not set already.
DEV_DATA := $(wildcard $(abspath ../shared/data))
ifneq ($(DEV_DATA),)
  export CONFLUX_DATA ?= $(DEV_DATA)
endif

.PHONY: all deps test-deps format-deps bench-deps test build-tests build-mpi-tests plugins demo \
  bench docs install uninstall format format-check clean help FORCE
all: $(CONFLUX) $(if $(BENCH_SRCS),$(BENCH)) plugins

help:
	@echo "make [BUILD=release|debug|asan]  build build/bin/conflux (and conflux-bench)"
	@echo "     [CUDA=0|1]                    1 (default when $(CUDA_HOME)/bin/nvcc exists): also"
	@echo "                                   the GPU code (nvcc, cuBLAS, NCCL); CUDA=0 forces the"
	@echo "                                   CPU-only build (CUDA_HOME=$(CUDA_HOME), docs/gpu.md)"
	@echo "     [MPI=openmpi|mpich]           MPI implementation (now: $(MPI)); MPICH builds go to"
	@echo "                                   build/<BUILD>[-cpu]-mpich/bin (docs/launching.md)"
	@echo "make plugins                       build examples/plugins/*.c* into lib/libconflux-*.so"
	@echo "make deps                          install the missing Debian packages to build and run"
	@echo "make test-deps                     ... and those only the tests need (SLURM, munge, iproute2,"
	@echo "                                   cmake, GoogleTest, the other MPI), and $(CLIENTS_VENV):"
	@echo "                                   TensorBoard, ONNX Runtime, h5py from PyPI, pinned"
	@echo "make demo                          deps + build + train the MNIST demo (2 trainers)"
	@echo "make test                          deps + test-deps + build + every test under $(MPI),"
	@echo "                                   then the MPI suites again under $(OTHER_MPI)"
	@echo "make bench                         run benchmarks/ (MNIST vs PyTorch DDP, data service,"
	@echo "                                   checkpoints, scaling, grad sync, training) into bench-results/"
	@echo "make bundle                        build + pack the binaries, test binaries, Open MPI and the"
	@echo "                                   libraries a GPU host lacks into $(BUILDDIR)/bundle (docs/gpu.md)"
	@echo "make docs                          regenerate docs/config.md from the schema"
	@echo "make install PREFIX=/opt/conflux   install binaries, headers, libconflux.a, pkg-config and"
	@echo "     [DESTDIR=/stage]              CMake files, configs, the S3 tables (PREFIX=$(PREFIX))"
	@echo "make uninstall PREFIX=/opt/conflux remove exactly what install wrote (its manifest)"
	@echo "make format | format-check         clang-format every source file"
	@echo "Datasets: data.dir, else \$$CONFLUX_DATA, else \$${XDG_DATA_HOME:-\$$HOME/.local/share}/conflux/data;"
	@echo "  test, demo and bench set CONFLUX_DATA=../shared/data when it exists (now: $(or $(CONFLUX_DATA),unset))"

deps:
	@tools/install-deps.sh $(DEB_PACKAGES)

test-deps:
	@tools/install-deps.sh $(TEST_PACKAGES)
	@tests/cli/clients-venv.sh $(CLIENTS_VENV)

format-deps:
	@tools/install-deps.sh $(FORMAT_PACKAGES)

# Adam's update divides by a square root of its second moment, which is never negative: without
# errno handling the square root is an instruction and the loop vectorises (the results are
# the same bits; src/model/adam.cpp).
$(OBJDIR)/src/model/adam.o: OPTFLAGS += -fno-math-errno

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
	@echo '$(FLAVOR_TEXT)' | cmp -s - $@ 2>/dev/null || echo '$(FLAVOR_TEXT)' > $@

$(GENDIR)/%.pb.cc $(GENDIR)/%.pb.h: proto/%.proto
	@mkdir -p $(GENDIR)
	protoc --proto_path=proto --cpp_out=$(GENDIR) $<

$(GENDIR)/onnx/onnx.pb.cc $(GENDIR)/onnx/onnx.pb.h: $(ONNX_PROTO)
	@mkdir -p $(GENDIR)
	protoc --proto_path=$(patsubst %/onnx/,%,$(dir $(ONNX_PROTO))) --cpp_out=$(GENDIR) $<

# Generated code is protoc's, not ours: compiled without our warnings. Every object may include
# a generated header, so the headers come first (order-only).
$(OBJDIR)/gen/%.pb.o: $(GENDIR)/%.pb.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPTFLAGS) $(CPPFLAGS) $(PKG_CFLAGS) -c $< -o $@
$(call obj,$(LIB_SRCS)): | $(PROTO_HDRS)

$(LIB): $(call obj,$(LIB_SRCS)) $(patsubst $(GENDIR)/%.pb.cc,$(OBJDIR)/gen/%.pb.o,$(PROTO_SRCS))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(CONFLUX): $(call obj,$(CLI_SRCS)) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(PKG_LIBS)

$(BENCH): $(call obj,$(BENCH_SRCS) $(TESTKIT_SRCS)) $(LIB) $(FLAVOR)
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
$(UNIT_TESTS): $(call obj,$(UNIT_SRCS) $(TESTKIT_SRCS)) $(LIB) $(FLAVOR) | $(PLUGINS)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(shell $(PKG_CONFIG) --libs gtest_main) $(PKG_LIBS)

# The tests of conflux-bench's own code (its reporting, its scaled models) with that code.
$(BENCH_TESTS): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)
$(BENCH_TESTS): $(call obj,$(BENCH_TEST_SRCS) benchmarks/report.cpp) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(shell $(PKG_CONFIG) --libs gtest_main) $(PKG_LIBS)

$(MPI_TESTS): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)
$(MPI_TESTS): $(call obj,$(MPI_SRCS)) $(LIB) $(FLAVOR)
	@mkdir -p $(dir $@)
	$(CXX) $(OPTFLAGS) $(filter-out $(FLAVOR),$^) -o $@ $(LDFLAGS) $(shell $(PKG_CONFIG) --libs gtest) $(PKG_LIBS)

$(call obj,$(UNIT_SRCS) $(MPI_SRCS) $(BENCH_TEST_SRCS)): EXTRA_CPPFLAGS = $(shell $(PKG_CONFIG) --cflags gtest)

build-tests: $(CONFLUX) $(BENCH) $(UNIT_TESTS) $(BENCH_TESTS) $(MPI_TESTS) plugins
# What the MPI-dependent suites need (tests/run-all.sh --mpi-only): no unit tests.
build-mpi-tests: $(CONFLUX) $(BENCH) $(MPI_TESTS) plugins

# The README's test command: installs what is missing, builds (all: the install test installs
# conflux-bench too, and must not build it), runs every test under $(MPI), then the
# MPI-dependent suites again against a build with $(OTHER_MPI).
test: deps test-deps
	@$(MAKE) --no-print-directory -j$(JOBS) MPI=$(MPI) all build-tests
	@$(MAKE) --no-print-directory -j$(JOBS) MPI=$(OTHER_MPI) build-mpi-tests
	@CONFLUX_BIN=$(BINDIR) CONFLUX_OTHER_MPI_BIN=$(call bindir_for,$(OTHER_MPI)) \
	  CONFLUX_CLIENTS_VENV=$(CLIENTS_VENV) tests/run-all.sh

# The README's demo command: MNIST MLP on 2 trainer ranks under mpirun.
demo: deps
	@$(MAKE) --no-print-directory -j$(JOBS) MPI=$(MPI) $(CONFLUX)
	@CONFLUX_BIN=$(BINDIR) tools/run-demo.sh

# One at a time when installing them together fails, so that a missing PyTorch costs no plots.
bench-deps:
	@tools/install-deps.sh $(BENCH_PACKAGES) || for p in $(BENCH_PACKAGES); do \
	  tools/install-deps.sh $$p || echo "bench: $$p unavailable (python3-*: no PyTorch baseline;" \
	    "gnuplot-nox: no plots)"; done

bench: deps bench-deps
	@$(MAKE) --no-print-directory -j$(JOBS) MPI=$(MPI) all
	@CONFLUX_BIN=$(BINDIR) benchmarks/mnist_epoch_vs_pytorch.sh
	@CONFLUX_BIN=$(BINDIR) benchmarks/data_service.sh
	@CONFLUX_BIN=$(BINDIR) benchmarks/checkpoint.sh
	@CONFLUX_BIN=$(BINDIR) benchmarks/plan_accuracy.sh
	@CONFLUX_BIN=$(BINDIR) benchmarks/scenarios.sh

# `make bundle`: the binaries, the test binaries, the example plugins, Open MPI and every library
# a GPU host without the build's packages lacks, in one relocatable archive,
# $(BUILDDIR)/bundle/conflux-bundle.tar.xz, for tools/gpu-check.sh there (docs/gpu.md, "Device
# check and bundle"). Open MPI builds only.
.PHONY: bundle
bundle: all build-tests
	@tools/make-bundle.sh $(BINDIR) $(BUILDDIR)/bundle

# docs/config.md = its hand-written head + the schema table printed by the binary.
docs: $(CONFLUX)
	@sed -n '1,/^it lists every key.$$/p' docs/config.md > $(OUT)/config-head.md
	@{ cat $(OUT)/config-head.md; echo; $(CONFLUX) config reference; } > docs/config.md
	@echo "docs/config.md regenerated"

# `make install`: the binaries, libconflux.a and its headers, the example plugins, configs, the
# Lambda-S3 tables (found relative to the installed binary), a pkg-config file and a CMake
# package for programs built against conflux, and LICENSE. Every file and every directory it
# creates is recorded in a manifest, which `make uninstall` follows (tools/install/).
VERSION := $(shell sed -n 's/.*kVersion = "\([^"]*\)".*/\1/p' src/cli/version.hpp)
INSTALL_ROOT  = $(DESTDIR)$(PREFIX)
MANIFEST      := share/conflux/install-manifest.txt
INSTALL_FILES = tools/install/install-files.sh "$(INSTALL_ROOT)" $(MANIFEST)
GENERATED     := $(OUT)/install
# What a program built against libconflux.a needs besides the pkg-config packages in PKGS.
CONSUMER_CFLAGS := -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX \
  $(if $(filter 1,$(CUDA)),-DCONFLUX_HAVE_CUDA=1 -I$(CUDA_HOME)/include)
CONSUMER_LIBS   := -ldnnl -lgomp -lboost_program_options -lpthread -ldl $(CUDA_LIBS)
INSTALL_SED = -e 's|@VERSION@|$(VERSION)|g' -e 's|@MPI@|$(MPI)|g' -e 's|@REQUIRES@|$(PKGS)|g' \
  -e 's|@CFLAGS@|$(strip $(CONSUMER_CFLAGS))|g' -e 's|@LIBS@|$(strip $(CONSUMER_LIBS))|g' \
  -e 's|@CMAKE_DEFINES@|OMPI_SKIP_MPICXX;MPICH_SKIP_MPICXX$(if $(filter 1,$(CUDA)),;CONFLUX_HAVE_CUDA=1)|g' \
  -e 's|@CMAKE_CUDA_INCLUDE@|$(if $(filter 1,$(CUDA)),;$(CUDA_HOME)/include)|g' \
  -e 's|@CMAKE_CUDA_LINK_DIR@|$(if $(filter 1,$(CUDA)),$(CUDA_HOME)/lib64)|g' \
  -e 's|@CMAKE_CUDA_LIBS@|$(if $(filter 1,$(CUDA)),;-Wl$(comma)-rpath$(comma)$(CUDA_HOME)/lib64;cudart;nccl)|g'
comma := ,
# The headers that need the CUDA toolkit announce it with an #error when CONFLUX_HAVE_CUDA is off
# (gpu/handles.hpp, gpu/check.hpp, ...): a CPU-only build installs none of them.
CUDA_ONLY_HEADERS := $(shell grep -rlE '^\#error "conflux/.* needs a CUDA build' include/conflux | sort)
INSTALL_HEADERS    = $(filter-out $(if $(filter 0,$(CUDA)),$(CUDA_ONLY_HEADERS)), \
  $(shell find include/conflux -type f | sort))

install: all
	@rm -rf $(GENERATED) && mkdir -p $(GENERATED)
	@for f in conflux.pc conflux-config.cmake conflux-config-version.cmake; do \
	  sed $(INSTALL_SED) tools/install/$$f.in > $(GENERATED)/$$f || exit 1; done
	@$(INSTALL_FILES) 755 bin $(CONFLUX) $(if $(BENCH_SRCS),$(BENCH))
	@$(INSTALL_FILES) 644 lib $(LIB)
	@$(if $(PLUGINS),$(INSTALL_FILES) 755 lib/conflux $(PLUGINS))
	@tools/install/install-files.sh --base include "$(INSTALL_ROOT)" $(MANIFEST) 644 include \
	  $(INSTALL_HEADERS)
	@$(INSTALL_FILES) 644 share/conflux/configs configs/*.toml
	@$(INSTALL_FILES) 644 share/conflux/lambda-s3-transfer share/conflux/lambda-s3-transfer/*
	@$(INSTALL_FILES) 644 lib/pkgconfig $(GENERATED)/conflux.pc
	@$(INSTALL_FILES) 644 lib/cmake/conflux $(GENERATED)/conflux-config.cmake \
	  $(GENERATED)/conflux-config-version.cmake
	@$(INSTALL_FILES) 644 share/doc/conflux LICENSE README.md
	@echo "installed conflux $(VERSION) ($(FLAVOR_TEXT)) into $(INSTALL_ROOT)" \
	  "($$(grep -c '^f ' "$(INSTALL_ROOT)/$(MANIFEST)") files; manifest $(MANIFEST))"

uninstall:
	@tools/install/uninstall.sh "$(INSTALL_ROOT)" $(MANIFEST)

FORMAT_FILES = $(shell find include src tests benchmarks testkit examples -name '*.hpp' -o -name '*.cpp' \
  -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' 2>/dev/null | sort)
format: format-deps
	clang-format -i $(FORMAT_FILES)
format-check: format-deps
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILDDIR)

-include $(shell find $(BUILDDIR) -name '*.d' 2>/dev/null)
