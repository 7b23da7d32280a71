#!/bin/bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance,
# staged by tests/integration/mcp-conformance-npm with the Node.js 22 it
# needs) against moat mcp serve --http, through a loopback proxy that adds
# the bearer token (the suite sends none). The scenarios moat fails by
# design (fixture tools, prompts, resources: mcp_conformance_baseline.yml)
# are the suite's expected failures; every other scenario must pass, and a
# listed one that passes fails the run too (the suite's stale-baseline
# check). Then moat mcp wrap: the suite takes a URL and wrap speaks stdio,
# so a front made of the SDK's own transports (mcp_stdio_bridge.mjs) serves
# the reference server-everything over HTTP, once directly and once
# wrapped (sandboxed, relayed): every scenario must end the same both ways.
# docs/mcp.md records the counts.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

CONF="$MOAT_STAGE/conformance"
if [ ! -x "$CONF/node" ] || [ ! -f "$CONF/suite/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
	t_skip "the conformance suite against moat mcp serve --http" \
		"$(cat "$MOAT_STAGE/conformance.why" 2>/dev/null || echo "the suite is not staged")"
	exit 0
fi
NODE="$CONF/node"
SUITE="$CONF/suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"

echo "mcp-conformance-token-$$-$RANDOM$RANDOM" >token
"$MOAT" mcp serve --http 127.0.0.1:0 --token-file token 2>serve.err &
SPID=$!
for _ in $(seq 100); do grep -q 'listening on' serve.err && break; sleep 0.1; done
PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*|\1|p' serve.err)
"$NODE" "$MOAT_SRC/integration/mcp_auth_proxy.mjs" "$PORT" token >proxy.port 2>proxy.err &
PPID_=$!
for _ in $(seq 100); do [ -s proxy.port ] && break; sleep 0.1; done
PROXY=$(head -1 proxy.port)
t_match "the server and the proxy listen" '^[0-9]+ [0-9]+$' "$PORT $PROXY"

timeout 900 "$NODE" "$SUITE" server --url "http://127.0.0.1:$PROXY/mcp" \
	--expected-failures "$MOAT_SRC/integration/mcp_conformance_baseline.yml" -o results >suite.out 2>&1
rc=$?
if [ "$rc" = 0 ]; then
	t_ok "the suite passes but for the baseline's scenarios"
else
	t_fail "the suite passes but for the baseline's scenarios (exit $rc)" "$(sed -n '/SUMMARY/,$p' suite.out | tail -50)" \
		"server: $(tail -5 serve.err)"
fi
# Named, so that a scenario the suite stops running shows.
for s in server-initialize ping tools-list logging-set-level server-sse-multiple-streams dns-rebinding-protection; do
	t_check "scenario $s passes" grep -qF "✓ $s:" suite.out
done
expected=$(grep -c '^  - ' "$MOAT_SRC/integration/mcp_conformance_baseline.yml")
t_eq "the baseline's $expected scenarios fail as expected" "$expected" "$(grep -c '^  ~ ' suite.out)"
t_match "the counts (docs/mcp.md)" 'Total: 7 passed, 24 failed' "$(grep '^Total:' suite.out)"
t_check "the server is up after the suite" kill -0 "$SPID"
kill "$PPID_" "$SPID"
wait "$SPID"
t_eq "SIGTERM ends the server cleanly" 0 "$?"
wait "$PPID_" 2>/dev/null

# --- moat mcp wrap, against the same server unwrapped.
NPM="$MOAT_STAGE/npm/node_modules"
if [ ! -f "$NPM/@modelcontextprotocol/server-everything/package.json" ]; then
	t_skip "the conformance suite through moat mcp wrap" "$(cat "$MOAT_STAGE/npm/why" 2>/dev/null || echo "no npm packages staged")"
	exit 0
fi
cat >wrap.yaml <<YAML
version: 1
filesystem:
  read_only: ["$NPM:/srv/node_modules"]
network:
  mode: none
limits:
  wall: 10m
  memory: 1G
  pids: 256
YAML
EVERYTHING=@modelcontextprotocol/server-everything/dist/index.js
suite_through() { # NAME COMMAND...: the suite against COMMAND behind the bridge; the summary in NAME.sum
	local name="$1" bpid port
	shift
	"$NODE" "$MOAT_SRC/integration/mcp_stdio_bridge.mjs" "$NPM/@modelcontextprotocol/sdk" -- "$@" >"$name.port" 2>"$name.err" &
	bpid=$!
	for _ in $(seq 300); do [ -s "$name.port" ] && break; sleep 0.1; done
	port=$(head -1 "$name.port")
	timeout 900 "$NODE" "$SUITE" server --url "http://127.0.0.1:$port/mcp" -o "results-$name" >"$name.out" 2>&1
	kill "$bpid"
	wait "$bpid" 2>/dev/null
	sed -n '/=== SUMMARY ===/,$p' "$name.out" | grep -E '^[✓✗] |^Total:' >"$name.sum"
}
suite_through direct node "$NPM/$EVERYTHING" stdio
suite_through wrapped "$MOAT" mcp wrap --policy "$MOAT_TDIR/wrap.yaml" -- node "/srv/node_modules/$EVERYTHING" stdio
t_match "server-everything, direct: the suite ran (docs/mcp.md)" '^Total: 1[0-9] passed, [0-9]+ failed$' "$(tail -1 direct.sum)"
t_eq "server-everything through moat mcp wrap: every scenario ends as direct" "$(cat direct.sum)" "$(cat wrapped.sum)"
exit 0
