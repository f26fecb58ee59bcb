#!/usr/bin/env bash
# Thin wrapper: bash benchmarks/gpu_validate.sh --out-dir DIR [--device cpu --quick] [...]
# Runs benchmarks/gpu_validate.py with python3 (or $PYTHON); see benchmarks/README.md.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/gpu_validate.py" "$@"
