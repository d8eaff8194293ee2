#!/usr/bin/env bash
# Sourced by the project's scripts: how to launch conflux with the MPI implementation it was
# built with (docs/launching.md, "MPI implementations"). Every Open MPI-only option the scripts
# use lives here. CONFLUX_MPI=openmpi|mpich picks the implementation; unset, it is read from the
# build's stamp ($CONFLUX_BIN/.flavor, written by make), else Open MPI. Provides:
#   MPIRUN        the launcher with the options for a workstation or CI box (an array; append
#                 -np N PROGRAM ARGS..., and ": -np M PROGRAM ..." for more app contexts)
#   MPI_LAUNCHER  the launcher's name alone (mpirun.openmpi, mpiexec.mpich, ...)
#   mpi_env NAME=VALUE   prints the app-context options that give one app context's ranks
#                 NAME=VALUE (Open MPI: -x NAME=VALUE, MPICH: -env NAME VALUE), one per line
#   mpi_one_host_cluster_env  prints, as NAME=VALUE lines, the environment a job needs on a
#                 test cluster whose SLURM "nodes" share one host
#   CONFLUX_MPI   exported, openmpi or mpich
if [ -z "${CONFLUX_MPI:-}" ]; then
  CONFLUX_MPI=$(sed -n 's/.*MPI=\([a-z]*\).*/\1/p' "${CONFLUX_BIN:-build/bin}/.flavor" 2>/dev/null)
  CONFLUX_MPI=${CONFLUX_MPI:-openmpi}
fi
export CONFLUX_MPI
# One BLAS thread per rank: ranks already share the cores.
export OPENBLAS_NUM_THREADS=1
case $CONFLUX_MPI in
  openmpi)
    # Open MPI refuses to run as root unless told it is deliberate (containers, CI).
    if [ "$(id -u)" -eq 0 ]; then
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    # For BUILD=asan: plugins stay loaded, so that a leak stack names its library.
    export OMPI_MCA_mca_base_component_disable_dlclose=1
    # mpirun.openmpi when both implementations are installed (Debian's `mpirun` is whichever
    # the alternatives system picked); plain mpirun elsewhere.
    MPI_LAUNCHER=mpirun
    command -v mpirun.openmpi >/dev/null 2>&1 && MPI_LAUNCHER=mpirun.openmpi
    # More ranks than cores is fine for tests; yield instead of spinning when idle; no binding
    # (ranks share the cores).
    # shellcheck disable=SC2034  # used by the scripts that source this file
    MPIRUN=("$MPI_LAUNCHER" --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none)
    mpi_env() { printf '%s\n' -x "$1"; }
    # Two slurmds on one host: Open MPI's shared-memory segments of the two "nodes" would
    # collide, so the ranks talk over TCP.
    mpi_one_host_cluster_env() { echo OMPI_MCA_btl=self,tcp; }
    ;;
  mpich)
    # MPICH's hydra: runs as root, allows more ranks than cores and binds nothing by default,
    # and passes the whole environment to the ranks.
    MPI_LAUNCHER=mpiexec
    command -v mpiexec.mpich >/dev/null 2>&1 && MPI_LAUNCHER=mpiexec.mpich
    # shellcheck disable=SC2034
    MPIRUN=("$MPI_LAUNCHER")
    mpi_env() { printf '%s\n' -env "${1%%=*}" "${1#*=}"; }
    # MPICH sees one host name and uses shared memory between the "nodes", which is right.
    mpi_one_host_cluster_env() { :; }
    ;;
  *)
    echo "tools/mpi-env.sh: CONFLUX_MPI must be openmpi or mpich, not '$CONFLUX_MPI'" >&2
    # shellcheck disable=SC2317  # exit when run rather than sourced
    return 2 2>/dev/null || exit 2
    ;;
esac
