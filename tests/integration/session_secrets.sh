#!/bin/bash
# Secrets in a session: the keeper reads the policy's secrets as moat run
# does (the value read before the sandbox's init is cloned, into memory the
# init does not inherit, and wiped from the keeper's environment), the
# sandbox sees placeholders, and the gateway injects the value into
# terminated HTTPS requests to the bound host, against an upstream this
# script starts (in a network namespace it makes, as root).
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
SCAN="$MOAT_SRC/integration/secret_scan.py"
N="ss$$"
mask() { python3 -c 'import sys; print(bytes(b ^ 0x5a for b in sys.argv[1].encode()).hex())' "$1"; }

upstream_certs api.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-ssec-$$" 2>/dev/null; then
		NS="moat-ssec-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the session secrets tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports.json --keep-alive &
UPSTREAM=$!
cleanup() {
	"$MOAT" session rm "$N" >/dev/null 2>&1
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
P=$(json ports.json 'j["port"]')
touch up.log

GH_VALUE="ghp_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
CTL_VALUE="ctl_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat >policy.yaml <<EOF
version: 1
network:
  allow:
    - {host: api.example.test, ports: [$P]}
  allow_private: [127.0.0.2/32]
  hosts: {api.example.test: 127.0.0.2}
secrets:
  - name: github
    from: env:HOST_GH
    env: GITHUB_TOKEN
    inject: {host: api.example.test, paths: ["/repos/myorg/*"]}
EOF
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
out=$(HOST_GH="$GH_VALUE" "${IN[@]}" "$MOAT" session create --name "$N" --json --policy policy.yaml \
	--audit "$MOAT_TDIR/audit.jsonl" --ro "$SCAN:/scan.py" 2>err)
t_eq "create with a secret: exit 0" "0 " "$? $(cat err)"
kpid=$(printf '%s' "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["keeper_pid"])')

out=$("$MOAT" session exec "$N" -- sh -c 'echo "$GITHUB_TOKEN"' 2>&1)
t_match "exec: the sandbox holds a placeholder" '^moat_ph_github_[0-9a-f]{32}' "$out"
out=$("$MOAT" session exec "$N" -- sh -c \
	"curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" https://api.example.test:$P/repos/myorg/s1; curl -sS -H \"Authorization: Bearer \$GITHUB_TOKEN\" https://api.example.test:$P/other" 2>&1)
t_match "exec: curl through the session's gateway" "tls-upstream-ok GET /repos/myorg/s1" "$out"
t_match "exec: a path the secret is not bound to is refused" "is not sent with GET /other" "$out"
t_eq "the upstream got the value on the bound path only" "Bearer $GH_VALUE|" "$(python3 -c 'import json
a = {}
for l in open("up.log"):
    r = json.loads(l)
    a[r["path"]] = next((v for k, v in r["headers"] if k.lower() == "authorization"), "")
print(a.get("/repos/myorg/s1", "-") + "|" + a.get("/other", ""))')"

# No value in the sandbox: every process's environment, command line and
# readable memory, scanned from inside; a control value the scanning shell
# holds is found, so the scan can fail.
out=$("$MOAT" session exec "$N" --env "CTL=$CTL_VALUE" -- sh -c \
	"python3 /scan.py --all --needle $(mask "$GH_VALUE") --needle $(mask "$CTL_VALUE")" 2>&1)
# A sanitizer's runtime copies the environment block before main runs, and
# the init is a copy of the keeper: in such a build the init (pid 1 inside)
# is not looked at for the value (secrets.sh does the same).
printf '%s' "$out" >inside.json
t_eq "scan inside: the init and the shell, the value nowhere, the control found" "init [] found" "$(python3 - "${MOAT_SANITIZED:-}" <<'EOF'
import json, sys
j = json.load(open("inside.json"))
hits = [(p, h["needle"]) for p, r in j.items() for h in r["hits"]]
value = sorted({p for p, n in hits if n == 0 and not (sys.argv[1] and p == "1")})
print("init" if "1" in j and len(j) >= 2 else sorted(j), value, "found" if any(n == 1 for p, n in hits) else "not found")
EOF
)"
if is_root && [ -z "${MOAT_SANITIZED:-}" ]; then
	python3 "$SCAN" --tree "$kpid" --needle "$(mask "$GH_VALUE")" >outside.json 2>outside.err
	t_eq "scan from the host, as root: no sandbox process holds the value" "[]" "$(python3 -c 'import json
j = json.load(open("outside.json"))
print(sorted(p for p, r in j.items() if r["hits"]))')"
fi
t_eq "the keeper's own environment no longer holds the value" 0 \
	"$(tr '\0' '\n' </proc/"$kpid"/environ 2>/dev/null | grep -c "$GH_VALUE")"
t_eq "no value in the session's audit log" "" "$(grep -l "$GH_VALUE" audit.jsonl)"
t_match "the injection is in the audit log" '"secret":"github"' "$(grep /repos/myorg/s1 audit.jsonl)"
