#!/usr/bin/env bash
# Run-until-done wrapper for clusters without a scheduler that requeues (bare mpirun): runs a
# command and relaunches it when it fails in a way a restart can fix, so that a job whose rank
# died (kill -9, node trouble) carries on from its last checkpoint.
#
#   tools/run-until-done.sh [--max-restarts N] [--delay S] -- COMMAND [ARGS...]
#   tools/run-until-done.sh -- mpirun -np 3 build/bin/conflux train --config C --resume auto \
#     --set checkpoint.every_steps=200
#
# The command must resume by itself (conflux: --resume auto); the wrapper does not alter it.
set -uo pipefail

PROG=run-until-done

usage() {
  cat <<'EOF'
usage: tools/run-until-done.sh [--max-restarts N] [--delay S] [--forward-as SIG] -- COMMAND [ARGS...]
Runs COMMAND until it succeeds:
  exit 0                  done: exit 0
  exit 2                  bad input (conflux: config or data error), never worth a relaunch:
                          exit 2 at once
  exit 4                  the run directory is in use by another job (conflux names it): a
                          relaunch would only collide again, so exit 4 at once
  any other exit          (3 runtime failure, 75 checkpointed, 128+N killed by signal N, e.g.
                          137 when a rank was kill -9'd and mpirun aborted): log
                          "run-until-done: attempt K exited with C; relaunching (K/N)", wait S
                          seconds and run COMMAND again, at most N times; then give up with
                          the last exit code
  --max-restarts N        relaunches allowed (default 10; 0 = run once)
  --delay S               seconds between attempts (default 2; fractions allowed)
  --forward-as SIG        forward every stop signal as SIG instead of as itself (e.g. USR1:
                          Open MPI's mpirun relays USR1 to every rank, while on TERM or INT it
                          kills the ranks soon after)
  -h, --help              this text
Signals: SIGTERM, SIGINT and SIGUSR1 sent to the wrapper are forwarded to COMMAND (the
process the wrapper started) so that a scheduler's warning reaches the program (conflux then
checkpoints and exits 75); a signal already forwarded to the running command is not sent
again (it would add nothing, and srun dies of a SIGUSR1 that comes while it ends). After such a signal the wrapper never relaunches: it waits for
COMMAND and exits with its code (75 when conflux checkpointed). A signal between two attempts
stops the wrapper with exit 75 (the run can be resumed).
Environment: COMMAND sees CONFLUX_RESTART_COUNT = 0 for the first attempt, 1, 2, ... after.
The command runs in its own process group, so a terminal's Ctrl-C reaches it once, through
the wrapper.
EOF
}

die() {
  echo "$PROG: $*" >&2
  exit 2
}

max_restarts=10
delay=2
forward_as=""
while [ $# -gt 0 ]; do
  case $1 in
    --max-restarts) [ $# -ge 2 ] || die "--max-restarts needs a value"; max_restarts=$2; shift 2 ;;
    --max-restarts=*) max_restarts=${1#*=}; shift ;;
    --delay) [ $# -ge 2 ] || die "--delay needs a value"; delay=$2; shift 2 ;;
    --delay=*) delay=${1#*=}; shift ;;
    --forward-as) [ $# -ge 2 ] || die "--forward-as needs a value"; forward_as=$2; shift 2 ;;
    --forward-as=*) forward_as=${1#*=}; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
[[ $max_restarts =~ ^[0-9]+$ ]] || die "--max-restarts wants a whole number, not '$max_restarts'"
[[ $delay =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--delay wants seconds, not '$delay'"
if [ -n "$forward_as" ]; then
  forward_as=${forward_as#SIG}
  case $forward_as in USR1 | USR2 | TERM | INT | HUP) ;; *) die "--forward-as: USR1, USR2, TERM, INT or HUP, not '$forward_as'" ;; esac
fi
if ! command -v -- "$1" >/dev/null 2>&1; then
  echo "$PROG: command not found: $1" >&2
  exit 127
fi

child=""
stop_signal=""   # the first stop signal received: no relaunch after it
interrupted=0
forwarded=" "     # signals already forwarded to this attempt's command

on_signal() {  # on_signal SIG
  interrupted=1
  [ -n "$stop_signal" ] || stop_signal=$1
  local sig=${forward_as:-$1}
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    # The same signal twice is no news to the command, and can kill it: srun, once it has
    # begun to end the step (after SIGTERM from scancel), no longer catches SIGUSR1 (exit 138).
    if [[ $forwarded == *" $sig "* ]]; then
      echo "$PROG: got SIG$1; SIG$sig already forwarded to the command (pid $child), waiting" >&2
      return
    fi
    forwarded+="$sig "
    echo "$PROG: got SIG$1; forwarding SIG$sig to the command (pid $child)" >&2
    kill -s "$sig" "$child" 2>/dev/null || true
  else
    echo "$PROG: got SIG$1 between attempts" >&2
  fi
}
for s in TERM INT USR1; do
  # shellcheck disable=SC2064  # $s is expanded now, on purpose
  trap "on_signal $s" "$s"
done

# Job control: the command gets its own process group (and does not ignore SIGINT, as
# background commands of a script otherwise do); the wrapper forwards signals to it.
set -m

attempt=0
rc=0
while :; do
  attempt=$((attempt + 1))
  if [ -n "$stop_signal" ]; then
    echo "$PROG: stopping on SIG$stop_signal before attempt $attempt; the run can be resumed" >&2
    exit 75
  fi
  export CONFLUX_RESTART_COUNT=$((attempt - 1))
  forwarded=" "
  "$@" &
  child=$!
  # wait returns early (status > 128) when a trapped signal arrives; wait again until the
  # command has really exited. A second wait on an already-collected child returns 127.
  interrupted=0
  wait "$child"
  rc=$?
  while [ "$interrupted" -eq 1 ]; do
    interrupted=0
    wait "$child"
    r=$?
    if [ "$r" -eq 127 ] && ! kill -0 "$child" 2>/dev/null; then break; fi
    rc=$r
  done
  child=""
  if [ "$rc" -eq 0 ]; then
    [ "$attempt" -gt 1 ] && echo "$PROG: attempt $attempt succeeded (after $((attempt - 1)) relaunch(es))" >&2
    exit 0
  fi
  if [ "$rc" -eq 2 ]; then
    echo "$PROG: attempt $attempt exited with 2 (bad input); not relaunching" >&2
    exit 2
  fi
  if [ "$rc" -eq 4 ]; then
    echo "$PROG: attempt $attempt exited with 4 (run directory in use by another job); not relaunching" >&2
    exit 4
  fi
  if [ -n "$stop_signal" ]; then
    echo "$PROG: attempt $attempt exited with $rc after SIG$stop_signal; not relaunching" >&2
    exit "$rc"
  fi
  restarts=$((attempt - 1))
  if [ "$restarts" -ge "$max_restarts" ]; then
    echo "$PROG: attempt $attempt exited with $rc; giving up after $restarts relaunch(es)" >&2
    exit "$rc"
  fi
  echo "$PROG: attempt $attempt exited with $rc; relaunching ($((restarts + 1))/$max_restarts)" >&2
  # Interruptible sleep: a stop signal during the delay ends the wrapper (checked above).
  sleep "$delay" &
  sleeper=$!
  wait "$sleeper" 2>/dev/null
  kill "$sleeper" 2>/dev/null
done
