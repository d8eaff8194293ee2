# shellcheck shell=bash
# Sourced by the project's scripts (tests, demo, benchmarks): exports CONFLUX_DATA, the
# datasets' directory, for the conflux runs they make. conflux itself never looks relative to
# the working directory (docs/design.md, "Data directory"), so the scripts say where the data
# is: $CONFLUX_DATA when set; else the development and CI layout, ../shared/data beside the
# clone, when it exists; else conflux's own per-user default
# (${XDG_DATA_HOME:-$HOME/.local/share}/conflux/data), so that a skip message names it.
if [ -z "${CONFLUX_DATA:-}" ]; then
  if [ -d "$(dirname "${BASH_SOURCE[0]}")/../../shared/data" ]; then
    CONFLUX_DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../shared/data" && pwd)
  elif [ "${XDG_DATA_HOME:-}" != "${XDG_DATA_HOME#/}" ]; then
    CONFLUX_DATA=$XDG_DATA_HOME/conflux/data
  else
    CONFLUX_DATA=$HOME/.local/share/conflux/data
  fi
  export CONFLUX_DATA
fi
