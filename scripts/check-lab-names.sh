#!/usr/bin/env bash
# Checks that encoding names and lab checkpoint keys are spelled in one place (see
# check-lab-names.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/check-lab-names.py"
