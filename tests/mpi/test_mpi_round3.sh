#!/usr/bin/env bash
# MPMD jobs whose ranks disagree (issue 26, item 7): every collective command compares its
# settings across ranks before working, and no rank allocates what a peer's message announces
# unchecked. Each job ends within its timeout with exit 1 and one posemb error line naming the
# ranks, never exit 0 with another rank's results, a raw library message or std::bad_alloc.
#   test_mpi_round3.sh POSEMB MPIEXEC
set -u
bin="$1"
mpiexec="$2"
# shellcheck source=../cli/lib.sh
source "$(dirname "$0")/../cli/lib.sh"
# shellcheck source=mpi_env.sh
source "$(dirname "$0")/mpi_env.sh"

# mpmd DESCRIPTION LINES -- ARGS0 ::: ARGS1: rank 0 runs posemb ARGS0, rank 1 posemb ARGS1; the
# job must exit 1 within 120 s with 1 to LINES "posemb: error:" lines (two commands that differ
# may each report their side) and no bad_alloc or raw library message.
mpmd() {
  local what="$1" lines="$2"
  shift 3
  local a=() b=() side=0
  for x in "$@"; do
    if [ "$x" = ":::" ]; then side=1; elif [ "$side" -eq 0 ]; then a+=("$x"); else b+=("$x"); fi
  done
  timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${a[@]}" : -np 1 "$bin" "${b[@]}" \
    >"$tmp/out" 2>"$tmp/err"
  local code=$?
  [ "$code" -eq 1 ] || { fail "$what: exit $code, expected 1"; sed 's/^/  stderr: /' "$tmp/err" | tail -n 6; }
  local n
  n=$(grep -c '^posemb: error:' "$tmp/err")
  { [ "$n" -ge 1 ] && [ "$n" -le "$lines" ]; } || fail "$what: $n posemb error lines, expected 1 to $lines"
  if grep -q "bad_alloc\|_M_range_check\|vector::" "$tmp/err"; then fail "$what: a raw library message"; fi
}

base=(--pe learned --task copy --train-len 3 --d-model 16 --heads 2 --alphabet 4 --batch 4
      --micro-batch 2 --steps 2 --warmup 1 --samples 4 --eval-max 4 --quiet --threads 1)
grid=("${base[@]}" --seeds 1)
mpmd "sweep, another --lr on rank 1" 1 -- sweep "${grid[@]}" --lr 0.003 --out "$tmp/a" ::: \
  sweep "${grid[@]}" --lr 0.5 --out "$tmp/a"
contains err "sweep: the ranks were not given the same settings: rank(s) 1 of 2 differ from rank 0" \
  "the ranks' settings are compared"
[ -e "$tmp/a/results.csv" ] && fail "sweep with other settings wrote results.csv"
mpmd "sweep, another grid on rank 1" 1 -- sweep "${grid[@]}" --out "$tmp/b" ::: \
  sweep "${base[@]}" --seeds 1:3 --out "$tmp/b"
contains err "not given the same settings" "different grids are compared"
model=(--d-model 16 --heads 2 --layers 1 --train-len 3 --alphabet 4 --batch 4 --micro-batch 2
       --steps 2 --warmup 1 --quiet --threads 1)
mpmd "train on rank 0, sweep on rank 1" 2 -- train "${model[@]}" --out "$tmp/c" ::: \
  sweep "${grid[@]}" --out "$tmp/d"
mpmd "sweep on rank 0, train on rank 1" 2 -- sweep "${grid[@]}" --out "$tmp/e" ::: \
  train "${model[@]}" --out "$tmp/f"

# A process of the job that never starts MPI (another program; a posemb command without MPI):
# MPI_Init has no timeout, so --peer-timeout bounds the wait for the job to start. With `sleep`
# the posemb rank's watchdog must end the job; a program that exits without starting MPI may
# instead be noticed by mpirun first (Open MPI sometimes does): either way the job ends, exit 1,
# well within the bound, and nothing is written.
for other in "sleep 60" "$bin inspect --help"; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" sweep "${grid[@]}" --peer-timeout 3 \
    --out "$tmp/g" : -np 1 $other >/dev/null 2>"$tmp/err"
  code=$?
  took=$(($(date +%s) - start))
  [ "$code" -eq 1 ] || fail "a rank beside '$other' that never starts MPI: exit $code, expected 1"
  [ "$took" -lt 60 ] || fail "a rank beside '$other' waited ${took} s, past --peer-timeout 3"
  watchdog="posemb: error: the MPI job did not start within --peer-timeout 3 s"
  if [ "$other" = "sleep 60" ] || ! grep -q "did not call \"init\" before exiting" "$tmp/err"; then
    contains err "$watchdog" "the wait for MPI to start beside '$other' is bounded"
  fi
  [ -e "$tmp/g" ] && fail "a job that never started wrote $tmp/g"
done
finish test_mpi_round3
