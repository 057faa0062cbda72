#!/usr/bin/env bash
# run.sh MPIEXEC NP PROGRAM [ARGS...]: PROGRAM on NP ranks, with the tests' Open MPI settings
# (mpi_env.sh), ended after 10 minutes if it hangs.
set -eu
mpiexec="$1"
np="$2"
shift 2
# shellcheck source=mpi_env.sh
source "$(dirname "$0")/mpi_env.sh"
exec timeout 600 "$mpiexec" "${mpi_flags[@]}" -np "$np" "$@"
