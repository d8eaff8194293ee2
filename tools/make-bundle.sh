#!/usr/bin/env bash
# `make bundle`: packs a build into one relocatable archive for a GPU host that lacks the
# build's Debian packages (Ubuntu 24.04 with CUDA 13 and PyTorch, but no Open MPI and no HDF5:
# /work/.library/device/KINDS.md), so that tools/gpu-check.sh can run the GPU tests there
# without building anything (docs/gpu.md, "Device check and bundle").
#
#   tools/make-bundle.sh BINDIR [OUTDIR]      (make bundle: BINDIR=build/bin, OUTDIR=build/bundle)
#
# OUTDIR gets conflux-bundle.tar.xz and MANIFEST.txt (what is in it, with sizes). The archive
# holds, at its root:
#   env.sh       sourced (bash): PATH, LD_LIBRARY_PATH, CONFLUX_BIN, CONFLUX_DATA and Open MPI's
#                and PMIx's relocation variables, for this directory wherever it was unpacked
#   bin/         conflux, conflux-bench, the two test binaries, Open MPI's launcher (mpirun,
#                mpiexec, orterun, orted) and ompi_info, all stripped
#   lib/         the example plugins the unit tests dlopen (BINDIR/../lib) and every shared
#                library the above load that the host may lack, stripped; lib/openmpi holds
#                Open MPI's components (MCA plugins)
#   share/openmpi, etc/   Open MPI's help texts and MCA parameter file
#   pmix/        PMIx's components, help texts and parameter file (Open MPI 4.1 runs on PMIx)
#   data/mnist   the MNIST files the GPU training tests need (the host has no ../shared/data)
# Left out on purpose: glibc, libstdc++ and libgcc_s (Ubuntu 24.04's are newer, and newer ones
# run older programs); the NVIDIA driver and CUDA's libraries (cudart, NCCL, cuBLAS: the host
# has CUDA 13 and PyTorch's NCCL, and libnccl alone is 218 MB); Open MPI's high-speed fabric
# transports (UCX, libfabric, verbs, PSM: no such hardware in a one-host VM, and their libraries
# are large) and its OpenSHMEM components (conflux does not use OpenSHMEM).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "make-bundle: $*" >&2; exit 1; }

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: tools/make-bundle.sh BINDIR [OUTDIR]"; fi
BINDIR=${1%/}
OUTDIR=${2:-build/bundle}
# The example plugins sit in lib/ beside bin/ (the Makefile's PLUGIN_DIR).
PLUGIN_DIR=${BINDIR%/bin}/lib
# The compressed archive must travel with the device tool, which carries at most 64 MiB per
# call including the repository's tracked files (/work/.library/device/README.md, "Limits").
MAX_BYTES=$((48 * 1024 * 1024))

PROGRAMS=(conflux conflux-bench conflux-unit-tests conflux-mpi-tests)
for p in "${PROGRAMS[@]}"; do
  [ -x "$BINDIR/$p" ] || die "$BINDIR/$p not found: build it first (make all build-tests)"
done
shopt -s nullglob
PLUGINS=("$PLUGIN_DIR"/libconflux-*.so)
shopt -u nullglob
[ ${#PLUGINS[@]} -gt 0 ] || die "no example plugins in $PLUGIN_DIR: build them first (make plugins)"
flavor=$(cat "$BINDIR/.flavor" 2>/dev/null || true)
case $flavor in
  *MPI=mpich*) die "$BINDIR is an MPICH build ($flavor); the bundle carries Open MPI only" ;;
esac
case $flavor in
  *CUDA=1*) ;;
  *) echo "make-bundle: warning: $BINDIR is not a CUDA build ('$flavor'): the GPU tests will skip" >&2 ;;
esac
for tool in ldd strip tar xz ompi_info readelf; do
  command -v "$tool" >/dev/null || die "$tool not found (binutils, xz-utils, openmpi-bin)"
done

# --- where Open MPI and PMIx live on this (build) machine -----------------------------------
# ompi_info knows the directories Open MPI was configured with; Debian's are not all under one
# prefix (sysconfdir is /etc/openmpi), which is why env.sh sets each one, not only OPAL_PREFIX.
ompi_path() {
  ompi_info --parsable --path "$1" | sed -n "s/^path:$1:\(.*\)/\1/p" | head -1
}
OMPI_BINDIR=$(ompi_path bindir)
OMPI_PKGLIBDIR=$(ompi_path pkglibdir)
OMPI_PKGDATADIR=$(ompi_path pkgdatadir)
OMPI_SYSCONFDIR=$(ompi_path sysconfdir)
ORTERUN=$(readlink -f "$OMPI_BINDIR/orterun" 2>/dev/null || true)
[ -x "$ORTERUN" ] || die "Open MPI's orterun not found in '$OMPI_BINDIR' (openmpi-bin)"
[ -d "$OMPI_PKGLIBDIR" ] || die "Open MPI's component directory '$OMPI_PKGLIBDIR' not found"
[ -d "$OMPI_PKGDATADIR" ] || die "Open MPI's help directory '$OMPI_PKGDATADIR' not found"
ompi_version=$(ompi_info --parsable | sed -n 's/^ompi:version:full:\(.*\)/\1/p' | head -1)
case $ompi_version in
  4.*) ;;  # ORTE's orterun/orted and relocation by OPAL_* variables: 4.x's layout
  *) die "Open MPI 4.x expected (orterun), found '${ompi_version:-none}'" ;;
esac
# PMIx: the library the pmix component links, and its own prefix (Debian: .../pmix2, with
# lib/pmix for components and share/pmix for help texts; upstream: the library's parent).
pmix_component=$OMPI_PKGLIBDIR/mca_pmix_ext3x.so
[ -f "$pmix_component" ] || die "$pmix_component not found: Open MPI 4.1 with an external PMIx expected"
libpmix=$(ldd "$pmix_component" | awk '$1 ~ /^libpmix\.so/ && $3 ~ /^\// {print $3; exit}')
[ -n "$libpmix" ] || die "cannot find the PMIx library that $pmix_component loads"
PMIX_HOME=
for cand in "$(dirname "$(readlink -f "$libpmix")")/pmix2" "$(dirname "$(readlink -f "$libpmix")")/.."; do
  if [ -d "$cand/lib/pmix" ] && [ -d "$cand/share/pmix" ]; then
    PMIX_HOME=$(cd "$cand" && pwd)
    break
  fi
done
[ -n "$PMIX_HOME" ] || die "cannot find PMIx's lib/pmix and share/pmix near $libpmix"

# --- what goes in ----------------------------------------------------------------------------
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/conflux-bundle.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{bin,lib/openmpi,share/openmpi,etc,pmix/lib/pmix,pmix/share/pmix,data}

# A stripped copy: the archive's size limit has no room for debug information, and nothing on
# the GPU host reads it. Files strip does not understand are copied as they are.
copy_stripped() {  # SOURCE DEST
  cp -L "$1" "$2"
  chmod u+w "$2"
  strip --strip-unneeded "$2" 2>/dev/null || echo "make-bundle: note: $1 copied unstripped" >&2
}

for p in "${PROGRAMS[@]}"; do copy_stripped "$BINDIR/$p" "$STAGE/bin/$p"; done
# mpi-env.sh reads the build's MPI from the stamp beside the binaries.
[ -n "$flavor" ] && printf '%s\n' "$flavor" > "$STAGE/bin/.flavor"
for p in "${PLUGINS[@]}"; do copy_stripped "$p" "$STAGE/lib/$(basename "$p")"; done

copy_stripped "$ORTERUN" "$STAGE/bin/orterun"
if [ -x "$OMPI_BINDIR/orted" ]; then copy_stripped "$OMPI_BINDIR/orted" "$STAGE/bin/orted"; fi
# ompi_info: to see on the host which components load (ompi_info | grep btl).
copy_stripped "$(readlink -f "$(command -v ompi_info)")" "$STAGE/bin/ompi_info"
# mpirun.openmpi too: tools/mpi-env.sh prefers that name when it is on the PATH, and with
# env.sh sourced this one comes first, so the scripts launch the bundle's Open MPI even on a
# host that has Debian's.
for name in mpirun mpiexec mpirun.openmpi mpiexec.openmpi; do ln -s orterun "$STAGE/bin/$name"; done

# Open MPI's components, less those for fabrics a one-host VM does not have (UCX, libfabric,
# InfiniBand verbs, PSM: large libraries of their own) and OpenSHMEM's (atomic, memheap,
# scoll, spml, sshmem: conflux uses MPI only), and the debugger's message-queue plugin.
skipped_components=()
for c in "$OMPI_PKGLIBDIR"/*.so; do
  name=$(basename "$c")
  if [[ $name =~ (ucx|ofi|openib|verbs|psm|usnic|^mca_(atomic|memheap|scoll|spml|sshmem)_|dbg_msgq) ]]; then
    skipped_components+=("${name%.so}")
    continue
  fi
  copy_stripped "$c" "$STAGE/lib/openmpi/$name"
done
cp -r "$OMPI_PKGDATADIR"/. "$STAGE/share/openmpi/"
# Debian's parameter file without the exclusions of components that are not in the bundle
# (mtl = ^ofi and the like), which would otherwise name what cannot be found.
{
  echo "# Open MPI's parameters for this bundle (tools/make-bundle.sh), from $OMPI_SYSCONFDIR."
  echo "# The fabric components (UCX, libfabric, verbs, PSM) are not in the bundle."
  echo "btl_base_warn_component_unused = 0"
} > "$STAGE/etc/openmpi-mca-params.conf"

for c in "$PMIX_HOME"/lib/pmix/*.so; do copy_stripped "$c" "$STAGE/pmix/lib/pmix/$(basename "$c")"; done
cp -r "$PMIX_HOME"/share/pmix/. "$STAGE/pmix/share/pmix/"
# Debian's pmix-mca-params.conf names its component directory by absolute path; env.sh sets it.
echo "# PMIx's parameters for this bundle: the component path comes from env.sh." \
  > "$STAGE/pmix/share/pmix-mca-params.conf"

# --- shared libraries ------------------------------------------------------------------------
# Never bundled: the C library family, the C++ runtime and the dynamic loader (the host's are
# newer and run older programs; a second libc in one process does not work), and the NVIDIA
# driver and CUDA libraries (they must match the host's driver; the host has CUDA 13).
CORE_RE='^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec|libdl\.so|libpthread|librt\.so|libresolv|libutil\.so|libanl|libnsl|libnss_|libBrokenLocale|libthread_db|libgcc_s|libstdc\+\+)'
CUDA_RE='^(libcuda\.so|libcudart|libnccl|libcublas|libcublasLt|libcudnn|libnvidia-|libnvrtc|libnvJitLink|libcufft|libcurand|libcusolver|libcusparse)'
roots=("$STAGE"/bin/* "$STAGE"/lib/*.so "$STAGE"/lib/openmpi/*.so "$STAGE"/pmix/lib/pmix/*.so)
declare -A wanted=()   # soname -> path on this machine
declare -A from_host=() # CUDA libraries the binaries load from the host
missing=()
for f in "${roots[@]}"; do
  [ -L "$f" ] && continue
  # Not every root is dynamic (ldd says so and exits 1): nothing to collect then.
  out=$(ldd "$f" 2>&1) || continue
  while read -r soname arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [[ $soname =~ $CORE_RE ]]; then continue; fi
    if [[ $soname =~ $CUDA_RE ]]; then from_host[$soname]=1; continue; fi
    if [ "$path" = not ]; then missing+=("$soname (needed by ${f#"$STAGE"/})"); continue; fi
    wanted[$soname]=$path
  done <<<"$out"
done
[ ${#missing[@]} -eq 0 ] || die "libraries not found on this machine: ${missing[*]}"
for soname in "${!wanted[@]}"; do
  # The example plugins are in lib/ already: a library of the same name never replaces one.
  [ -e "$STAGE/lib/$soname" ] || copy_stripped "${wanted[$soname]}" "$STAGE/lib/$soname"
done
# cuBLAS is dlopen'ed at run time as libcublas.so.<CUBLAS_VER_MAJOR> (src/gpu/cublas_api.cu),
# so ldd cannot see it: its name comes from the header the build compiled against.
if [ -n "${from_host[*]}" ]; then
  cublas_major=$(sed -n 's/^#define CUBLAS_VER_MAJOR *\([0-9]*\).*/\1/p' \
    "${CUDA_HOME:-/usr/local/cuda}/include/cublas_api.h" 2>/dev/null | head -1)
  [ -n "$cublas_major" ] && from_host[libcublas.so.$cublas_major]=1
  # cuDNN likewise (src/gpu/cudnn_api.cu): libcudnn.so.<CUDNN_MAJOR>, with its engines beside it.
  cudnn_major=$(sed -n 's/^#define CUDNN_MAJOR *\([0-9]*\).*/\1/p' \
    "${CUDA_HOME:-/usr/local/cuda}/include/cudnn_version.h" 2>/dev/null | head -1)
  [ -n "$cudnn_major" ] && from_host[libcudnn.so.$cudnn_major]=1
fi

# --- data --------------------------------------------------------------------------------------
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
if [ -d "$CONFLUX_DATA/mnist" ]; then
  mkdir -p "$STAGE/data/mnist"
  cp "$CONFLUX_DATA"/mnist/* "$STAGE/data/mnist/"
else
  echo "make-bundle: warning: $CONFLUX_DATA/mnist not found: the GPU training tests will skip" >&2
fi

# --- env.sh ------------------------------------------------------------------------------------
host_libs=$(printf '%s\n' "${!from_host[@]}" | sort | tr '\n' ' ')
cat > "$STAGE/env.sh" <<EOF
# shellcheck shell=bash
# Sourced by bash (source env.sh, from any directory): puts this conflux bundle first on PATH
# and LD_LIBRARY_PATH and tells Open MPI and PMIx where they were moved to. Written by
# tools/make-bundle.sh from a build of $flavor with Open MPI $ompi_version.
# The CUDA libraries the binaries load from the host, not from the bundle:
CONFLUX_HOST_LIBS="${host_libs% }"
EOF
cat >> "$STAGE/env.sh" <<'EOF'
CONFLUX_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export CONFLUX_BUNDLE
export CONFLUX_BIN=$CONFLUX_BUNDLE/bin
# The library path before the bundle's, for programs that should not see the bundle's libraries
# (python3 and PyTorch load their own zlib, OpenSSL, libgomp, ...): kept from the first sourcing.
export CONFLUX_HOST_LD_LIBRARY_PATH=${CONFLUX_HOST_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}
# Sourcing twice adds nothing twice.
case ":${PATH:-}:" in
  *":$CONFLUX_BUNDLE/bin:"*) ;;
  *) export PATH=$CONFLUX_BUNDLE/bin${PATH:+:$PATH} ;;
esac
case ":${LD_LIBRARY_PATH:-}:" in
  *":$CONFLUX_BUNDLE/lib:"*) ;;
  *) export LD_LIBRARY_PATH=$CONFLUX_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
# Open MPI: OPAL_PREFIX moves only the directories configured relative to the prefix, and
# Debian's are not all (sysconfdir is /etc/openmpi, components live under lib/x86_64-linux-gnu),
# so each directory it reads at run time is named too.
export OPAL_PREFIX=$CONFLUX_BUNDLE OPAL_EXEC_PREFIX=$CONFLUX_BUNDLE
export OPAL_BINDIR=$CONFLUX_BUNDLE/bin OPAL_LIBDIR=$CONFLUX_BUNDLE/lib
export OPAL_PKGLIBDIR=$CONFLUX_BUNDLE/lib/openmpi
export OPAL_DATAROOTDIR=$CONFLUX_BUNDLE/share OPAL_DATADIR=$CONFLUX_BUNDLE/share
export OPAL_PKGDATADIR=$CONFLUX_BUNDLE/share/openmpi OPAL_SYSCONFDIR=$CONFLUX_BUNDLE/etc
# PMIx 4 reads PMIX_PREFIX; Open MPI's pmix component still checks PMIX_INSTALL_PREFIX (it
# warns when OPAL_PREFIX is set without it). The component path overrides Debian's absolute one.
export PMIX_PREFIX=$CONFLUX_BUNDLE/pmix PMIX_INSTALL_PREFIX=$CONFLUX_BUNDLE/pmix
export PMIX_EXEC_PREFIX=$CONFLUX_BUNDLE/pmix PMIX_LIBDIR=$CONFLUX_BUNDLE/pmix/lib
export PMIX_PKGLIBDIR=$CONFLUX_BUNDLE/pmix/lib/pmix PMIX_DATAROOTDIR=$CONFLUX_BUNDLE/pmix/share
export PMIX_DATADIR=$CONFLUX_BUNDLE/pmix/share PMIX_PKGDATADIR=$CONFLUX_BUNDLE/pmix/share/pmix
export PMIX_SYSCONFDIR=$CONFLUX_BUNDLE/pmix/share
export PMIX_MCA_mca_base_component_path=$CONFLUX_BUNDLE/pmix/lib/pmix
# The device machine runs commands as root, which Open MPI refuses unless told it is meant.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# The bundle's MNIST, unless the caller chose a data directory.
if [ -z "${CONFLUX_DATA:-}" ] && [ -d "$CONFLUX_BUNDLE/data/mnist" ]; then
  export CONFLUX_DATA=$CONFLUX_BUNDLE/data
fi
# CUDA's libraries come from the host. The binaries look in /usr/local/cuda/lib64 (their
# RUNPATH) and the loader's cache; a library found in neither (NCCL may come only with
# PyTorch's pip packages) is looked for in CUDA_HOME and python3's nvidia/*/lib directories,
# and its directory appended to LD_LIBRARY_PATH.
conflux_lib_dirs() {
  echo "${CUDA_HOME:-/usr/local/cuda}/lib64"
  echo /usr/local/cuda/targets/x86_64-linux/lib
  local site
  for site in /opt/torch/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages \
    /usr/lib/python3/dist-packages; do
    [ -d "$site/nvidia" ] && printf '%s\n' "$site"/nvidia/*/lib
  done
  if command -v python3 >/dev/null 2>&1; then
    site=$(timeout 20 python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
    [ -n "$site" ] && [ -d "$site/nvidia" ] && printf '%s\n' "$site"/nvidia/*/lib
  fi
}
CONFLUX_MISSING_LIBS=
for conflux_lib in $CONFLUX_HOST_LIBS; do
  if [ -e "/usr/local/cuda/lib64/$conflux_lib" ] ||
    { command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -F "$conflux_lib " >/dev/null; }; then
    continue
  fi
  conflux_found=
  while IFS= read -r conflux_dir; do
    if [ -e "$conflux_dir/$conflux_lib" ]; then conflux_found=$conflux_dir; break; fi
  done < <(conflux_lib_dirs)
  if [ -n "$conflux_found" ]; then
    case ":$LD_LIBRARY_PATH:" in
      *":$conflux_found:"*) ;;
      *) export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$conflux_found ;;
    esac
  else
    CONFLUX_MISSING_LIBS="$CONFLUX_MISSING_LIBS $conflux_lib"
  fi
done
if [ -n "$CONFLUX_MISSING_LIBS" ]; then
  echo "env.sh: warning: not found on this host:$CONFLUX_MISSING_LIBS (CUDA 13 and NCCL expected)" >&2
fi
unset conflux_lib conflux_dir conflux_found
unset -f conflux_lib_dirs
EOF

# --- archive -----------------------------------------------------------------------------------
mkdir -p "$OUTDIR"
archive=$OUTDIR/conflux-bundle.tar.xz
rm -f "$archive" "$OUTDIR/MANIFEST.txt"
# xz: every Ubuntu and Debian has it (zstd is not always installed). -T0 for speed; the
# numeric owner keeps the archive the same whoever built it.
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner --sort=name -cf - . |
  xz -6 -T0 > "$archive.tmp"
mv "$archive.tmp" "$archive"
bytes=$(stat -c %s "$archive")
unpacked=$(du -sb "$STAGE" | cut -f1)
{
  echo "conflux bundle from $BINDIR ($flavor), Open MPI $ompi_version, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "archive: $bytes bytes compressed, $unpacked bytes unpacked"
  echo "loaded from the host, not bundled: ${host_libs% }"
  echo "Open MPI components left out: ${skipped_components[*]}"
  echo
  (cd "$STAGE" && find . -type f -printf '%s\t%P\n' -o -type l -printf '0\t%P -> %l\n' | sort -k2)
} > "$OUTDIR/MANIFEST.txt"
awk -v a="$archive" -v b="$bytes" -v u="$unpacked" -v n="$(grep -c $'\t' "$OUTDIR/MANIFEST.txt")" \
  -v m="$OUTDIR/MANIFEST.txt" 'BEGIN { printf "make-bundle: %s: %.1f MiB compressed (%.1f MiB " \
  "unpacked, %d files); manifest %s\n", a, b / 1048576, u / 1048576, n, m }'
if [ "$bytes" -ge "$MAX_BYTES" ]; then
  die "$archive is $bytes bytes, over the 48 MiB the device tool can carry beside the tree"
fi
# The device tool carries the whole folder, so anything else left in it travels too.
extra=$(($(du -sb "$OUTDIR" | cut -f1) - bytes))
if [ "$extra" -gt $((1024 * 1024)) ]; then
  echo "make-bundle: warning: $OUTDIR holds $extra bytes besides the archive; they travel with it" >&2
fi
