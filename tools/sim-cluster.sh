#!/usr/bin/env bash
# A simulated cluster of hosts on this machine, for the multi-host tests (docs/cluster-tests.md):
# N hosts h0..h<N-1>, each a set of Linux namespaces (network, hostname, mount, IPC) with its
# own address on a private network, plus a "head" host whose namespaces hold the bridge that
# connects them and the SLURM controller. Open MPI launches across the hosts as across real
# nodes (its rsh launcher, with this script as the remote-shell agent) and SLURM runs
# slurmctld on head and one slurmd per host.
#
#   tools/sim-cluster.sh start [--hosts N] [--no-slurm]   # seconds; needs root
#   tools/sim-cluster.sh exec HOST COMMAND...             # run COMMAND on head or hN
#   tools/sim-cluster.sh exec head mpirun --hostfile "$SIM_CLUSTER_ROOT/hostfile" -np 4 ...
#   tools/sim-cluster.sh exec head sbatch -N 4 ...        # srun, squeue, scontrol, ... likewise
#   tools/sim-cluster.sh stop                             # kill every process on the hosts
#
# Nothing is added to this machine's own network: the addresses, routes, bridge and veth pairs
# exist only inside the cluster's namespaces and vanish with them. Everything else (munged, the
# config, logs, pid files) lives under ROOT=${SIM_CLUSTER_ROOT:-${TMPDIR:-/tmp}/sim-cluster}.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
SELF=$(readlink -f "${BASH_SOURCE[0]}")
SIM_ROOT=${SIM_CLUSTER_ROOT:-${TMPDIR:-/tmp}/sim-cluster}
NET=${SIM_CLUSTER_NET:-10.77.0}
HOSTS=${SIM_CLUSTER_HOSTS:-4}
SLOTS=${SIM_CLUSTER_SLOTS:-4}

usage() {
  cat <<EOF
usage: tools/sim-cluster.sh COMMAND [ARGS]
  start [--hosts N] [--no-slurm] [--owner PID]
                 create hosts h0..h<N-1> (default \$SIM_CLUSTER_HOSTS or 4) and head, connect
                 them ($NET.0/24: hN has $NET.<N+1>, head $NET.254), then start munged,
                 slurmctld on head and "slurmd -N hN" on each host (unless --no-slurm), and
                 wait until every node is idle. A running cluster of the same size is reused.
                 --owner PID: stop the cluster when process PID ends (a test's shell: even a
                 test killed with SIGKILL leaves nothing behind)
  stop           kill every process inside the cluster's namespaces (the daemons, jobs, ranks),
                 which removes the namespaces with their links and addresses; stop munged
  status         hosts, their addresses, the SLURM nodes; exit 0 when the cluster is up
  exec HOST CMD  run CMD on HOST (head, h0, h1, ...) in the current directory, with the
                 cluster's variables (see env)
  crash HOST     SIGKILL every process on HOST (a node whose processes all die at once; its
                 sockets close, so peers see their connections reset); the host stays up
  down HOST      crash HOST and take its link down: a node lost for good. Its address no
                 longer answers, and rsh to it fails as ssh to a dead node does (exit 255)
  up HOST        bring a downed host's link back and start its slurmd again (if the
                 cluster runs SLURM): a repaired node after its reboot
  rsh HOST CMD   Open MPI's remote-shell agent: run the shell command CMD on HOST (an empty
                 environment but PATH and HOME, as ssh gives)
  wait-job [--timeout S] ID
                 wait for SLURM job ID to end (as tools/local-slurm.sh wait-job)
  env            the variables exec sets: SLURM_CONF, Open MPI's launcher and TCP settings
  check          exit 0 when this machine can run the cluster, else print why not and exit 1
Files under $SIM_ROOT (\$SIM_CLUSTER_ROOT): hostfile (Open MPI, $SLOTS slots per host:
\$SIM_CLUSTER_SLOTS, also the CPUs of each SLURM node), hosts (/etc/hosts inside the cluster),
slurm/ (config, state, logs: tools/local-slurm.sh's layout), ns/ (one keeper pid per host).
EOF
}

say() { echo "sim-cluster: $*"; }
die() {
  echo "sim-cluster: $*" >&2
  exit 1
}

# --- the namespaces ----------------------------------------------------------------------------
# Each host's namespaces are held by a keeper process (sleep) started by unshare; ns/NAME.pid
# holds its pid and ns/NAME.net its network namespace, so that a recycled pid is not mistaken
# for the keeper.
keeper() {  # keeper NAME: prints the live keeper's pid, fails when there is none
  local f=$SIM_ROOT/ns/$1.pid pid
  [ -s "$f" ] || return 1
  pid=$(cat "$f")
  [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$(cat "$SIM_ROOT/ns/$1.net" 2>/dev/null)" ] || return 1
  echo "$pid"
}

# ns_exec NAME COMMAND...: COMMAND inside NAME's namespaces, in the current directory.
ns_exec() {
  local pid
  pid=$(keeper "$1") || die "host '$1' is not running (tools/sim-cluster.sh start)"
  shift
  nsenter -t "$pid" --uts --net --mount --ipc --wd="$PWD" -- "$@"
}

host_names() {  # host_names N: h0 .. h<N-1>
  local i
  for ((i = 0; i < $1; i++)); do echo "h$i"; done
}
host_addr() { # host_addr NAME: its address
  case $1 in head) echo "$NET.254" ;; h[0-9]*) echo "$NET.$((${1#h} + 1))" ;; *) return 1 ;; esac
}

# new_host NAME: a keeper in new namespaces, with hostname NAME, the cluster's /etc/hosts, its
# own /dev/shm (shared memory stays within a host) and loopback up.
new_host() {
  local name=$1 pid self i
  self=$(readlink /proc/self/ns/net)
  setsid unshare --uts --net --mount --ipc --propagation private sleep infinity </dev/null >/dev/null 2>&1 9>&- &
  pid=$!
  for i in $(seq 1 100); do
    [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null || echo "$self")" != "$self" ] && break
    kill -0 "$pid" 2>/dev/null || die "unshare for host $name failed (no CAP_SYS_ADMIN?)"
    [ "$i" -eq 100 ] && die "host $name: no new namespaces after 5 s"
    sleep 0.05
  done
  echo "$pid" >"$SIM_ROOT/ns/$name.pid"
  readlink "/proc/$pid/ns/net" >"$SIM_ROOT/ns/$name.net"
  ns_exec "$name" sh -ec "hostname $name; mount --bind '$SIM_ROOT/hosts' /etc/hosts
    mount -t tmpfs -o mode=1777 shm /dev/shm; ip link set lo up"
}

write_files() {  # write_files N: hosts, hostfile, the rsh agent
  local n=$1 name
  {
    grep -v -E "^[[:space:]]*(${NET//./\\.}\\.|#)" /etc/hosts || true
    echo "# tools/sim-cluster.sh: the simulated hosts"
    echo "$NET.254 head"
    for name in $(host_names "$n"); do echo "$(host_addr "$name") $name"; done
  } >"$SIM_ROOT/hosts"
  for name in $(host_names "$n"); do echo "$name slots=$SLOTS"; done >"$SIM_ROOT/hostfile"
  mkdir -p "$SIM_ROOT/bin"
  printf '#!/bin/sh\n# Open MPI remote-shell agent of the simulated cluster (tools/sim-cluster.sh)\nSIM_CLUSTER_ROOT=%q exec %q rsh "$@"\n' \
    "$SIM_ROOT" "$SELF" >"$SIM_ROOT/bin/rsh"
  chmod 755 "$SIM_ROOT/bin/rsh"
}

# The network: a bridge in head's namespaces; each host's eth0 is a veth whose peer is a bridge
# port. Created from inside head, so no link ever exists in this machine's own namespace.
start_network() {  # start_network N
  local n=$1 name i
  new_host head
  ns_exec head sh -ec "ip link add br0 type bridge; ip addr add $NET.254/24 dev br0; ip link set br0 up"
  for name in $(host_names "$n"); do
    new_host "$name"
    i=${name#h}
    ns_exec head ip link add "v$name" type veth peer name eth0 netns "$(keeper "$name")"
    ns_exec head sh -ec "ip link set v$name master br0; ip link set v$name up"
    ns_exec "$name" sh -ec "ip addr add $NET.$((i + 1))/24 dev eth0; ip link set eth0 up"
  done
}

hosts_up() {  # prints the running cluster's host count (0: none)
  local n=0
  keeper head >/dev/null || { echo 0; return; }
  while keeper "h$n" >/dev/null; do n=$((n + 1)); done
  echo "$n"
}

# --- SLURM: tools/local-slurm.sh's cluster, its daemons on the simulated hosts --------------------
load_slurm() {
  # shellcheck source=tools/local-slurm.sh
  # A lost host is declared DOWN after 20 s (Slurm's default: 300 s), so that node-loss tests
  # see the requeue in seconds.
  SLURM_CI_ROOT=$SIM_ROOT/slurm SLURM_CI_CPUS=$SLOTS SLURM_CI_SLURMD_TIMEOUT=${SLURM_CI_SLURMD_TIMEOUT:-20} \
    source "$(dirname "$SELF")/local-slurm.sh"
  PROG=sim-cluster
  node_names() { host_names "$1"; }
  node_conf_line() { echo "NodeName=$2 NodeAddr=$(host_addr "$2") CPUs=$NCPUS RealMemory=$3 State=UNKNOWN"; }
  CTLD_HOST="head($NET.254)"
  ctl() { ns_exec head "$@"; }
  on_node() { ns_exec "$@"; }
}

# The variables of every command run on the cluster: SLURM's config, and Open MPI's launcher
# (this script as the rsh agent) and transports (TCP between hosts on the cluster network only,
# shared memory within a host).
cluster_env() {
  echo "SIM_CLUSTER_ROOT=$SIM_ROOT"
  echo "SLURM_CONF=$SIM_ROOT/slurm/etc/slurm.conf"
  echo "OMPI_MCA_plm_rsh_agent=$SIM_ROOT/bin/rsh"
  echo "OMPI_MCA_btl=tcp,self,vader"
  echo "OMPI_MCA_btl_tcp_if_include=$NET.0/24"
  echo "OMPI_MCA_oob_tcp_if_include=$NET.0/24"
}

cant_run() {  # prints why this machine cannot run the cluster; fails when it can
  local t
  [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces and the daemons need root)"; return 0; }
  for t in ip unshare nsenter setsid flock; do
    command -v "$t" >/dev/null 2>&1 || { echo "no '$t' command (make test-deps installs iproute2, util-linux)"; return 0; }
  done
  unshare --uts --net --mount --ipc true 2>/dev/null || { echo "cannot create namespaces (no CAP_SYS_ADMIN: an unprivileged container?)"; return 0; }
  unshare --net ip link add b0 type bridge 2>/dev/null || { echo "cannot create a bridge in a network namespace"; return 0; }
  return 1
}

sim_start() {
  local n=$HOSTS slurm=1 why have owner=""
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) [ $# -ge 2 ] || die "--hosts needs a value"; n=$2; shift 2 ;;
      --hosts=*) n=${1#*=}; shift ;;
      --no-slurm) slurm=0; shift ;;
      --owner) [ $# -ge 2 ] || die "--owner needs a pid"; owner=$2; shift 2 ;;
      --owner=*) owner=${1#*=}; shift ;;
      *) die "start: unknown option '$1' (see --help)" ;;
    esac
  done
  [[ $n =~ ^[1-9][0-9]?$ ]] || die "--hosts wants a number from 1 to 99, not '$n'"
  if why=$(cant_run); then die "cannot run here: $why"; fi
  have=$(hosts_up)
  if [ "$have" -ne 0 ] && [ "$have" -ne "$n" ]; then
    die "a cluster with $have host(s) is running under $SIM_ROOT: tools/sim-cluster.sh stop first"
  fi
  mkdir -p "$SIM_ROOT/ns"
  [ -z "$owner" ] || kill -0 "$owner" 2>/dev/null || die "--owner $owner: no such process"
  local t0=$SECONDS t1
  if [ "$have" -eq 0 ]; then
    kill_hosts # the remains of a cluster whose keepers were killed
    write_files "$n"
    start_network "$n"
  fi
  t1=$SECONDS
  # A watchdog stops the cluster once the owner has gone, however it ended (even SIGKILL).
  if [ -n "$owner" ]; then
    setsid "$SELF" watch "$owner" </dev/null >>"$SIM_ROOT/watchdog.log" 2>&1 9>&- &
  fi
  if [ "$slurm" -eq 1 ]; then
    load_slurm
    need_tools
    cmd_start --nodes "$n" | sed 's/^local-slurm: /sim-cluster: slurm: /'
  fi
  say "up: $n host(s) $(host_names "$n" | paste -sd, -) on $NET.0/24, head $NET.254" \
    "(hosts $((t1 - t0)) s, SLURM $((SECONDS - t1)) s); ROOT=$SIM_ROOT"
}

# ns_pids NETNS...: every process in those network namespaces (one stat for all processes:
# a fork per process is slow where there are hundreds).
ns_pids() {
  stat -c '%N' /proc/[0-9]*/ns/net 2>/dev/null |
    awk -v nets="$*" 'BEGIN { n = split(nets, a, " "); for (i = 1; i <= n; i++) want["'\''" a[i] "'\''"] = 1 }
      ($3 in want) { split($1, p, "/"); print p[3] }'
  return 0
}

# kill_hosts: TERM, then KILL, every process in the cluster's namespaces (keepers last). The
# namespaces, and with them the bridge, links and addresses, vanish with their last process.
kill_hosts() {
  local f nets=() pids=() i
  for f in "$SIM_ROOT"/ns/*.net; do [ -s "$f" ] && nets+=("$(cat "$f")"); done
  [ ${#nets[@]} -gt 0 ] || return 0
  for i in 1 2; do
    mapfile -t pids < <(ns_pids "${nets[@]}")
    [ ${#pids[@]} -gt 0 ] || break
    kill "-$([ "$i" -eq 1 ] && echo TERM || echo KILL)" "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "${pids[@]}" 2>/dev/null || break
      sleep 0.1
    done
  done
  rm -f "$SIM_ROOT"/ns/*.pid "$SIM_ROOT"/ns/*.net
}

# crash_host NAME: SIGKILL every process on host NAME but its keeper, as a node whose
# processes all die at once; the kernel closes their sockets, so peers see the connections
# reset. The host stays up (its address answers), empty, as after a reboot.
crash_host() {
  local keeper_pid pids=() p
  keeper_pid=$(keeper "$1") || die "host '$1' is not running (tools/sim-cluster.sh start)"
  for p in $(ns_pids "$(cat "$SIM_ROOT/ns/$1.net")"); do [ "$p" = "$keeper_pid" ] || pids+=("$p"); done
  [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
  say "crashed $1: killed ${#pids[@]} process(es)"
}

# link_up NAME: exit 0 when host NAME's link to the bridge is up (its port on head's side).
link_up() {
  ns_exec head ip -o link show "v$1" 2>/dev/null | grep -q '<[^>]*[<,]UP[,>]'
}

# set_link NAME up|down: the host's bridge port, as a cable plugged in or pulled.
set_link() {
  keeper "$1" >/dev/null || die "host '$1' is not running (tools/sim-cluster.sh start)"
  [[ $1 == h[0-9]* ]] || die "only hosts h0, h1, ... can go down, not '$1'"
  ns_exec head ip link set "v$1" "$2"
  say "$1: link $2"
}

sim_stop() {
  kill_hosts
  if [ -d "$SIM_ROOT/slurm" ]; then
    load_slurm
    # munged runs in this machine's namespaces (its socket is a file every host sees).
    if pid_alive "$SIM_ROOT/slurm/munge/munged.pid"; then
      kill -TERM "$(cat "$SIM_ROOT/slurm/munge/munged.pid")" 2>/dev/null || true
    fi
    rm -f "$SIM_ROOT"/slurm/run/*.pid "$SIM_ROOT/slurm/munge/munged.pid"
  fi
  say "stopped"
}

sim_status() {
  local n name
  n=$(hosts_up)
  if [ "$n" -eq 0 ]; then
    say "not running (ROOT=$SIM_ROOT)"
    return 1
  fi
  for name in head $(host_names "$n"); do
    echo "$name: $(host_addr "$name"), keeper pid $(keeper "$name"), $(ns_pids "$(cat "$SIM_ROOT/ns/$name.net")" | wc -l) process(es)"
  done
  if [ -f "$SIM_ROOT/slurm/etc/slurm.conf" ]; then
    load_slurm
    cmd_status | sed 's/^/slurm: /' || true
  fi
}

# Open MPI's rsh launcher calls "AGENT HOST COMMAND WORDS...", meaning a shell command on HOST.
cmd_rsh() {
  [ $# -ge 2 ] || die "usage: tools/sim-cluster.sh rsh HOST COMMAND..."
  local host=$1 name
  shift
  name=$(awk -v h="$host" '$1 == h { print $2; exit } { for (i = 2; i <= NF; i++) if ($i == h) { print $2; exit } }' "$SIM_ROOT/hosts")
  [ -n "$name" ] || die "rsh: unknown host '$host' (not in $SIM_ROOT/hosts)"
  if [ "$name" != head ] && ! link_up "$name"; then
    # What ssh says, and its exit status, when the node is gone.
    echo "ssh: connect to host $host port 22: No route to host" >&2
    exit 255
  fi
  cd / && ns_exec "$name" env -i PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" HOME="${HOME:-/root}" sh -c "$*"
}

# One start or stop at a time. The lock is fd 9, which no daemon or keeper inherits (they are
# started with 9>&-, as in tools/local-slurm.sh).
serialised() {
  mkdir -p "$SIM_ROOT"
  exec 9>"$SIM_ROOT/lock"
  flock -w 120 9 || die "another start or stop has held $SIM_ROOT/lock for 120 s"
  "$@"
}

case ${1:-} in
  start) shift; serialised sim_start "$@" ;;
  stop) serialised sim_stop ;;
  status) sim_status ;;
  exec)
    [ $# -ge 3 ] || die "usage: tools/sim-cluster.sh exec HOST COMMAND..."
    host=$2
    shift 2
    mapfile -t vars < <(cluster_env)
    ns_exec "$host" env "${vars[@]}" "$@"
    ;;
  rsh) shift; cmd_rsh "$@" ;;
  crash) [ $# -eq 2 ] || die "usage: tools/sim-cluster.sh crash HOST"; crash_host "$2" ;;
  down) [ $# -eq 2 ] || die "usage: tools/sim-cluster.sh down HOST"; crash_host "$2"; set_link "$2" down ;;
  up)
    [ $# -eq 2 ] || die "usage: tools/sim-cluster.sh up HOST"
    set_link "$2" up
    if [ -f "$SIM_ROOT/slurm/etc/slurm.conf" ]; then
      load_slurm
      pid_alive "$ROOT/run/slurmd-$2.pid" || { ns_exec "$2" slurmd -N "$2" 9>&- && say "$2: slurmd started"; }
    fi
    ;;
  watch)
    # The watchdog of start --owner PID (its own command, so that it shows in ps).
    [[ ${2:-} =~ ^[0-9]+$ ]] || die "usage: tools/sim-cluster.sh watch PID"
    while kill -0 "$2" 2>/dev/null && [ "$(hosts_up)" -gt 0 ]; do sleep 2; done
    [ "$(hosts_up)" -eq 0 ] || { say "owner $2 has gone: stopping"; serialised sim_stop; }
    ;;
  wait-job) shift; load_slurm; cmd_wait_job "$@" ;;
  env) cluster_env | sed 's/^/export /' ;;
  check) if why=$(cant_run); then echo "sim-cluster: cannot run here: $why"; exit 1; fi ;;
  -h | --help | help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "sim-cluster: unknown command '$1'" >&2; usage >&2; exit 2 ;;
esac
