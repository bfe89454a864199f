#!/usr/bin/env bash
# The README's two commands:
#   ./run.sh main [dslbench pipeline options]   install everything, then run the whole pipeline on
#                                               the embedded default (bundled tasks, local model)
#   ./run.sh test [pytest options]              install everything, then run the tests
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$ROOT/install.sh"
VENV="${DSLBENCH_VENV:-$ROOT/.venv}"
if [ "$VENV" = "system" ]; then BIN=""; else BIN="$VENV/bin/"; fi
cd "$ROOT"
cmd="${1:-}"; shift || true
case "$cmd" in
  main)
    "${BIN}dslbench" doctor
    "${BIN}dslbench" pipeline "$@"
    ;;
  test)
    "${BIN}python" -m pytest "$ROOT/tests" "$@"
    ;;
  *)
    echo "usage: ./run.sh main|test [options]" >&2; exit 2 ;;
esac
