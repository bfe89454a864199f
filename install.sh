#!/usr/bin/env bash
# The one install script. The README's two commands, .ci/run, binder/postBuild and the Dockerfile
# all call it. It installs Debian packages, the Python environment (exact pins) and the per-DSL
# requirements discovered under toolchains/*/ (requirements.txt, apt.txt, package.json with its
# package-lock.json, install.sh hooks); it is idempotent and fast when nothing changed.
#
#   DSLBENCH_VENV    where the Python environment lives (default: .venv in the repository;
#                    "system" installs into the current interpreter, as on Binder and in Docker)
#   DSLBENCH_WHEELS  cache of locally built wheels (default: ~/.cache/dslbench/wheels), so that
#                    llama-cpp-python (a source build of ~8 minutes) compiles once per machine
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
reqs=("$ROOT/requirements.txt")
for f in "$ROOT"/toolchains/*/requirements.txt; do [ -f "$f" ] && reqs+=("$f"); done
digest=$(cat "$0" "${reqs[@]}" "$ROOT/lib/pyproject.toml" | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ]; then
  say "Python environment up to date ($PY)"
else
  "$PY" -m pip install -q --upgrade pip wheel setuptools
  # llama-cpp-python ships only as source: build its wheel once per machine and keep it.
  llama=$(grep -h '^llama-cpp-python==' "${reqs[@]}" | head -1)
  mkdir -p "$WHEELS"
  # On x86-64 the build targets AVX2 (x86-64-v3), not the build machine's own CPU: a native build on a
  # CPU that reports AMX tiles crashed in ggml's AMX kernels (general protection fault in
  # libggml-cpu.so) where the VM does not grant AMX state; a portable wheel also runs on other hosts.
  if [ "$(uname -m)" = x86_64 ]; then
    export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    LLAMA_WHEELS="$WHEELS/llama-x86-64-v3"
  else
    LLAMA_WHEELS="$WHEELS/llama-native"
  fi
  mkdir -p "$LLAMA_WHEELS"
  # (DSLBENCH_LLAMA_PREINSTALLED: Binder's environment.yml built it already; a second build would
  # double the longest step)
  if ! ls "$LLAMA_WHEELS"/llama_cpp_python-"${llama#*==}"-*.whl >/dev/null 2>&1 &&
     ! { [ -n "${DSLBENCH_LLAMA_PREINSTALLED:-}" ] &&
         "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('llama_cpp_python') != '${llama#*==}')" 2>/dev/null; }; then
    say "building $llama (once per machine, several minutes on 2 cores)"
    "$PY" -m pip wheel -q --no-cache-dir --no-deps -w "$LLAMA_WHEELS" "$llama"   # not pip's cached build (other flags)
    # replace a build made by an earlier install (same version number, other CPU flags)
    "$PY" -m pip install -q --force-reinstall --no-deps "$LLAMA_WHEELS"/llama_cpp_python-"${llama#*==}"-*.whl
  fi
  req_args=(); for f in "${reqs[@]}"; do req_args+=(-r "$f"); done
  say "pip install ${reqs[*]##"$ROOT"/}"
  "$PY" -m pip install -q --find-links "$LLAMA_WHEELS" --find-links "$WHEELS" "${req_args[@]}" -e "$ROOT/lib"
  mkdir -p "$(dirname "$STAMP")"
  echo "$digest" > "$STAMP"
fi

# --- per-DSL install hooks (e.g. a side environment a toolchain needs) ------------------------------
# toolchains/<dsl>/install.sh runs with ROOT, PY (the environment's python) and WHEELS set; it must be
# idempotent and must only detect, never download, toolchains that registries do not carry.
for hook in "$ROOT"/toolchains/*/install.sh; do
  [ -f "$hook" ] || continue
  say "hook: $(basename "$(dirname "$hook")")"
  ROOT="$ROOT" PY="$PY" WHEELS="$WHEELS" bash "$hook"
done

# --- npm packages: DSLs that declare them, and the book's vendored JavaScript --------------------
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
say "done"
