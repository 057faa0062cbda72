#!/usr/bin/env bash
# A build without MPI (POSEMB_WITH_MPI=OFF): train and sweep run in one process, and refuse to
# run as one of several processes of an MPI job (each would train alone and write the same
# files), naming the cause.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

tiny=(--d-model 16 --heads 2 --train-len 3 --alphabet 4 --batch 4 --steps 2 --warmup 1 --quiet)
expect 0 "train alone" -- train "${tiny[@]}" --out "$tmp/a"
OMPI_COMM_WORLD_SIZE=1 expect 0 "train as the only rank" -- train "${tiny[@]}" --out "$tmp/b"
cmp -s "$tmp/a/checkpoint.safetensors" "$tmp/b/checkpoint.safetensors" || fail "one rank differs"
OMPI_COMM_WORLD_SIZE=2 expect 1 "train as one of 2 ranks" -- train "${tiny[@]}" --out "$tmp/c"
contains err "this build of posemb has no MPI" "the message names the cause"
one_line "train as one of 2 ranks"
[ ! -e "$tmp/c" ] || fail "nothing is written"
PMI_SIZE=4 expect 1 "sweep as one of 4 ranks" -- sweep "${tiny[@]}" --out "$tmp/d"
contains err "one of 4 processes" "the message gives the number"

finish no_mpi_cli
