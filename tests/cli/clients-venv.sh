#!/usr/bin/env bash
# `make test-deps`: the Python virtual environment of tests/cli/clients-tests.sh (TensorBoard,
# ONNX Runtime, h5py at the exact versions and wheel hashes of tests/requirements-clients.txt),
# made with Debian's /usr/bin/python3 in VENV (default build/venv). Never system-wide, never
# used to build conflux. Does nothing when VENV's stamp names the same requirements and Python.
# Without PyPI it says so and exits 0: the suite then skips its checks, visibly.
# Usage: tests/cli/clients-venv.sh [VENV]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 3
VENV=${1:-build/venv}
REQ=tests/requirements-clients.txt
PY=/usr/bin/python3
STAMP=$VENV/.conflux-requirements

if ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "test-deps: $PY cannot make a virtual environment (python3-venv missing):" \
    "the TensorBoard, ONNX Runtime and h5py checks will be skipped"
  exit 0
fi
key="$(sha256sum "$REQ" | cut -d' ' -f1) $("$PY" -c 'import sys; print(sys.version.split()[0])')"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$key" ]; then
  echo "test-deps: $VENV up to date ($REQ)"
  exit 0
fi

echo "test-deps: installing $REQ into $VENV"
rm -rf "$VENV"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Short timeouts: a machine without PyPI learns it in seconds, not after pip's long retries.
if "$PY" -m venv "$VENV" >"$log" 2>&1 &&
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
    --only-binary=:all: --timeout 30 --retries 2 -r "$REQ" >>"$log" 2>&1; then
  echo "$key" >"$STAMP"
  echo "test-deps: $VENV ready: $("$VENV/bin/python" -m pip freeze --all 2>/dev/null | grep -ciE '^[a-z0-9_.-]+==') pinned packages"
else
  echo "test-deps: could not install $REQ (no PyPI here?): the TensorBoard, ONNX Runtime and" \
    "h5py checks of tests/cli/clients-tests.sh will be skipped. pip said:"
  tail -3 "$log" | sed 's/^/test-deps:   /'
  rm -rf "$VENV"
fi
exit 0
