#!/usr/bin/env bash
# Sourced by the project's scripts: settings for running Open MPI on a workstation or CI box.
# Open MPI refuses to run as root unless told it is deliberate (containers, CI).
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# One BLAS thread per rank: ranks already share the cores.
export OPENBLAS_NUM_THREADS=1
# More ranks than cores is fine for tests; yield instead of spinning when idle.
# shellcheck disable=SC2034  # used by the scripts that source this file
MPIRUN=(mpirun --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)
