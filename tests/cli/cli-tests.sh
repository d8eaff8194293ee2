#!/usr/bin/env bash
# Command-line tests of build/bin/conflux: bad configs and bad data files (each must exit 2
# with a clear message, on every rank, without hanging), the run directory, and bit-identical
# digests across repeated runs, rank layouts and the HDF5 copy of a dataset.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

mnist_train() { "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config configs/mnist_mlp.toml \
  "${QUICK[@]}" --set "run.dir=$TMP/run-$2" "${@:3}"; }

# --- every command and action answers --help with exit 0 and its usage; --version names the libraries
help_failures=()
# The commands and actions as the binary lists them from its registry (src/cli/command_registry.cpp),
# so a new one is tested without editing this script.
mapfile -t commands < <("$CONFLUX" help --commands 2>&1)
[ "${#commands[@]}" -ge 20 ] || help_failures+=("only ${#commands[@]} commands from 'conflux help --commands'")
overview=$("$CONFLUX" --help 2>&1)
grep -q '^Exit codes: 0 success, 2 bad input' <<<"$overview" && grep -q '^Data: data.dir, else $CONFLUX_DATA' <<<"$overview" ||
  help_failures+=("the overview lacks the exit codes or the data directory rule")
for cmd in "${commands[@]}"; do
  # shellcheck disable=SC2086  # the command's words are meant to split
  out=$("$CONFLUX" $cmd --help 2>&1)
  rc=$?
  usage=$(sed -n '/^Usage:/{n;p;q}' <<<"$out")
  # Its help opens with its usage line (a group's: its first action's), the very line the
  # overview prints, and that line names the command.
  if [ "$rc" -ne 0 ] || [[ "$usage" != *"conflux $cmd"* ]] || ! grep -qxF -- "$usage" <<<"$overview"; then
    help_failures+=("'$cmd --help' (exit $rc, usage '$usage')")
  fi
  # shellcheck disable=SC2086
  [ "$("$CONFLUX" help $cmd 2>&1)" = "$out" ] || help_failures+=("'help $cmd' differs from '$cmd --help'")
done
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
mapfile -t scenarios < <("$BENCH" --help 2>&1 | sed -n '/^Scenarios:/,/^$/p' | grep -oP '^  \K[a-z-]+')
[ "${#scenarios[@]}" -ge 9 ] || help_failures+=("only ${#scenarios[@]} conflux-bench scenarios")
for s in "" "${scenarios[@]}"; do
  # shellcheck disable=SC2086
  out=$("$BENCH" $s --help 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] || ! grep -qiE "usage|options" <<<"$out"; then help_failures+=("'conflux-bench $s' (exit $rc)"); fi
done
if [ ${#help_failures[@]} -eq 0 ]; then
  ok "--help of every command and action (${#commands[@]}) and conflux-bench scenario (${#scenarios[@]}): exit 0 with a usage"
else
  not_ok "--help failed for: ${help_failures[*]}"
fi
out=$("$CONFLUX" --version 2>&1)
if grep -q "^conflux [0-9]" <<<"$out" && grep -q "^revision " <<<"$out" && grep -q "^MPI .*MPI [0-9]" <<<"$out" &&
  grep -q "^HDF5 .*[0-9]\.[0-9]" <<<"$out" && grep -q "^BLAS .*OpenBLAS" <<<"$out" && grep -q "^CUDA " <<<"$out"; then
  ok "--version: release, revision, MPI, HDF5, BLAS and CUDA"
else
  not_ok "--version" "$out"
fi
# The MPI line names the implementation this build links (tools/mpi-env.sh: CONFLUX_MPI).
want_mpi=$([ "$CONFLUX_MPI" = mpich ] && echo "MPICH Version: [0-9]" || echo "Open MPI v[0-9]")
if grep -qE "^MPI +$want_mpi" <<<"$out"; then ok "--version names the MPI library of the build ($CONFLUX_MPI)"; else
  not_ok "--version: want '$want_mpi' on the MPI line for $CONFLUX_MPI" "$out"; fi

# --- the scale model's chain (docs/scaling.md): measured --json files in, predictions out ----
# tcp's alpha-beta table and grad-sync's ranks per host feed conflux-bench scale-model; tiny
# sizes keep it to seconds.
"${MPIRUN[@]}" -np 2 "$BENCH" tcp --mib 4 --message-mib 4 --rounds 1 --allreduce-mib 1 \
  --latency-s 0.2 --json "$TMP/tcp.json" >"$TMP/tcp.log" 2>&1
"${MPIRUN[@]}" -np 2 "$BENCH" grad-sync --configs "" --min-bytes 4096 --max-bytes 65536 \
  --iters 2 --warmup 1 --kreduce false --json "$TMP/gs.json" >"$TMP/gs.log" 2>&1
out=$("$BENCH" scale-model --tcp "$TMP/tcp.json" --check "$TMP/gs.json" --event-bytes 100 2>&1)
alpha=$(grep -oP '^alpha +\K[0-9.]+' "$TMP/tcp.log")
if awk -v a="${alpha:-0}" 'BEGIN { exit !(a > 0) }' && grep -q '"ranks_per_host": 2' "$TMP/gs.json" &&
  [ "$(grep -cP '^ +2 +2 +sweep +(4096|16384|65536) +[0-9.]+ +[0-9.]+ +-?[0-9.]+ +[0-9.]+$' <<<"$out")" -eq 3 ] &&
  grep -qP '^audit allreduce, 1281167 samples +10249352 ' <<<"$out" &&
  grep -q "the gather's 2 GiB limit is reached at" <<<"$out"; then
  ok "conflux-bench tcp measures alpha ($alpha us), scale-model checks grad-sync's 3 sizes and lists the limits"
else
  not_ok "tcp -> grad-sync -> scale-model chain" "$(cat "$TMP/tcp.log" "$TMP/gs.log"; echo "$out")"
fi
expect_fail "scale-model without --tcp" 2 "scale-model: --tcp FILE is needed" -- "$BENCH" scale-model
expect_fail "scale-model on a file that is not tcp's" 2 "has no summary figure 'alpha_us'" -- \
  "$BENCH" scale-model --tcp "$TMP/gs.json"

# --- bad command lines and configs -----------------------------------------------------------
expect_fail "unknown command" 2 "unknown command 'trian'" -- "$CONFLUX" trian
expect_fail "a group without an action" 2 "conflux ckpt: expected 'inspect' or 'verify'" -- "$CONFLUX" ckpt
expect_fail "an unknown action" 2 "conflux data: unknown action 'show' (expected convert, info or pack)" -- "$CONFLUX" data show x.h5
expect_fail "an action's operands: its usage line" 2 "usage: conflux data info FILE.h5" -- "$CONFLUX" data info a.h5 b.h5
expect_fail "missing config file" 2 "cannot open config file" -- "$CONFLUX" config check --config "$TMP/none.toml"
printf '[train]\nlr = = 1\n' >"$TMP/syntax.toml"
expect_fail "TOML syntax error with line:column" 2 "syntax.toml:2:" -- "$CONFLUX" config check --config "$TMP/syntax.toml"
sed 's/^lr = 0.05/learning_rate = 0.05/' configs/mnist_mlp.toml >"$TMP/typo.toml"
expect_fail "unknown key with hint" 2 "unknown key 'train.learning_rate'" -- "$CONFLUX" config check --config "$TMP/typo.toml"
expect_fail "/dev/zero as --config: refused at once, not read without end" 2 "/dev/zero: not a regular file (a character device)" -- \
  timeout 10 "$CONFLUX" config check --config /dev/zero
expect_fail "bad --set value" 2 "train.lr: expected a number" -- "$CONFLUX" config check --config configs/mnist_mlp.toml --set train.lr=fast
expect_fail "--set without =" 2 "expected key=value" -- "$CONFLUX" config check --config configs/mnist_mlp.toml --set train.lr
expect_fail "--set with trailing content" 2 "--set train.lr=0.1" -- "$CONFLUX" config check --config configs/mnist_mlp.toml --set $'train.lr=0.1\nepochs=99'
expect_fail "unknown option" 2 "unrecognised option" -- "$CONFLUX" train --config configs/mnist_mlp.toml --sett x=1
expect_fail "too few ranks: error on every rank" 2 "cluster.trainers = 3 needs at least 3 ranks, but the job has 2" 2 -- \
  mnist_train 2 ranks --set cluster.trainers=3
expect_fail "rank count vs cluster.workers: error on every rank" 2 "need 3 ranks, but the job has 2" 2 -- \
  mnist_train 2 workers --set cluster.trainers=2 --set cluster.workers=1
sed 's/^out = 512$/out = 1048576/; s/^out = 256$/out = 1048576/' configs/mnist_mlp.toml >"$TMP/huge.toml"
expect_fail "config check estimates the model's memory and names its largest layer" 2 "model.layers[3] (linear, 1099512676352 parameters" -- \
  "$CONFLUX" config check --config "$TMP/huge.toml"
sed 's/^out = 10$/out = 5/' configs/mnist_mlp.toml >"$TMP/out5.toml"
expect_fail "model output does not match classes" 2 "10 classes" 2 -- \
  "${MPIRUN[@]}" -np 2 "$CONFLUX" train --config "$TMP/out5.toml" "${QUICK[@]}" --set "run.dir=$TMP/run-out5"
expect_fail "crop larger than the image" 2 "transform.crop = 40 is larger than the padded image" -- \
  mnist_train 2 crop --set transform.crop=40
expect_fail "missing data directory" 2 "$TMP/nodata/mnist" -- \
  mnist_train 2 nodata --set "data.dir=$TMP/nodata"
# No data.dir and no $CONFLUX_DATA: the per-user directory, never the working directory (from
# the repository root, ../shared/data may exist; it must not be read).
expect_fail "no CONFLUX_DATA: looks in \$HOME/.local/share/conflux/data, says how to point elsewhere" 2 \
  "$TMP/home/.local/share/conflux/data/mnist: directory of dataset 'mnist' not found; conflux reads the datasets from data.dir, else \$CONFLUX_DATA" -- \
  env -u CONFLUX_DATA -u XDG_DATA_HOME HOME="$TMP/home" "$CONFLUX" data convert --dataset mnist --output "$TMP/x.h5"
if [ -d "$DATA/mnist" ]; then
  mkdir -p "$TMP/xdg/conflux/data" "$TMP/elsewhere"
  ln -s "$(realpath "$DATA/mnist")" "$TMP/xdg/conflux/data/mnist"
  conflux_abs=$(realpath "$CONFLUX")
  if out=$(cd "$TMP/elsewhere" && env -u CONFLUX_DATA XDG_DATA_HOME="$TMP/xdg" HOME="$TMP/home" \
    "$conflux_abs" data convert --dataset mnist --output "$TMP/xdg.h5" 2>&1) &&
    grep -q "60000 train + 10000 test samples" <<<"$out"; then
    ok "no CONFLUX_DATA: reads \$XDG_DATA_HOME/conflux/data, from any working directory"
  else
    not_ok "reading \$XDG_DATA_HOME/conflux/data" "$out"
  fi
fi

# --- bad data files ------------------------------------------------------------------------
if [ -d "$DATA/mnist" ]; then
  bad="$TMP/bad"
  mkdir -p "$bad/mnist"
  cp "$DATA"/mnist/*.gz "$bad/mnist/"
  zcat "$DATA/mnist/t10k-images-idx3-ubyte.gz" | head -c 100000 | gzip >"$bad/mnist/t10k-images-idx3-ubyte.gz"
  expect_fail "truncated image file: names file and offset" 2 "t10k-images-idx3-ubyte.gz: truncated at byte offset" 2 -- \
    mnist_train 2 trunc --set "data.dir=$bad"
  cp "$DATA/mnist/t10k-images-idx3-ubyte.gz" "$bad/mnist/"
  cp "$DATA/mnist/t10k-images-idx3-ubyte.gz" "$bad/mnist/t10k-labels-idx1-ubyte.gz"
  expect_fail "bad magic number" 2 "bad magic number 0x00000803 at byte offset 0" -- \
    mnist_train 2 magic --set "data.dir=$bad"
  zcat "$DATA/mnist/t10k-labels-idx1-ubyte.gz" >"$TMP/labels"
  printf '\x0c' | dd of="$TMP/labels" bs=1 seek=13 conv=notrunc status=none
  gzip -c "$TMP/labels" >"$bad/mnist/t10k-labels-idx1-ubyte.gz"
  expect_fail "label out of range" 2 "label 12 at byte offset 13" -- \
    mnist_train 2 label --set "data.dir=$bad"
  zcat "$DATA/mnist/t10k-labels-idx1-ubyte.gz" | head -c 5008 | gzip >"$bad/mnist/t10k-labels-idx1-ubyte.gz"
  expect_fail "image and label counts differ" 2 "t10k-labels-idx1-ubyte.gz" -- \
    mnist_train 2 count --set "data.dir=$bad"
  # Both headers claim 2^31 records, payloads unchanged: the error names the file and the
  # claimed and possible counts, before memory follows the claim (it took 11 GB once).
  for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    zcat "$DATA/mnist/$f.gz" >"$TMP/$f"
    printf '\x80\x00\x00\x00' | dd of="$TMP/$f" bs=1 seek=4 conv=notrunc status=none
    gzip -c "$TMP/$f" >"$bad/mnist/$f.gz"
  done
  out=$(/usr/bin/time -f 'peak-rss-kb %M' "$CONFLUX" data convert --dataset mnist --data-dir "$TMP/bad" \
    --output "$TMP/claim.h5" 2>&1)
  rc=$?
  rss_kb=$(sed -n 's/^peak-rss-kb //p' <<<"$out")
  if [ "$rc" -eq 2 ] && grep -q "t10k-images-idx3-ubyte.gz: truncated at .*room for 10000 of the 2147483648 images" <<<"$out" &&
    [ -n "$rss_kb" ] && [ "$rss_kb" -lt 204800 ]; then
    ok "header claiming 2^31 records: exit 2, claimed vs possible count, peak RSS $((rss_kb / 1024)) MB"
  else
    not_ok "2^31 records claimed: exit $rc, peak RSS ${rss_kb:-?} KB (want 2, < 200 MB)" "$out"
  fi
  cp "$DATA"/mnist/t10k-*.gz "$bad/mnist/"
  printf 'not gzip, not idx' | gzip -c | head -c 20 >"$bad/mnist/t10k-labels-idx1-ubyte.gz"
  expect_fail "corrupt gzip stream" 2 "t10k-labels-idx1-ubyte.gz" -- \
    mnist_train 2 gz --set "data.dir=$bad"
else
  echo "skip - bad MNIST files: $DATA/mnist not found"
fi
# Ranks that see different data or configs: found at start-up on every rank, naming the rank and
# what differs (a Fashion-MNIST copy under mnist/ used to train silently; a differing train.lr
# was found only at the end as "replicas ended with different weights").
if [ -d "$DATA/mnist" ] && [ -d "$DATA/fashion-mnist" ]; then
  mkdir -p "$TMP/other/mnist"
  for f in "$DATA"/fashion-mnist/*.gz; do ln -sf "$(realpath "$f")" "$TMP/other/mnist/"; done
  MNIST_ARGS=(train --config configs/mnist_mlp.toml "${QUICK[@]}" --set "run.dir=$TMP/run-mixed")
  mapfile -t env_mine < <(mpi_env "CONFLUX_DATA=$DATA")
  mapfile -t env_other < <(mpi_env "CONFLUX_DATA=$TMP/other")
  expect_fail "a rank reading other data: exit 2 on every rank, naming rank and file" 2 \
    "rank 1's training data differs from rank 0's: the SHA-256 of train-images-idx3-ubyte.gz (training split)" 2 -- \
    "${MPIRUN[@]}" -np 1 "${env_mine[@]}" "$CONFLUX" "${MNIST_ARGS[@]}" : \
    -np 1 "${env_other[@]}" "$CONFLUX" "${MNIST_ARGS[@]}"
  expect_fail "a rank with another config: exit 2 on every rank, naming rank and key" 2 \
    "rank 1's config differs from rank 0's: train.lr is 0.1 here but 0.05 on rank 0" 2 -- \
    "${MPIRUN[@]}" -np 1 "$CONFLUX" "${MNIST_ARGS[@]}" : -np 1 "$CONFLUX" "${MNIST_ARGS[@]}" --set train.lr=0.1
fi
if [ -d "$DATA/cifar-10" ]; then
  bad="$TMP/badcifar/cifar-10"
  mkdir -p "$bad"
  for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5; do ln -s "$(realpath "$DATA/cifar-10/$f.bin")" "$bad/$f.bin"; done
  head -c 30729999 "$DATA/cifar-10/test_batch.bin" >"$bad/test_batch.bin"
  expect_fail "CIFAR truncated record" 2 "test_batch.bin" 2 -- \
    "${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/cifar10_cnn.toml --set "data.dir=$TMP/badcifar" --set "run.dir=$TMP/run-c1"
  cp "$DATA/cifar-10/test_batch.bin" "$bad/test_batch.bin"
  chmod u+w "$bad/test_batch.bin"
  printf '\x0b' | dd of="$bad/test_batch.bin" bs=1 seek=$((3073 * 5)) conv=notrunc status=none
  expect_fail "CIFAR label out of range" 2 "label 11 at byte offset 15365" 2 -- \
    "${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/cifar10_cnn.toml --set "data.dir=$TMP/badcifar" --set "run.dir=$TMP/run-c2"
fi
printf 'this is not HDF5' >"$TMP/fake.h5"
expect_fail "data.hdf5_file that is not HDF5" 2 "fake.h5" 2 -- \
  mnist_train 2 fakeh5 --set "data.hdf5_file=$TMP/fake.h5"

# --- successful runs: run directory, determinism, HDF5 copy ---------------------------------
if [ -d "$DATA/mnist" ]; then
  mnist_train 2 a >"$TMP/a.log" 2>&1 && mnist_train 2 b >"$TMP/b.log" 2>&1
  da=$(digest_of "$TMP/a.log")
  db=$(digest_of "$TMP/b.log")
  if [ -n "$da" ] && [ "$da" = "$db" ]; then ok "same seed and ranks: identical digests ($da)"; else not_ok "digests differ: '$da' '$db'" "$(cat "$TMP/a.log")"; fi
  files_ok=1
  for f in config.toml metrics.jsonl model.h5 summary.json; do [ -s "$TMP/run-a/$f" ] || files_ok=0; done
  if [ $files_ok = 1 ] && grep -q "\"digest\": \"$da\"" "$TMP/run-a/summary.json" && grep -q '"test_accuracy"' "$TMP/run-a/metrics.jsonl" \
    && "$CONFLUX" config check --config "$TMP/run-a/config.toml" >/dev/null; then
    ok "run directory holds a reloadable config.toml, metrics.jsonl, model.h5, summary.json"
  else
    not_ok "run directory incomplete" "$(ls -l "$TMP/run-a")"
  fi
  mnist_train 4 c >"$TMP/c.log" 2>&1
  dc=$(digest_of "$TMP/c.log")
  if [ "$da" = "$dc" ] && grep -q "2 trainer(s), 2 worker(s)" "$TMP/c.log"; then ok "2 trainers + 2 idle workers give the same digest as 2 ranks"; else not_ok "4-rank digest '$dc' != '$da'" "$(cat "$TMP/c.log")"; fi
  if "$CONFLUX" data convert --dataset mnist --data-dir "$DATA" --output "$TMP/mnist.h5" >/dev/null &&
    "$CONFLUX" data info "$TMP/mnist.h5" | grep -q "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"; then
    ok "data convert writes HDF5 with source SHA-256"
  else
    not_ok "data convert"
  fi
  mnist_train 2 h >"$TMP/h.log" 2>&1 --set "data.hdf5_file=$TMP/mnist.h5"
  dh=$(digest_of "$TMP/h.log")
  if [ "$da" = "$dh" ]; then ok "training from the HDF5 copy gives the same digest"; else not_ok "HDF5 digest '$dh' != '$da'" "$(cat "$TMP/h.log")"; fi
  expect_fail "HDF5 file of another dataset" 2 "holds dataset 'mnist' but data.dataset is 'fashion-mnist'" -- \
    mnist_train 2 other --set "data.hdf5_file=$TMP/mnist.h5" --set data.dataset=fashion-mnist

  # --- weights in and out: conflux eval on saved weights, train.init_from -------------------------
  # eval of run a's model.h5 on the same 200 test samples gives the accuracy training reported,
  # on 1 rank and sharded over 2.
  acc_a=$(grep -oP 'final test accuracy \K[0-9.]+' "$TMP/a.log")
  eval_args=(eval --model "$TMP/run-a/model.h5" --config configs/mnist_mlp.toml --set data.test_limit=200)
  e1=$("$CONFLUX" "${eval_args[@]}" 2>&1)
  e2=$("${MPIRUN[@]}" -np 2 "$CONFLUX" "${eval_args[@]}" 2>&1)
  line1=$(grep -oP '^eval: test split, 200 samples: .*' <<<"$e1")
  line2=$(grep -oP '^eval: test split, 200 samples: .*' <<<"$e2")
  if [ -n "$acc_a" ] && [[ $line1 == *"accuracy $acc_a%" ]] && [ "$line1" = "$line2" ] &&
    grep -q "weights from $TMP/run-a/model.h5: 6 tensor(s) loaded (weights digest $da)" <<<"$e1"; then
    ok "conflux eval of a run's model.h5: the accuracy training reported ($acc_a%), same on 1 and 2 ranks"
  else
    not_ok "conflux eval: '$line1' / '$line2', training said $acc_a%" "$e1$e2"
  fi
  # init_from with a learning rate too small to matter keeps run a's accuracy; a random init at
  # that rate stays near chance, and so does a re-initialised output layer on run a's body.
  tiny=(--set train.lr=1e-9 --set train.epochs=1)
  mnist_train 2 init >"$TMP/init.log" 2>&1 "${tiny[@]}" --set "train.init_from=$TMP/run-a/model.h5"
  mnist_train 2 scratch >"$TMP/scratch.log" 2>&1 "${tiny[@]}"
  # (another seed: with run a's, the reset layer would be run a's initial one, which 8 steps of
  # training barely moved)
  mnist_train 2 reset >"$TMP/reset.log" 2>&1 "${tiny[@]}" --set "train.init_from=$TMP/run-a/model.h5" \
    --set train.init_reset_output=true --set run.seed=7
  acc() { grep -oP 'final test accuracy \K[0-9]+' "$1"; }
  if [ -n "$(acc "$TMP/init.log")" ] && [ "$(acc "$TMP/init.log")" -ge $((${acc_a%.*} - 2)) ] &&
    [ "$(acc "$TMP/scratch.log")" -le 40 ] && [ "$(acc "$TMP/reset.log")" -le 40 ] &&
    grep -q "weights from $TMP/run-a/model.h5: 6 tensor(s) loaded$" "$TMP/init.log" &&
    grep -q "4 tensor(s) loaded; output layer left as initialised (layer5.linear.weight, layer5.linear.bias)" "$TMP/reset.log"; then
    ok "train.init_from at lr 1e-9: accuracy $(acc "$TMP/init.log")% (run a: $acc_a%), from scratch $(acc "$TMP/scratch.log")%, output layer reset $(acc "$TMP/reset.log")%"
  else
    not_ok "train.init_from: init $(acc "$TMP/init.log")%, scratch $(acc "$TMP/scratch.log")%, reset $(acc "$TMP/reset.log")% (run a: $acc_a%)" \
      "$(cat "$TMP/init.log" "$TMP/reset.log")"
  fi
  expect_fail "init_from a model of another architecture" 2 \
    "--set train.init_from=$TMP/run-a/model.h5: train.init_from: model file $TMP/run-a/model.h5: parameter layer0.conv2d.weight is missing" -- \
    "${MPIRUN[@]}" -np 2 "$CONFLUX" train --config configs/cifar10_cnn.toml "${QUICK[@]}" --set "run.dir=$TMP/run-bad-init" \
    --set "train.init_from=$TMP/run-a/model.h5"
  expect_fail "eval with a config of another architecture" 2 \
    "conflux eval --model: model file $TMP/run-a/model.h5: parameter layer0.conv2d.weight is missing" -- \
    "$CONFLUX" eval --model "$TMP/run-a/model.h5" --config configs/cifar10_cnn.toml --set data.test_limit=10
  expect_fail "eval of a missing model file" 2 "$TMP/none.h5" -- \
    "$CONFLUX" eval --model "$TMP/none.h5" --config configs/mnist_mlp.toml
  expect_fail "eval --split other than test or train" 2 "--split must be test or train, not 'val'" -- \
    "$CONFLUX" eval --model "$TMP/run-a/model.h5" --config configs/mnist_mlp.toml --split val
fi

cli_summary
