#!/bin/bash
# moat mcp serve (docs/mcp.md), driven by the official MCP TypeScript SDK
# client from npm (tests/integration/mcp_client.mjs): tools listed, Python
# and JavaScript run, a session round trip, a timeout, an OOM, schema and
# policy violations, progress, cancellation; and bad input on its stdio
# (mcp_raw.py): truncated JSON, a batch of 10,000, a 100 MB message,
# invalid UTF-8, unknown methods, a reused id.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

python3 "$MOAT_SRC/integration/mcp_raw.py" "$MOAT" "[$MOAT_MODE] $T_PREFIX: raw" ||
	t_fail "mcp_raw.py exited $?"

SDK="$MOAT_STAGE/npm/node_modules/@modelcontextprotocol/sdk"
if [ ! -f "$SDK/package.json" ]; then
	t_skip "the SDK client drives moat mcp serve" "$(cat "$MOAT_STAGE/npm/why" 2>/dev/null || echo "no npm packages staged")"
	exit 0
fi
# Long enough that only a cancellation ends the cancelled run in time.
cat >policy.yaml <<'YAML'
version: 1
limits:
  wall: 120s
YAML
timeout 600 node "$MOAT_SRC/integration/mcp_client.mjs" "$SDK" "$MOAT" "$MOAT_TDIR/policy.yaml" \
	"[$MOAT_MODE] $T_PREFIX: sdk $(node -p "require('$SDK/package.json').version")" 2>client.err ||
	t_fail "the SDK client exited $?" "$(tail -20 client.err)"
