#!/usr/bin/env bash
# `make uninstall`: removes what `make install` recorded in MANIFEST (tools/install/
# install-files.sh): every file, then every directory it created, deepest first, when empty
# (a directory that now holds files of others stays, with a note), then the manifest itself.
#   uninstall.sh ROOT MANIFEST      (MANIFEST relative to ROOT)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 ROOT MANIFEST" >&2; exit 2; }
root=$1 manifest=$1/$2
if [ ! -f "$manifest" ]; then
  echo "uninstall: no install manifest at $manifest (nothing installed with this PREFIX/DESTDIR)" >&2
  exit 2
fi
files=0
dirs=()
while read -r kind path; do
  case $kind in
    f) if [ -e "$root/$path" ] || [ -L "$root/$path" ]; then rm -f "$root/$path"; files=$((files + 1)); fi ;;
    d) dirs+=("$path") ;;
  esac
done <"$manifest"
rm -f "$manifest"
removed=0 kept=0
# Deepest first: by the number of slashes, descending.
while IFS= read -r path; do
  if [ -z "$path" ] || [ ! -d "$root/$path" ]; then continue; fi
  if rmdir "$root/$path" 2>/dev/null; then
    removed=$((removed + 1))
  else
    echo "uninstall: kept $root/$path: it holds files conflux did not install"
    kept=$((kept + 1))
  fi
done < <(for d in ${dirs[@]+"${dirs[@]}"}; do
  slashes=${d//[^\/]/}
  echo "${#slashes} $d"
done | sort -rn | cut -d' ' -f2-)
echo "uninstall: removed $files files and $removed directories under $root ($kept kept)"
