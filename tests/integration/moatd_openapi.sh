#!/bin/bash
# moatd's API description (docs/api/openapi.yaml), as moatd serves it at
# /v1/openapi.json, passes a real OpenAPI 3.1 validator (@redocly/cli lint,
# installed from npm into the build folder on first use), and names every
# route the router has.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

MOATD="$(dirname "$MOAT")/moatd"
SOCK="$MOAT_TDIR/moatd.sock"
"$MOATD" --socket "$SOCK" --state-dir "$MOAT_TDIR/state" 2>moatd.err &
DPID=$!
trap 'kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null' EXIT
for _ in $(seq 100); do curl -s --unix-socket "$SOCK" http://m/v1/health >/dev/null 2>&1 && break; sleep 0.1; done
curl -sS --unix-socket "$SOCK" -o openapi.json http://m/v1/openapi.json
t_eq "GET /v1/openapi.json: OpenAPI 3.1" 3.1.0 "$(json openapi.json 'j["openapi"]')"
t_eq "every route of the router is described" \
	"/metrics /v1/approvals /v1/approvals/{approval} /v1/health /v1/judge /v1/openapi.json /v1/runs /v1/sessions /v1/sessions/{id} /v1/sessions/{id}/audit /v1/sessions/{id}/exec /v1/sessions/{id}/exec/{exec} /v1/sessions/{id}/files" \
	"$(json openapi.json '" ".join(sorted(j["paths"]))')"

# The validator: from npm, installed by tests/run into the build folder
# (never the repository).
REDOCLY="${MOAT_NPM_DIR:-/nonexistent}/node_modules/.bin/redocly"
if [ -x "$REDOCLY" ]; then
	out=$("$REDOCLY" lint openapi.json 2>&1)
	rc=$?
	t_eq "@redocly/cli lint: the served description is valid" 0 "$rc"
	[ "$rc" = 0 ] || printf '%s\n' "$out" | grep -E 'error|Error' | head -20 | sed 's/^/#   /'
	# The validator can fail: a broken copy must be refused.
	python3 -c '
import json
j=json.load(open("openapi.json"))
j["paths"]["/v1/runs"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]={"$ref":"#/components/schemas/NoSuch"}
json.dump(j,open("broken.json","w"))'
	"$REDOCLY" lint broken.json >/dev/null 2>&1
	t_eq "@redocly/cli lint refuses a description with a dangling reference" 1 "$?"
else
	t_skip "@redocly/cli lint" "npm or the registry is not reachable (tests/run installs @redocly/cli@2 into BUILD/npm)"
fi
kill "$DPID"
wait "$DPID"
t_eq "moatd ends cleanly on SIGTERM" 0 "$?"

# moatd under a sanitizer build reports to its stderr: nothing there.
t_nomatch "moatd: no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" "$(cat "$MOAT_TDIR"/*.err 2>/dev/null)"
