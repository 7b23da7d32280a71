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

# A session's network request held by its approval gate, surfaced to the
# client (elicitation or progress, and the tool result).
timeout 600 node "$MOAT_SRC/integration/mcp_serve_approve.mjs" "$SDK" "$MOAT" "$MOAT_TDIR" "[$MOAT_MODE] $T_PREFIX: approve" 2>approve.err ||
	t_fail "the SDK client (approvals) exited $?" "$(tail -20 approve.err)"

# --- Streamable HTTP on loopback, with a bearer token.
echo "mcp-test-token-$$-$RANDOM$RANDOM" >token
TOKEN=$(cat token)
"$MOAT" mcp serve --http 127.0.0.1:0 --token-file token --policy policy.yaml 2>http.err &
HPID=$!
for _ in $(seq 100); do grep -q 'listening on' http.err && break; sleep 0.1; done
PORT=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*|\1|p' http.err)
t_match "http: listening on the port the kernel gave" '^[0-9]+$' "$PORT"
t_nomatch "http: a token from a file is not printed" "$TOKEN" "$(cat http.err)"
URL="http://127.0.0.1:$PORT/mcp"
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
code() { curl -s -o body -w '%{http_code}' "$@"; }
t_eq "http: no token: 401" 401 "$(code "${H[@]}" "$URL" -d "$INIT")"
t_eq "http: a wrong token: 401" 401 "$(code "${H[@]}" -H "Authorization: Bearer x$TOKEN" "$URL" -d "$INIT")"
A=(-H "Authorization: Bearer $TOKEN")
t_eq "http: a foreign Origin (DNS rebinding): 403" 403 "$(code "${H[@]}" "${A[@]}" -H 'Origin: http://evil.example' "$URL" -d "$INIT")"
t_eq "http: GET (no server stream): 405" 405 "$(code "${A[@]}" "$URL")"
t_eq "http: another path: 404" 404 "$(code "${H[@]}" "${A[@]}" "http://127.0.0.1:$PORT/other" -d "$INIT")"
t_eq "http: no session header: 400" 400 "$(code "${H[@]}" "${A[@]}" "$URL" -d '{"jsonrpc":"2.0","id":2,"method":"ping"}')"
t_eq "http: an unknown session: 404" 404 "$(code "${H[@]}" "${A[@]}" -H 'Mcp-Session-Id: 00000000000000000000000000000000' "$URL" -d '{"jsonrpc":"2.0","id":2,"method":"ping"}')"
t_eq "http: truncated JSON: 400" 400 "$(code "${H[@]}" "${A[@]}" "$URL" -d '{"jsonrpc":"2.0","id":2,"meth')"
t_match "http: truncated JSON: -32700" '"code":-32700' "$(cat body)"
head -c $((100 << 20)) /dev/zero | tr '\0' 'a' >big
t_match "http: a 100 MB body is refused" '^(413|400)$' "$(code "${H[@]}" "${A[@]}" "$URL" --data-binary @big)"
rm -f big
t_eq "http: a wrong Content-Type: 415" 415 "$(code -H 'Content-Type: text/plain' -H 'Accept: application/json, text/event-stream' "${A[@]}" "$URL" -d "$INIT")"
t_check "http: the server is up after the bad requests" kill -0 "$HPID"
MCP_URL="$URL" MCP_TOKEN="$TOKEN" timeout 600 node "$MOAT_SRC/integration/mcp_client.mjs" "$SDK" "$MOAT" "$MOAT_TDIR/policy.yaml" \
	"[$MOAT_MODE] $T_PREFIX: http sdk" 2>client-http.err ||
	t_fail "the SDK client over HTTP exited $?" "$(tail -20 client-http.err)" "server: $(grep -A12 "ERROR: AddressSanitizer" http.err | head -14)"
# Clients that never DELETE their session: past 16, the one idle the
# longest is ended to make room (its client gets 404), unless it holds a
# sandbox session.
init_session() { # prints the new session's id
	curl -s -D - -o /dev/null "${H[@]}" "${A[@]}" "$URL" -d "$INIT" | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p'
}
post() { code "${H[@]}" "${A[@]}" -H "Mcp-Session-Id: $1" "$URL" -d "$2"; }
KEEP=$(init_session)
t_eq "http: a session that creates a sandbox session" 200 \
	"$(post "$KEEP" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_create","arguments":{}}}')"
t_match "http: ... gets one" '"session":' "$(cat body)"
IDLE=$(init_session)
for _ in $(seq 16); do init_session >/dev/null; done
t_eq "http: past 16 sessions, the one idle the longest is ended (404)" 404 \
	"$(post "$IDLE" '{"jsonrpc":"2.0","id":3,"method":"ping"}')"
t_eq "http: ... but not one holding a sandbox session" 200 "$(post "$KEEP" '{"jsonrpc":"2.0","id":3,"method":"ping"}')"
t_match "http: ... which still answers" '"result":\{\}' "$(cat body)"
kill "$HPID"
wait "$HPID"
t_eq "http: SIGTERM ends the server cleanly" 0 "$?"
