#!/usr/bin/env bash
# Idempotent: prepare sysmlpy's parser prediction cache (read-only in the sandbox) from our gold programs.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"${PY:-python3}" "$HERE/warm_cache.py" >/dev/null
