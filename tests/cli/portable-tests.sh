#!/usr/bin/env bash
# Portable results (docs/design.md invariant 8): with the machine's own OpenBLAS settings
# removed and CONFLUX_BLAS_PIN=portable, `make demo`'s run gives the recorded digest on any
# x86-64 CPU with AVX2, because conflux pins OpenBLAS's Haswell kernels itself. The user's
# OPENBLAS_CORETYPE and CONFLUX_BLAS_PIN=native (the default) leave OpenBLAS alone, and then a different kernel family gives a
# different digest: the pin is what makes the recorded one match. Skips, with the reason, where
# the pin cannot hold (no AVX2 and FMA; an OpenBLAS that ignores OPENBLAS_CORETYPE).
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

# `make demo` (tools/run-demo.sh) on an AMD EPYC (Zen 4, AVX2 and AVX-512), Debian 12's OpenBLAS
# 0.3.21: the digest recorded in README.md.
DEMO_DIGEST=b21c4bc29c007dcee474e256608ca456254b445d2ee6d250ab699cc519015855

# demo NAME [VAR=VALUE]...: the demo's run, without this machine's OpenBLAS variables.
demo() {
  local name=$1
  shift
  mapfile -t unset_blas < <(compgen -e | grep -E '^(OPENBLAS_|CONFLUX_BLAS_PIN$)' | sed 's/^/-u/')
  env "${unset_blas[@]}" "$@" "${MPIRUN[@]}" -np 2 "$CONFLUX" train \
    --config configs/mnist_mlp.toml --set "run.dir=$TMP/$name" >"$TMP/$name.log" 2>&1
}

version=$(env -u OPENBLAS_CORETYPE CONFLUX_BLAS_PIN=portable "$CONFLUX" --version)
if ! grep -q avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
  ok "the demo's recorded digest (skipped: this CPU lacks AVX2 or FMA, so conflux cannot pin OpenBLAS's Haswell kernels)"
elif ! grep -q '^BLAS .*; Haswell kernels, pinned to Haswell' <<<"$version"; then
  # e.g. an OpenBLAS built for one CPU, without DYNAMIC_ARCH: it ignores OPENBLAS_CORETYPE.
  ok "the demo's recorded digest (skipped: OpenBLAS did not take the pin: $(grep '^BLAS' <<<"$version"))"
else
  ok "conflux --version says OpenBLAS runs the pinned Haswell kernels"
  demo pinned CONFLUX_BLAS_PIN=portable
  d=$(digest_of "$TMP/pinned.log")
  model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
  if [ "$d" = "$DEMO_DIGEST" ]; then
    ok "the demo with CONFLUX_BLAS_PIN=portable and no OPENBLAS_* variables gives the recorded digest on this CPU ($model)"
  else
    not_ok "the demo's digest on $model is '$d', recorded $DEMO_DIGEST" "$(cat "$TMP/pinned.log")"
  fi
  if grep -q 'OPENBLAS_CORETYPE\|CONFLUX_BLAS_PIN' "$TMP/pinned.log"; then
    not_ok "a pinned run says nothing about the pin" "$(cat "$TMP/pinned.log")"
  fi

  # The default leaves OpenBLAS its own choice and says nothing about it.
  demo default
  if [ -n "$(digest_of "$TMP/default.log")" ] && ! grep -q 'OpenBLAS\|OPENBLAS_CORETYPE\|CONFLUX_BLAS_PIN' "$TMP/default.log"; then
    ok "with CONFLUX_BLAS_PIN unset conflux leaves OpenBLAS its own kernels, without a word"
  else
    not_ok "default run: no digest, or a word about OpenBLAS" "$(cat "$TMP/default.log")"
  fi

  demo native CONFLUX_BLAS_PIN=native OPENBLAS_CORETYPE=Sandybridge
  n=$(digest_of "$TMP/native.log")
  if [ -n "$n" ] && [ "$n" != "$DEMO_DIGEST" ] &&
    [ "$(grep -c 'CONFLUX_BLAS_PIN=native: OpenBLAS runs OPENBLAS_CORETYPE=Sandybridge' "$TMP/native.log")" -eq 1 ]; then
    ok "CONFLUX_BLAS_PIN=native leaves OpenBLAS alone: Sandybridge kernels give another digest, said once"
  else
    not_ok "native run: digest '$n' (want one other than $DEMO_DIGEST), one log line" "$(cat "$TMP/native.log")"
  fi

  demo user CONFLUX_BLAS_PIN=portable OPENBLAS_CORETYPE=Sandybridge
  u=$(digest_of "$TMP/user.log")
  if [ "$u" = "$n" ] && [ "$(grep -c 'OPENBLAS_CORETYPE=Sandybridge is set, so conflux does not pin' "$TMP/user.log")" -eq 1 ]; then
    ok "the user's OPENBLAS_CORETYPE is respected (the Sandybridge digest) and rank 0 says so once"
  else
    not_ok "user core type: digest '$u' (want the Sandybridge one, '$n'), one log line" "$(cat "$TMP/user.log")"
  fi
fi

expect_fail "train.conv_kernels = onednn with CONFLUX_BLAS_PIN=portable is bad input" 2 \
  'train.conv_kernels = "onednn" cannot give portable results' \
  -- env CONFLUX_BLAS_PIN=portable "$CONFLUX" train --config configs/mnist_mlp.toml \
  --set train.conv_kernels=onednn --set "run.dir=$TMP/refused"
expect_fail "an unknown CONFLUX_BLAS_PIN is bad input" 2 "CONFLUX_BLAS_PIN: expected portable or native" \
  -- env CONFLUX_BLAS_PIN=fast "$CONFLUX" --version
cli_summary
