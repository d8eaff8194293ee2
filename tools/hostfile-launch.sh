#!/usr/bin/env bash
# Launches conflux with Open MPI so that the trainer ranks run on one set of hosts (GPU nodes)
# and the preprocessing workers on another (CPU-only nodes), in one MPI_COMM_WORLD.
#
#   tools/hostfile-launch.sh --trainer-hosts gpu1,gpu2 --worker-hosts cpu1:8,cpu2:8 \
#     --trainers 4 --workers 16 --config configs/cifar10_cnn.toml [--dry-run] [-- CONFLUX ARGS]
#
# It builds one mpirun command with two app contexts (MPMD colon syntax):
#   mpirun -np T --host TRAINER_HOSTS conflux train ... : -np W --host WORKER_HOSTS conflux train ...
# Open MPI numbers the ranks of the first app context first, so world ranks 0..T-1 are the
# trainers, as conflux requires, and it sets cluster.trainers=T and cluster.workers=W to match.
# The command is printed (to stderr; to stdout with --dry-run) and then run.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/hostfile-launch.sh --trainer-hosts HOSTS --worker-hosts HOSTS --config FILE
                                [options] [-- CONFLUX-TRAIN-ARGS...]
  --trainer-hosts HOSTS  hosts for the trainer ranks: "h1,h2:4" (host[:slots], comma-separated)
                         or "@FILE", an Open MPI hostfile ("host slots=N" per line)
  --worker-hosts HOSTS   hosts for the worker ranks, same forms
  -t, --trainers T       number of trainer ranks (default: the trainer hosts' slots, 1 per host
                         without a count)
  -w, --workers W        number of worker ranks (default: the worker hosts' slots); 0 = none
  -c, --config FILE      experiment config (passed to conflux train --config)
  --set KEY=VALUE        config override, repeatable (same as after --)
  --bin PATH             conflux binary (default: $CONFLUX_BIN/conflux or build/bin/conflux);
                         the same path must exist on every host
  --oversubscribe        allow more ranks than slots (passed to mpirun)
  --mpirun-arg ARG       extra global mpirun option, repeatable, e.g.
                         --mpirun-arg --bind-to --mpirun-arg none (not -x: Open MPI 4.1
                         passes a global -x to the trainers' app context only)
  --drop-unreachable     first run "true" on each host through Open MPI's remote-shell agent
                         (\$OMPI_MCA_plm_rsh_agent, default ssh; all hosts at once, 10 s each)
                         and leave out the hosts where that fails, with their ranks: the
                         trainer and worker counts shrink to the slots that remain. For a
                         relaunch after a node is lost (tools/run-until-done.sh; conflux
                         resumes on fewer ranks: docs/launching.md, "Losing a node"). No
                         trainer host left: exit 2
  -n, --dry-run          print the mpirun command and exit
  -h, --help             this text
Hosts without a slot count share the remaining ranks evenly. A host named in both lists is
given the sum of both slot counts in each app context, so that the two groups fit side by
side. Open MPI only (docs/launching.md, "MPI implementations"). Environment: CONFLUX_MPIRUN
(default: mpirun.openmpi when installed, else mpirun); OPENBLAS_NUM_THREADS (set to 1), any
other OPENBLAS_* variable, CONFLUX_BLAS_PIN and CONFLUX_DATA (when set) are passed on to every rank (-x in each app
context), on remote hosts too.
EOF
}

die() {
  echo "hostfile-launch: $*" >&2
  exit 2
}

trainer_spec=""
worker_spec=""
trainers=""
workers=""
config=""
bin="${CONFLUX_BIN:-build/bin}/conflux"
dry_run=0
drop_unreachable=0
oversubscribe=0
mpirun_args=()
conflux_args=()

need_value() { [ $# -ge 2 ] || die "option $1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case $1 in
    --trainer-hosts) need_value "$@"; trainer_spec=$2; shift 2 ;;
    --trainer-hosts=*) trainer_spec=${1#*=}; shift ;;
    --worker-hosts) need_value "$@"; worker_spec=$2; shift 2 ;;
    --worker-hosts=*) worker_spec=${1#*=}; shift ;;
    -t | --trainers) need_value "$@"; trainers=$2; shift 2 ;;
    --trainers=*) trainers=${1#*=}; shift ;;
    -w | --workers) need_value "$@"; workers=$2; shift 2 ;;
    --workers=*) workers=${1#*=}; shift ;;
    -c | --config) need_value "$@"; config=$2; shift 2 ;;
    --config=*) config=${1#*=}; shift ;;
    --set) need_value "$@"; conflux_args+=(--set "$2"); shift 2 ;;
    --set=*) conflux_args+=(--set "${1#*=}"); shift ;;
    --bin) need_value "$@"; bin=$2; shift 2 ;;
    --bin=*) bin=${1#*=}; shift ;;
    --oversubscribe) oversubscribe=1; shift ;;
    --mpirun-arg) need_value "$@"; mpirun_args+=("$2"); shift 2 ;;
    --mpirun-arg=*) mpirun_args+=("${1#*=}"); shift ;;
    --drop-unreachable) drop_unreachable=1; shift ;;
    -n | --dry-run) dry_run=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; conflux_args+=("$@"); break ;;
    *) die "unknown option '$1' (conflux options go after --; see --help)" ;;
  esac
done

[ -n "$trainer_spec" ] || die "--trainer-hosts is required"
[ -n "$config" ] || die "--config is required"
is_count() { [[ $1 =~ ^[0-9]+$ ]]; }
[ -z "$trainers" ] || is_count "$trainers" || die "--trainers must be a number, not '$trainers'"
[ -z "$workers" ] || is_count "$workers" || die "--workers must be a number, not '$workers'"

# parse_hosts SPEC NAMES SLOTS: fills the arrays named NAMES and SLOTS (slots 0 = not given).
parse_hosts() {
  local spec=$1 entry host slots rest
  local -n names_ref=$2 slots_ref=$3
  names_ref=()
  slots_ref=()
  local entries=()
  if [[ $spec == @* ]]; then
    local file=${spec#@} line
    [ -r "$file" ] || die "cannot read hostfile '$file'"
    while IFS= read -r line || [ -n "$line" ]; do
      line=${line%%#*}
      read -r host rest <<<"$line" || true
      [ -n "$host" ] || continue
      slots=0
      if [[ ${rest:-} =~ (^|[[:space:]])slots=([0-9]+) ]]; then slots=${BASH_REMATCH[2]}; fi
      entries+=("$host:$slots")
    done <"$file"
  else
    IFS=, read -r -a entries <<<"$spec"
  fi
  for entry in "${entries[@]}"; do
    [ -n "$entry" ] || continue
    host=${entry%%:*}
    slots=0
    if [[ $entry == *:* ]]; then slots=${entry#*:}; fi
    if [ -z "$host" ] || ! is_count "$slots"; then
      die "bad host entry '$entry' in '$spec' (want host or host:slots)"
    fi
    names_ref+=("$host")
    slots_ref+=("$slots")
  done
  [ ${#names_ref[@]} -gt 0 ] || die "no hosts in '$spec'"
}

# fill_slots COUNT NAMES SLOTS: gives hosts without a slot count an even share of what the
# explicit counts leave of COUNT (at least 1 each).
fill_slots() {
  local count=$1 i explicit=0 open=0
  local -n names_f=$2 slots_f=$3
  for i in "${!names_f[@]}"; do
    if [ "${slots_f[i]}" -gt 0 ]; then explicit=$((explicit + slots_f[i])); else open=$((open + 1)); fi
  done
  [ "$open" -gt 0 ] || return 0
  local rest=$((count - explicit)) share=1
  [ "$rest" -gt 0 ] && share=$(((rest + open - 1) / open))
  for i in "${!names_f[@]}"; do
    [ "${slots_f[i]}" -gt 0 ] || slots_f[i]=$share
  done
}

sum_slots() {
  local -n slots_s=$1
  local s total=0
  for s in "${slots_s[@]}"; do total=$((total + (s > 0 ? s : 1))); done
  echo "$total"
}

t_names=()
t_slots=()
parse_hosts "$trainer_spec" t_names t_slots
[ -n "$trainers" ] || trainers=$(sum_slots t_slots)
[ "$trainers" -ge 1 ] || die "--trainers must be at least 1"
fill_slots "$trainers" t_names t_slots
w_names=()
w_slots=()
if [ -n "$worker_spec" ]; then
  parse_hosts "$worker_spec" w_names w_slots
  [ -n "$workers" ] || workers=$(sum_slots w_slots)
  fill_slots "$workers" w_names w_slots
else
  [ "${workers:-0}" -eq 0 ] || die "--workers $workers needs --worker-hosts"
  workers=0
fi

# The remote-shell agent Open MPI would use (its first word: the value may list alternatives).
probe_agent() {
  local agent=${OMPI_MCA_plm_rsh_agent:-ssh}
  agent=${agent%%:*}
  read -r -a agent_words <<<"$agent"
  [ "$(basename "${agent_words[0]}")" != ssh ] || agent_words+=(-o BatchMode=yes -o ConnectTimeout=10)
}

# unreachable_hosts HOST...: prints the hosts where the agent cannot run "true" within 10 s.
unreachable_hosts() {
  local host dir
  dir=$(mktemp -d)
  for host in "$@"; do
    (timeout 10 "${agent_words[@]}" "$host" true </dev/null >/dev/null 2>"$dir/$host" || echo "$host" >>"$dir/.dead") &
  done
  wait
  if [ -s "$dir/.dead" ]; then
    sort -u "$dir/.dead" | while read -r host; do
      echo "hostfile-launch: dropping unreachable host $host ($(tail -n 1 "$dir/$host" || true))" >&2
      echo "$host"
    done
  fi
  rm -rf "$dir"
}

# drop_hosts NAMES SLOTS COUNT-VAR DEAD...: removes the dead hosts from NAMES/SLOTS and caps the
# count in COUNT-VAR at the slots that remain.
drop_hosts() {
  local -n names_d=$1 slots_d=$2 count_d=$3
  shift 3
  local i kept_n=() kept_s=() total=0
  for i in "${!names_d[@]}"; do
    if [[ " $* " == *" ${names_d[i]} "* ]]; then continue; fi
    kept_n+=("${names_d[i]}")
    kept_s+=("${slots_d[i]}")
    total=$((total + slots_d[i]))
  done
  names_d=(${kept_n[@]+"${kept_n[@]}"})
  slots_d=(${kept_s[@]+"${kept_s[@]}"})
  [ "$count_d" -le "$total" ] || count_d=$total
}

if [ "$drop_unreachable" -eq 1 ]; then
  probe_agent
  mapfile -t all_hosts < <(printf '%s\n' "${t_names[@]}" ${w_names[@]+"${w_names[@]}"} | sort -u)
  mapfile -t dead < <(unreachable_hosts "${all_hosts[@]}")
  if [ ${#dead[@]} -gt 0 ]; then
    drop_hosts t_names t_slots trainers "${dead[@]}"
    [ "$trainers" -ge 1 ] || die "no trainer host is reachable (${dead[*]} dropped)"
    [ "$workers" -eq 0 ] || drop_hosts w_names w_slots workers "${dead[@]}"
    echo "hostfile-launch: $trainers trainer(s) and $workers worker(s) on the hosts that remain" >&2
  fi
fi

check_fit() {  # check_fit GROUP COUNT SLOTS
  local -n slots_c=$3
  local s total=0
  for s in "${slots_c[@]}"; do total=$((total + s)); done
  if [ "$2" -gt "$total" ] && [ "$oversubscribe" -eq 0 ]; then
    die "$2 $1 rank(s) but only $total slot(s) on the $1 hosts (add hosts or slots, or --oversubscribe)"
  fi
}
check_fit trainer "$trainers" t_slots
[ "$workers" -eq 0 ] || check_fit worker "$workers" w_slots

# Open MPI caps each app context's use of a host at the slot count given in that context,
# counting the ranks earlier contexts placed there: a shared host gets the sum in both.
declare -A t_total=() w_total=()
for i in "${!t_names[@]}"; do t_total[${t_names[i]}]=$((${t_total[${t_names[i]}]:-0} + t_slots[i])); done
for i in "${!w_names[@]}"; do w_total[${w_names[i]}]=$((${w_total[${w_names[i]}]:-0} + w_slots[i])); done
host_list() {  # host_list NAMES SLOTS: "h1:n1,h2:n2" with shared hosts' slots summed
  local -n names_h=$1 slots_h=$2
  local i out="" n
  for i in "${!names_h[@]}"; do
    n=${slots_h[i]}
    if [ -n "${t_total[${names_h[i]}]:-}" ] && [ -n "${w_total[${names_h[i]}]:-}" ]; then
      n=$((t_total[${names_h[i]}] + w_total[${names_h[i]}]))
    fi
    out+="${out:+,}${names_h[i]}:$n"
  done
  echo "$out"
}

# Root needs Open MPI's opt-in variables (forwarded by mpirun); one BLAS thread per rank.
# Open MPI's, whatever the build in CONFLUX_BIN says: the command below is Open MPI's syntax.
CONFLUX_MPI=openmpi
# shellcheck source=tools/mpi-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi-env.sh"

app=("$bin" train --config "$config" --set "cluster.trainers=$trainers" --set "cluster.workers=$workers")
app+=(${conflux_args[@]+"${conflux_args[@]}"})
cmd=("${CONFLUX_MPIRUN:-$MPI_LAUNCHER}")
[ "$oversubscribe" -eq 0 ] || cmd+=(--oversubscribe)
cmd+=(${mpirun_args[@]+"${mpirun_args[@]}"})
# mpirun gives ranks on remote hosts only the variables named with -x, and Open MPI 4.1 applies
# an -x to its own app context only (one before the first context reaches the trainers alone):
# each context names them: OpenBLAS's settings and CONFLUX_BLAS_PIN (the kernels decide the
# digest: docs/design.md, invariant 8) and the datasets' directory, when the environment sets
# them.
env_args=(-x OPENBLAS_NUM_THREADS)
for v in $(compgen -e | grep '^OPENBLAS_' | sort); do
  [ "$v" = OPENBLAS_NUM_THREADS ] || env_args+=(-x "$v")
done
[ -z "${CONFLUX_BLAS_PIN:-}" ] || env_args+=(-x CONFLUX_BLAS_PIN)
[ -z "${CONFLUX_DATA:-}" ] || env_args+=(-x CONFLUX_DATA)
cmd+=(-np "$trainers" --host "$(host_list t_names t_slots)" "${env_args[@]}" "${app[@]}")
if [ "$workers" -gt 0 ]; then
  cmd+=(: -np "$workers" --host "$(host_list w_names w_slots)" "${env_args[@]}" "${app[@]}")
fi

# The command as one shell-quoted line (plain words stay unquoted, for readability).
show() {
  local a out=""
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then out+="${out:+ }$a"; else out+="${out:+ }$(printf '%q' "$a")"; fi
  done
  echo "$out"
}
if [ "$dry_run" -eq 1 ]; then
  show "${cmd[@]}"
  exit 0
fi
echo "+ $(show "${cmd[@]}")" >&2
exec "${cmd[@]}"
