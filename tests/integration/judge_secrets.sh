#!/bin/bash
# Secrets in moat judge: each case's worker reads the policy's secrets
# itself (a fork that never held them), the case's sandbox sees a
# placeholder, the gateway injects the value into terminated HTTPS requests
# to the bound host (an upstream this script starts, in a network namespace
# it makes as root), the case's output is redacted, and the judge's own
# environment keeps the variable for the next worker.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
SCAN="$MOAT_SRC/integration/secret_scan.py"
mask() { python3 -c 'import sys; print(bytes(b ^ 0x5a for b in sys.argv[1].encode()).hex())' "$1"; }

upstream_certs api.example.test

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-jsec-$$" 2>/dev/null; then
		NS="moat-jsec-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_fail "network namespace for the judge secrets tests" "ip netns add failed"
	fi
fi
"${IN[@]}" python3 "$MOAT_SRC/integration/secret_upstream.py" --listen 127.0.0.2:0 --cert srv.pem --key srv.key \
	--log up.log --ports ports.json --keep-alive &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
P=$(json ports.json 'j["port"]')
touch up.log

GH_VALUE="ghp_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
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
# The program: fetches the path on its stdin with the placeholder, prints
# the answer; then prints the placeholder's shape, and (case "echo") the
# value itself were it ever to see it, which the redactor would mask.
cat >prog.py <<EOF
import os, re, sys, urllib.request
path = sys.stdin.read().strip()
tok = os.environ.get("GITHUB_TOKEN", "")
r = urllib.request.Request("https://api.example.test:$P" + path, headers={"Authorization": "Bearer " + tok})
print(urllib.request.urlopen(r, timeout=20).read().decode().strip())
print("placeholder" if re.fullmatch(r"moat_ph_github_[0-9a-f]{32,}", tok) else "no placeholder: " + tok[:12])
EOF
: >cases.jsonl
for i in 1 2 3; do
	printf '{"name": "c%d", "stdin": "/repos/myorg/j%d\\n", "expected_stdout": "tls-upstream-ok GET /repos/myorg/j%d\\nplaceholder\\n"}\n' \
		"$i" "$i" "$i" >>cases.jsonl
done
export MOAT_TEST_UPSTREAM_CA="$MOAT_TDIR/ca.pem"
OUT=$(HOST_GH="$GH_VALUE" "${IN[@]}" "$MOAT" judge --policy policy.yaml --tests cases.jsonl --parallel 2 \
	--source prog.py 2>err) && RC=0 || RC=$?
t_eq "judge with a secret, three cases on two workers: all pass" "0 3" \
	"$RC $(printf '%s\n' "$OUT" | grep -c '"verdict":"pass"')"
[ "$RC" = 0 ] || printf '%s\n%s\n' "$OUT" "$(cat err)" | sed 's/^/#   /' | head -20
t_eq "each case's request carried the value upstream" "Bearer $GH_VALUE|Bearer $GH_VALUE|Bearer $GH_VALUE" \
	"$(python3 -c 'import json
a = {}
for l in open("up.log"):
    r = json.loads(l)
    a[r["path"]] = next((v for k, v in r["headers"] if k.lower() == "authorization"), "")
print("|".join(a.get("/repos/myorg/j%d" % i, "-") for i in (1, 2, 3)))')"
t_eq "no value in judge's output" "" "$(printf '%s' "$OUT" | grep -c "$GH_VALUE" | grep -v '^0$')"

# A path the secret is not bound to: the request is refused, the case fails
# (its output names the refusal), nothing reaches the upstream.
printf '{"name": "unbound", "stdin": "/admin/x\\n", "expected_stdout": "x\\n"}\n' >bad.jsonl
OUT=$(HOST_GH="$GH_VALUE" "${IN[@]}" "$MOAT" judge --policy policy.yaml --tests bad.jsonl --source prog.py 2>err) && RC=0 || RC=$?
t_eq "an unbound path: the case fails" 1 "$RC"
t_eq "an unbound path: nothing reached the upstream" 0 "$(grep -c '"/admin/x"' up.log)"

# No value in the case's sandbox: every process's environment, command line
# and readable memory, scanned from inside by the case itself; a control
# value in the case's environment is found, so the scan can fail. (The
# init's memory is out of the case's reach; secrets.sh scans it from the
# host for moat run, whose start the case's sandbox shares. Under a
# sanitizer the init would be left out for the value: its runtime copied
# judge's environment before main.)
CTL_VALUE="ctl_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat >scan.py <<EOF
import json, os, subprocess, sys
out = json.loads(subprocess.run([sys.executable, "/scan.py", "--all", "--needle", "$(mask "$GH_VALUE")",
                                 "--needle", os.environ["CTL_HEX"]], capture_output=True, text=True).stdout)
hits = [(p, h["needle"]) for p, r in out.items() for h in r["hits"]]
skip_init = "${MOAT_SANITIZED:-}" != ""
print("memory read" if any(r["memory"] > 0 for r in out.values()) else "no memory read")
print("value in", sorted({p for p, n in hits if n == 0 and not (skip_init and p == "1")}))
print("control found" if any(n == 1 for p, n in hits) else "control not found")
EOF
printf '{"name": "scan", "stdin": "", "expected_stdout": "memory read\\nvalue in []\\ncontrol found\\n"}\n' >scan.jsonl
OUT=$(HOST_GH="$GH_VALUE" "${IN[@]}" "$MOAT" judge --policy policy.yaml --tests scan.jsonl --ro "$SCAN:/scan.py" \
	--env "CTL_HEX=$(mask "$CTL_VALUE")" --env "CTL=$CTL_VALUE" --source scan.py 2>err) && RC=0 || RC=$?
t_eq "scan inside a case: memory read, no value anywhere, the control found" 0 "$RC"
[ "$RC" = 0 ] || printf '%s\n%s\n' "$OUT" "$(cat err)" | sed 's/^/#   /' | head -20

# From the host, as root: while a case runs, its sandbox (the worker's
# descendants: the init and the command) holds no value anywhere in its
# memory, while the worker itself, the case's supervisor, does (the scan
# can find it).
if is_root && [ -z "${MOAT_SANITIZED:-}" ]; then
	printf 'import os, time\nprint(os.environ.get("GITHUB_TOKEN", "")[:8])\ntime.sleep(4)\n' >hold.py
	printf '{"name": "hold", "stdin": "", "expected_stdout": "moat_ph_\\n"}\n' >hold.jsonl
	HOST_GH="$GH_VALUE" "${IN[@]}" "$MOAT" judge --policy policy.yaml --tests hold.jsonl --source hold.py \
		>hold.out 2>&1 &
	JPID=$!
	W=""
	for _ in $(seq 100); do
		W=$(pgrep -P "$JPID" | head -1)
		# The worker, its init, and the init's child: the command.
		[ -n "$W" ] && I=$(pgrep -P "$W" | head -1) && [ -n "$I" ] && [ -n "$(pgrep -P "$I")" ] && break
		sleep 0.1
	done
	python3 "$SCAN" --tree "$W" --needle "$(mask "$GH_VALUE")" >outside.json 2>&1
	python3 "$SCAN" --pids "$W" --needle "$(mask "$GH_VALUE")" >worker.json 2>&1
	wait "$JPID" && RC=0 || RC=$?
	t_eq "held case: passes" 0 "$RC"
	t_eq "from the host: the case's sandbox was read, and holds no value" "read []" "$(python3 -c 'import json
j = json.load(open("outside.json"))
print("read" if sum(r["memory"] for r in j.values()) > 0 else "not read", sorted(p for p, r in j.items() if r["hits"]))' 2>&1)"
	t_eq "from the host: the worker, the case's supervisor, holds it (the scan can find it)" yes \
		"$(python3 -c 'import json
j = json.load(open("worker.json"))
print("yes" if any(r["hits"] for r in j.values()) else "no")' 2>&1)"
fi
