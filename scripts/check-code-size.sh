#!/usr/bin/env bash
# Checks the size limits of lab/, tools/ and src/ (see check-code-size.py).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/check-code-size.py"
