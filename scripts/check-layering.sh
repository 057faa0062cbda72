#!/usr/bin/env bash
# Checks the include layers of docs/architecture.md (see check-layering.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/check-layering.py"
