#!/usr/bin/env bash
# Lists every #include that runs up the area order of docs/design.md ("Areas and their order")
# and exits 1 when there is one. Run by tests/run-all.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# Lower first; data's sub-areas are areas of their own here.
order=(core hdf5 config comm telemetry offload model data/io data/transform data/pipeline data/service
  gpu ckpt train plan report cli)
rank_of() {  # rank_of AREA_PATH: index in $order, or empty
  local i
  for i in "${!order[@]}"; do
    if [ "$1" = "${order[$i]}" ]; then
      echo "$i"
      return
    fi
  done
}
area_of() {  # area_of PATH-BELOW-conflux-or-src: "data/io" for data/io/x.hpp, "core" for core/x.hpp
  local p=$1
  case $p in
    data/*) echo "$p" | cut -d/ -f1-2 ;;
    *) echo "$p" | cut -d/ -f1 ;;
  esac
}
violations=0
while IFS= read -r file; do
  rel=${file#include/conflux/}
  rel=${rel#src/}
  from=$(area_of "$rel")
  from_rank=$(rank_of "$from")
  [ -n "$from_rank" ] || { echo "check-layering: $file: area '$from' is not in the order" >&2; exit 2; }
  while IFS= read -r inc; do
    to=$(area_of "$inc")
    to_rank=$(rank_of "$to")
    [ -n "$to_rank" ] || { echo "check-layering: $file includes unknown area '$to'" >&2; exit 2; }
    if [ "$to_rank" -gt "$from_rank" ]; then
      echo "upward include: $file ($from) -> conflux/$inc ($to)"
      violations=$((violations + 1))
    fi
  done < <(grep -oE '^#include "conflux/[^"]+"' "$file" | sed -E 's/^#include "conflux\/(.*)"/\1/')
done < <(find include/conflux src -type f \( -name '*.hpp' -o -name '*.h' -o -name '*.cpp' \
  -o -name '*.cu' -o -name '*.cuh' \) | sort)
echo "check-layering: $violations upward include(s)"
[ "$violations" -eq 0 ]
