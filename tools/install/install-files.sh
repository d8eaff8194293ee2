#!/usr/bin/env bash
# `make install`'s one way to put a file in place: installs FILEs under ROOT/DEST with MODE and
# records, in ROOT/MANIFEST (MANIFEST and the recorded paths relative to ROOT), every file written ("f path") and every
# directory it had to create ("d path"), so that `make uninstall` (tools/install/uninstall.sh)
# removes exactly those and nothing that was there before.
#   install-files.sh [--base DIR] ROOT MANIFEST MODE DEST FILE...
# --base DIR keeps each FILE's path relative to DIR under DEST (a header tree); without it,
# files land in DEST by their base name. Re-installing adds to an existing manifest.
set -euo pipefail
base=
if [ "${1:-}" = "--base" ]; then base=$2; shift 2; fi
[ $# -ge 4 ] || { echo "usage: $0 [--base DIR] ROOT MANIFEST MODE DEST FILE..." >&2; exit 2; }
root=$1 manifest_rel=$2 mode=$3 dest=$4
shift 4
manifest=$root/$manifest_rel
record() {  # record "f|d path": once per manifest
  grep -qxF -- "$1" "$manifest" 2>/dev/null || echo "$1" >>"$manifest"
}
make_dir() {  # make_dir REL: creates ROOT/REL and its missing parents, recording each
  local rel=$1 parts=() part path="" created=()
  IFS=/ read -r -a parts <<<"$rel"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    path=${path:+$path/}$part
    [ -d "$root/$path" ] || created+=("$path")
  done
  [ ${#created[@]} -eq 0 ] && return
  # All first: the manifest itself may live in one of them.
  mkdir -p "$root/$rel"
  for path in "${created[@]}"; do record "d $path"; done
}
mkdir -p "$root"
make_dir "$(dirname "$manifest_rel")"
for file in "$@"; do
  if [ -n "$base" ]; then rel=${file#"$base"/}; else rel=$(basename "$file"); fi
  target_dir=$dest
  [ "$(dirname "$rel")" = . ] || target_dir=$dest/$(dirname "$rel")
  make_dir "$target_dir"
  install -m "$mode" "$file" "$root/$target_dir/"
  record "f $target_dir/$(basename "$rel")"
done
