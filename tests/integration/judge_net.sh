#!/bin/bash
# moat judge with egress: each case's sandbox gets the gateway the engine
# builds from the policy, the same as moat run's. One case fetches from an
# upstream this script starts on loopback, which the policy allows; another
# asks for a host the policy does not name and gets the gateway's refusal.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# As root, the upstream and moat run in a network namespace made here (see
# net_proxy.sh for why nsenter and not `ip netns exec`).
NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-jnt-$$" 2>/dev/null; then
		NS="moat-jnt-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_skip "network namespace for the judge egress tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/net_upstream.py" --up 127.0.0.2:0 --ports ports.json &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
UP=$(json ports.json 'j["up"]')

# The submission: reads a URL on stdin, prints the body or the HTTP status.
cat >fetch.py <<'PY'
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.stdin.read().strip(), timeout=20).read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code)
PY
python3 - "$UP" >cases.jsonl <<'PY'
import json, sys
up = sys.argv[1]
print(json.dumps({"name": "allowed", "stdin": f"http://up.test:{up}/\n", "expected_stdout": "upstream-ok\n"}))
print(json.dumps({"name": "refused", "stdin": "http://api.evil.test/\n", "expected_stdout": "403\n"}))
PY
verdicts() {
	python3 -c 'import json,sys
print(" ".join(json.loads(l)["verdict"] + ":" + json.loads(l)["detail"] for l in open(sys.argv[1]) if "summary" not in json.loads(l)))' "$1"
}
judge() { # OUTFILE ARGS...
	local f="$1"
	shift
	"${IN[@]}" "$MOAT" judge "$@" >"$f" 2>"$MOAT_TDIR/.err" && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# The agent profile, the upstream allowed by flags folded into it.
judge agent.out --profile agent --allow-host "up.test:$UP" --allow-private 127.0.0.2/32 \
	--net-host up.test=127.0.0.2 --net-log "$MOAT_TDIR/net.jsonl" --tests cases.jsonl \
	--source fetch.py
t_eq "judge --profile agent: exit 0" 0 "$RC"
t_eq "judge --profile agent: the allowed fetch passes, the other is refused by the gateway" \
	"pass: pass:" "$(verdicts agent.out)"
t_nomatch "judge --profile agent: no setup error" "setup_error|gateway configuration" "$(cat agent.out) $ERR"
t_eq "judge --profile agent: the gateway's decisions reach --net-log" "allow deny" \
	"$(python3 -c 'import json,sys
print(" ".join(sorted(json.loads(l)["decision"] for l in open(sys.argv[1]) if json.loads(l)["type"] == "net.request")))' "$MOAT_TDIR/net.jsonl")"

# A policy file that names the upstream itself.
cat >judge-net.yaml <<YAML
version: 1
network:
  mode: proxy
  allow:
    - host: up.test
      ports: [$UP]
  allow_private: [127.0.0.2/32]
  hosts: {up.test: 127.0.0.2}
YAML
judge policy.out --policy judge-net.yaml --tests cases.jsonl --source fetch.py
t_eq "judge --policy with network.allow: exit 0" 0 "$RC"
t_eq "judge --policy: allowed fetch passes, the other is refused" "pass: pass:" "$(verdicts policy.out)"

# Without the allowance the same fetch is refused, so the case fails.
judge none.out --profile agent --tests cases.jsonl --source fetch.py
t_eq "judge --profile agent, nothing allowed: exit 1" 1 "$RC"
t_match "judge --profile agent, nothing allowed: the fetch is refused" '^wrong_answer:.*403' "$(verdicts none.out)"
