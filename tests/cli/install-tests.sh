#!/usr/bin/env bash
# Tests of `make install` / `make uninstall` with the binaries already built in $CONFLUX_BIN
# (install must not compile anything): into a temporary PREFIX, then, from another working
# directory, the installed conflux plans for Lambda with the S3 tables installed beside it (and
# says where it looked when they are not there), trains briefly with $CONFLUX_DATA, and a small
# C++ program builds against the installed tree through pkg-config and through CMake's
# find_package(conflux), runs and prints the expected values; DESTDIR stages an install; and
# `make uninstall` leaves no file behind.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
ROOT=$PWD
BIN=${CONFLUX_BIN:-build/bin}
# The make variables of the build in $BIN (BUILD=... CUDA=... MPI=...), from its stamp.
read -r -a FLAVOR <"$BIN/.flavor" 2>/dev/null || FLAVOR=()
if [ ${#FLAVOR[@]} -eq 0 ]; then
  not_ok "install tests: $BIN/.flavor missing; build with make first"
  cli_summary
  exit
fi
MAKE_ARGS=(--no-print-directory -C "$ROOT" "${FLAVOR[@]}")
PREFIX=$TMP/prefix
WORK=$TMP/work
mkdir -p "$PREFIX" "$WORK"

# --- make install: no compiling, every part in its place ------------------------------------------
# Up to date first: a commit since the build recompiles version.cpp alone (the revision it
# prints), which is make all's business, not install's.
make "${MAKE_ARGS[@]}" -s all >/dev/null 2>&1
before=$(stat -c %Y "$BIN/conflux")
out=$(make "${MAKE_ARGS[@]}" install PREFIX="$PREFIX" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && ! grep -qE '^(g\+\+|c\+\+|cc|nvcc|ar) ' <<<"$out" && [ "$(stat -c %Y "$BIN/conflux")" = "$before" ]; then
  ok "make install ${FLAVOR[*]}: reuses the built binaries (nothing compiled)"
else
  not_ok "make install: exit $rc, or it compiled" "$out"
fi
missing=()
for f in bin/conflux lib/libconflux.a include/conflux/config/config.hpp include/conflux/data/transform/plugin_abi.h \
  lib/pkgconfig/conflux.pc lib/cmake/conflux/conflux-config.cmake lib/cmake/conflux/conflux-config-version.cmake \
  share/conflux/lambda-s3-transfer/f.csv share/conflux/lambda-s3-transfer/SOURCE.md \
  share/conflux/configs/mnist_mlp.toml share/conflux/install-manifest.txt share/doc/conflux/LICENSE; do
  [ -e "$PREFIX/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then ok "installed: binary, library, headers, pkg-config, CMake, S3 tables, configs, manifest"; else
  not_ok "not installed: ${missing[*]}"; fi

# --- the installed headers: none that needs CUDA in a CPU-only build, every one in a CUDA build;
# no test-only code in the headers or in libconflux.a -------------------------------------------------
# A header needs CUDA when it refuses to compile without it (#error) or includes the toolkit's.
CUDA_HEADER='^#error .*needs a CUDA build|^#include <(cuda|cudnn|cublas|nccl)[^>]*>'
needs_cuda() { (cd "$1" && grep -rlE "$CUDA_HEADER" include/conflux | sort); }
installed_cuda=$(needs_cuda "$PREFIX")
source_cuda=$(needs_cuda "$ROOT")
if [[ " ${FLAVOR[*]} " == *" CUDA=0 "* ]]; then
  if [ -z "$installed_cuda" ] && [ -n "$source_cuda" ]; then
    ok "CPU-only build: none of the $(wc -l <<<"$source_cuda") headers that need CUDA is installed"
  else
    not_ok "CPU-only build installed headers that need CUDA (or none in the source tree)" "$installed_cuda"
  fi
elif [ -n "$source_cuda" ] && [ "$installed_cuda" = "$source_cuda" ]; then
  ok "CUDA build: the $(wc -l <<<"$source_cuda") headers that need CUDA are installed"
else
  not_ok "CUDA build: the installed CUDA headers differ from the source tree's" \
    "installed: $installed_cuda / source: $source_cuda"
fi
test_code=$(grep -rlE '#include [<"](gtest/|[./]*(tests|testkit|benchmarks)/)' "$PREFIX/include" | head -5)
test_symbols=$(nm -C "$PREFIX/lib/libconflux.a" 2>/dev/null | grep -cE ' [TW] .*conflux::(testkit|bench|testing)::')
if [ -z "$test_code" ] && [ "$test_symbols" = 0 ] && [ ! -e "$PREFIX/include/conflux/testkit" ]; then
  ok "no test-only code installed (no header includes gtest, tests/, testkit/ or benchmarks/; no test symbol in libconflux.a)"
else
  not_ok "test-only code installed: $test_symbols symbols in libconflux.a" "$test_code"
fi

# --- the installed conflux, from another working directory -----------------------------------------
cat >"$WORK/model.toml" <<'TOML'
dataset = "mnist"
source = "install test"
epoch_samples = 60000
gradient_mb = 2.1
mb_per_vcpu = 1769.0
[train]
a = 0.5
b = 8.0
m = 100.0
c = 0.0
[transfer]
k1 = 0.002
k2 = -0.3
TOML
CONFIG=$PREFIX/share/conflux/configs/mnist_mlp.toml
PLAN=(plan --target lambda --model "$WORK/model.toml" --config "$CONFIG" --deadline 36000)
out=$(cd "$WORK" && "$PREFIX/bin/conflux" "${PLAN[@]}" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^chosen:' <<<"$out"; then
  ok "installed conflux plan --target lambda from $WORK: the S3 tables found beside the binary"
else
  not_ok "installed conflux plan --target lambda: exit $rc" "$out"
fi
# A copy with no share/ beside it says where it looked; --s3-table still works.
mkdir -p "$TMP/lone/bin"
cp "$PREFIX/bin/conflux" "$TMP/lone/bin/"
expect_fail "no S3 tables beside the binary: names the places and --s3-table" 2 \
  "lambda-s3-transfer not found beside the executable (looked in: $TMP/lone/share/conflux/lambda-s3-transfer" -- \
  env -C "$WORK" "$TMP/lone/bin/conflux" "${PLAN[@]}"
out=$(env -C "$WORK" "$TMP/lone/bin/conflux" "${PLAN[@]}" --s3-table "$PREFIX/share/conflux/lambda-s3-transfer" 2>&1)
if grep -q '^chosen:' <<<"$out"; then ok "--s3-table DIR overrides the installed tables"; else
  not_ok "--s3-table" "$out"; fi
if [ -d "$DATA/mnist" ]; then
  out=$(cd "$WORK" && "${MPIRUN[@]}" -np 2 "$PREFIX/bin/conflux" train --config "$CONFIG" "${QUICK[@]}" \
    --set train.epochs=1 --set "run.dir=$WORK/run" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] && [ -n "$(digest_of <(echo "$out"))" ] && [ -f "$WORK/run/model.h5" ]; then
    ok "installed conflux trains from $WORK with CONFLUX_DATA=$DATA"
  else
    not_ok "installed conflux train: exit $rc" "$out"
  fi
else
  ok "installed conflux train (skipped: $DATA/mnist not found)"
fi

# --- a program built against the installed tree ------------------------------------------------
check_consumer() {  # check_consumer NAME BINARY
  local out
  out=$("$2" "$PREFIX/share/conflux/lambda-s3-transfer" 2>&1)
  if grep -qx 'sha256(abc) = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' <<<"$out" &&
    grep -q '^s3 table: 36 object sizes' <<<"$out" && grep -qx 'data.dir = /datasets' <<<"$out" &&
    grep -q "^MPI library: $([ "$CONFLUX_MPI" = mpich ] && echo MPICH || echo 'Open MPI')" <<<"$out"; then
    ok "$1: builds, links libconflux.a and its libraries, runs ($(grep '^MPI library' <<<"$out"))"
  else
    not_ok "$1: unexpected output" "$out"
  fi
}
# pkg-config's words are meant to split into g++'s arguments.
read -r -a PC_FLAGS <<<"$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs conflux 2>&1)"
if out=$(cd "$WORK" && g++ -std=c++20 -O0 -o consumer-pc "$ROOT/tests/cli/install/consumer.cpp" \
  "${PC_FLAGS[@]}" 2>&1); then
  check_consumer "pkg-config --cflags --libs conflux" "$WORK/consumer-pc"
else
  not_ok "g++ with pkg-config conflux" "$out"
fi
if command -v cmake >/dev/null; then
  if out=$(cmake -S "$ROOT/tests/cli/install" -B "$WORK/cmake" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_BUILD_TYPE=Release -DCONFLUX_WANT_VERSION=0.1 2>&1 && cmake --build "$WORK/cmake" 2>&1); then
    check_consumer "CMake find_package(conflux 0.1) + conflux::conflux" "$WORK/cmake/consumer"
  else
    not_ok "CMake find_package(conflux)" "$out"
  fi
  expect_fail "CMake find_package(conflux 9) refuses the installed version 0.1.0" 1 "conflux-config.cmake, version: 0.1.0" -- \
    cmake -S "$ROOT/tests/cli/install" -B "$WORK/cmake9" -DCMAKE_PREFIX_PATH="$PREFIX" -DCONFLUX_WANT_VERSION=9
else
  ok "CMake find_package (skipped: cmake not installed; make test-deps installs it)"
fi

# --- uninstall; DESTDIR ------------------------------------------------------------------------
out=$(make "${MAKE_ARGS[@]}" uninstall PREFIX="$PREFIX" 2>&1)
left=$(find "$PREFIX" -mindepth 1 | head -5)
if [ -z "$left" ] && grep -q "uninstall: removed" <<<"$out"; then ok "make uninstall leaves nothing in PREFIX"; else
  not_ok "make uninstall left: $left" "$out"; fi
expect_fail "make uninstall without an install: exit 2, says so" 2 "no install manifest" -- \
  make "${MAKE_ARGS[@]}" -s uninstall PREFIX="$PREFIX"
mkdir -p "$TMP/stage"
out=$(make "${MAKE_ARGS[@]}" install DESTDIR="$TMP/stage" PREFIX=/opt/conflux 2>&1 &&
  make "${MAKE_ARGS[@]}" uninstall DESTDIR="$TMP/stage" PREFIX=/opt/conflux 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "into $TMP/stage/opt/conflux" <<<"$out" && [ -z "$(find "$TMP/stage" -type f)" ] &&
  [ ! -e /opt/conflux/share/conflux/install-manifest.txt ]; then
  ok "DESTDIR stages under \$DESTDIR\$PREFIX; uninstall with the same DESTDIR removes every file"
else
  not_ok "DESTDIR install/uninstall: exit $rc" "$out"
fi

cli_summary
