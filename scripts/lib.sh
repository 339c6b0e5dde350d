# Shared shell helpers for the project's scripts (sourced, not run).
# shellcheck shell=bash
DN2_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Downloads and ccache live outside the work tree so that a fresh clone on the
# same machine (CI) reuses them; override with DN2_CACHE.
DN2_CACHE=${DN2_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dimmnet2}
QEMU_VERSION=10.0.2
export DN2_TOP DN2_CACHE QEMU_VERSION

log() { printf '[dimmnet2] %s\n' "$*" >&2; }
die() { printf '[dimmnet2] error: %s\n' "$*" >&2; exit 1; }
