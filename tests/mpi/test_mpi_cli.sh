#!/usr/bin/env bash
# posemb under mpirun: 2 (and 3) ranks give the 1-process checkpoint byte for byte for every
# encoding; --resume under 2 ranks equals the uninterrupted run; a 2-rank sweep writes the
# sequential results.csv; a rank that fails, is killed or stops answering ends the job with an
# error within a bounded time (never a hang), reported once.
#   test_mpi_cli.sh POSEMB MPIEXEC
set -u
bin="$1"
mpiexec="$2"
# shellcheck source=../cli/lib.sh
source "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=mpi_env.sh
source "$(dirname "$0")/mpi_env.sh"

# mpi CODE DESCRIPTION -- NP ARGS...: mpirun -np NP posemb ARGS; its exit code must be CODE.
mpi() {
  local code="$1" what="$2" np="$4"
  shift 4
  timeout 300 "$mpiexec" "${mpi_flags[@]}" -np "$np" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$code" ]; then
    fail "$what: mpirun -np $np posemb $* exited $got, expected $code"
    sed 's/^/  stderr: /' "$tmp/err" | tail -n 8
  fi
}
same() {
  cmp -s "$1" "$2" || fail "$3: $1 and $2 differ"
}
# The number of lines posemb itself printed as errors (not mpirun's own notices).
errors_printed() {
  grep -c '^posemb: error:' "$tmp/err"
}
# The pid of rank R of the mpirun whose pid is M (its children carry OMPI_COMM_WORLD_RANK).
rank_pid() {
  local m="$1" r="$2" p
  for p in $(pgrep -P "$m"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$r"; then
      echo "$p"
      return
    fi
  done
}

model=(--d-model 16 --heads 2 --layers 2 --train-len 4 --alphabet 4 --micro-batch 2 --warmup 2)
tiny=("${model[@]}" --batch 8 --grad-clip 0.05 --quiet)

# 1. Data parallel = one process, byte for byte, every encoding (gradient clipping active).
for pe in learned learned-randomized sinusoidal rope none; do
  expect 0 "1 process $pe" -- train "${tiny[@]}" --pe "$pe" --steps 6 --out "$tmp/one-$pe"
  mpi 0 "2 ranks $pe" -- 2 train "${tiny[@]}" --pe "$pe" --steps 6 --out "$tmp/two-$pe"
  same "$tmp/one-$pe/checkpoint.safetensors" "$tmp/two-$pe/checkpoint.safetensors" \
    "$pe: 2 ranks against 1 process"
done
# Uneven shares (4 micro-batches on 3 ranks), more ranks than micro-batches (2 on 3), threads.
mpi 0 "3 ranks" -- 3 train "${tiny[@]}" --pe rope --steps 6 --threads 1 --out "$tmp/three"
same "$tmp/one-rope/checkpoint.safetensors" "$tmp/three/checkpoint.safetensors" "3 ranks"
expect 0 "1 process, 2 micro-batches" -- train "${model[@]}" --batch 4 --steps 6 --quiet \
  --out "$tmp/b4"
mpi 0 "3 ranks, 2 micro-batches" -- 3 train "${model[@]}" --batch 4 --steps 6 --threads 2 \
  --quiet --out "$tmp/b4-3"
same "$tmp/b4/checkpoint.safetensors" "$tmp/b4-3/checkpoint.safetensors" "an idle rank"
# The same with every step clipped: the norm's squares relayed across 3 ranks, one idle.
expect 0 "1 process, 2 micro-batches, clipped" -- train "${model[@]}" --batch 4 --steps 6 \
  --grad-clip 0.05 --quiet --out "$tmp/b4c"
mpi 0 "3 ranks, 2 micro-batches, clipped" -- 3 train "${model[@]}" --batch 4 --steps 6 \
  --grad-clip 0.05 --threads 1 --quiet --out "$tmp/b4c-3"
same "$tmp/b4c/checkpoint.safetensors" "$tmp/b4c-3/checkpoint.safetensors" "an idle rank, clipped"
cmp -s "$tmp/b4/checkpoint.safetensors" "$tmp/b4c/checkpoint.safetensors" &&
  fail "--grad-clip 0.05 changed nothing: the clipped case is not clipped"
# Rank 0 alone prints.
mpi 0 "2 ranks, not quiet" -- 2 train "${model[@]}" --batch 8 --steps 3 --out "$tmp/loud"
[ "$(grep -c '^posemb train:' "$tmp/out")" -eq 1 ] || fail "the header is printed once"
contains out "data parallel: 2 ranks share 4 micro-batches" "the header names the ranks"

# 2. Resume under 2 ranks equals the uninterrupted run (1 process); and from 1 process to 2.
mpi 0 "2 ranks, stop" -- 2 train "${tiny[@]}" --steps 12 --stop-after 5 --out "$tmp/r2"
mpi 0 "2 ranks, resume" -- 2 train --resume "$tmp/r2/checkpoint.safetensors" --out "$tmp/r2" \
  --quiet
expect 0 "1 process, straight" -- train "${tiny[@]}" --steps 12 --out "$tmp/r1"
same "$tmp/r1/checkpoint.safetensors" "$tmp/r2/checkpoint.safetensors" "resume on 2 ranks"
expect 0 "1 process, stop" -- train "${tiny[@]}" --steps 12 --stop-after 7 --out "$tmp/r12"
mpi 0 "resume on 2 ranks" -- 2 train --resume "$tmp/r12/checkpoint.safetensors" \
  --out "$tmp/r12" --quiet
same "$tmp/r1/checkpoint.safetensors" "$tmp/r12/checkpoint.safetensors" "1 process then 2 ranks"

# 3. A sweep on 2 ranks writes the sequential results.csv (and results.json but for timings),
# the rope runs' zero-shot scaled evaluations included.
grid=(--pe learned,sinusoidal,rope --seeds 1:2 --task copy,reverse --train-len 3 --d-model 16
      --heads 2 --alphabet 4 --batch 8 --micro-batch 4 --steps 8 --warmup 2 --samples 8
      --eval-max 5 --rope-scaling none,ntk --rope-factor 2 --quiet)
expect 0 "sequential sweep" -- sweep "${grid[@]}" --threads 1 --out "$tmp/s1"
mpi 0 "2-rank sweep" -- 2 sweep "${grid[@]}" --threads 1 --out "$tmp/s2"
same "$tmp/s1/results.csv" "$tmp/s2/results.csv" "sweep results.csv"
# The 4 rope runs are reported once per scaling (none, ntk x2): 16 entries.
[ "$(wc -l <"$tmp/s1/results.csv")" -eq 81 ] || fail "16 entries x 5 lengths + header"
strip='import json,sys
r=json.load(open(sys.argv[1]))
for x in r["runs"]: x.pop("train_seconds"); ranks=x.pop("rank"); print(json.dumps(x))
print(sorted({x["rank"] for x in json.load(open(sys.argv[1]))["runs"]}))'
/usr/bin/python3 -c "$strip" "$tmp/s1/results.json" >"$tmp/j1"
/usr/bin/python3 -c "$strip" "$tmp/s2/results.json" >"$tmp/j2"
[ "$(tail -n 1 "$tmp/j2")" = "[0, 1]" ] || fail "both ranks ran some of the sweep: $(tail -n 1 "$tmp/j2")"
diff -q <(head -n -1 "$tmp/j1") <(head -n -1 "$tmp/j2") >/dev/null ||
  fail "sweep results.json differ beyond timings and ranks"
for f in length_generalization_task_copy.svg length_generalization_task_reverse.svg; do
  [ -s "$tmp/s2/$f" ] || fail "the 2-rank sweep wrote no $f"
done

# 4. Failures: one message, from rank 0, and the job ends.
printf 'not a checkpoint' >"$tmp/bad.safetensors"
# Bad input on rank 1 only (MPMD: rank 1 gets other arguments).
timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" train --resume "$tmp/r1/checkpoint.safetensors" \
  --out "$tmp/f1" --quiet : -np 1 "$bin" train --resume "$tmp/bad.safetensors" --out "$tmp/f1" \
  --quiet >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" -eq 1 ] || fail "a bad checkpoint on rank 1: exit $code, expected 1"
contains err "posemb: error: train: reading the checkpoint: rank 1 of 2 failed: " \
  "rank 0 names rank 1 and its error"
[ "$(errors_printed)" -eq 1 ] || fail "a bad checkpoint on rank 1: $(errors_printed) error lines"
# Other settings on rank 1.
timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" train "${tiny[@]}" --steps 2 --out "$tmp/f2" \
  : -np 1 "$bin" train "${tiny[@]}" --steps 2 --lr 0.5 --out "$tmp/f2" >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" -eq 1 ] || fail "other settings on rank 1: exit $code, expected 1"
contains err "do not hold the same model: rank(s) 1 of 2" "rank 0 says the ranks differ"
[ "$(errors_printed)" -eq 1 ] || fail "other settings on rank 1: $(errors_printed) error lines"
# A non-finite loss, on every rank at once: one message; the last checkpoint stays.
mpi 1 "exploding lr" -- 2 train "${model[@]}" --batch 8 --quiet --lr 1e30 --grad-clip 0 --steps 10 \
  --checkpoint-every 1 --out "$tmp/nan"
contains err "loss is" "the error says the loss is not finite"
[ "$(errors_printed)" -eq 1 ] || fail "exploding lr: $(errors_printed) error lines"
# (its parameters are finite, but overflow float in the forward: eval stops on the logits)
expect 1 "the last good checkpoint" -- eval --checkpoint "$tmp/nan/checkpoint.safetensors" \
  --lengths 1:2 --samples 4
contains err "logits are infinite or NaN" "eval says the logits are not finite"
# Usage errors exit 2 under mpirun too.
mpi 2 "sweep with a bad list value" -- 2 sweep --pe learned,banana --out "$tmp/u"

# A long run (the rank's pids are mpirun's children), waiting for its first checkpoint.
long_run() {
  rm -rf "$tmp/long"
  "$mpiexec" "${mpi_flags[@]}" -np 2 "$bin" train "${tiny[@]}" --steps 100000000 \
    --checkpoint-every 20 --out "$tmp/long" "$@" >"$tmp/out" 2>"$tmp/err" &
  job=$!
  for _ in $(seq 600); do
    [ -f "$tmp/long/checkpoint.safetensors" ] && return 0
    sleep 0.1
  done
  fail "the long run wrote no checkpoint in 60 s"
  kill "$job"
  return 1
}
# Waits at most $1 seconds for the job to end (longer is a hang); its exit code in $code.
bounded_wait() {
  for _ in $(seq $(($1 * 10))); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$job" 2>/dev/null; then
    fail "the job still runs after $1 s (a hang)"
    kill -9 "$job"
  fi
  wait "$job"
  code=$?
}

# 5. A rank killed mid-run: the job ends (mpirun stops the others) with an error naming it.
if long_run; then
  victim=$(rank_pid "$job" 1)
  [ -n "$victim" ] || fail "no rank 1 under mpirun $job"
  kill -9 "$victim"
  bounded_wait 30
  [ "$code" -ne 0 ] || fail "a killed rank: the job exited 0"
  contains err "rank 1" "mpirun names the killed rank"
  expect 0 "the checkpoint after a kill" -- eval \
    --checkpoint "$tmp/long/checkpoint.safetensors" --lengths 1:2 --samples 4
fi

# 6. A rank that stops answering (SIGSTOP): rank 0 gives up after --peer-timeout and ends the
# job with its own message.
if long_run --peer-timeout 3; then
  victim=$(rank_pid "$job" 1)
  kill -STOP "$victim"
  bounded_wait 60
  kill -9 "$victim" 2>/dev/null  # mpirun leaves a stopped process behind
  [ "$code" -ne 0 ] || fail "a stopped rank: the job exited 0"
  contains err "posemb: error: rank 0 of 2: no answer from the other ranks within 3 s" \
    "rank 0 reports the silent rank"
fi

finish mpi_cli
