#!/bin/bash
# moatd's approvals (docs/api.md): GET /v1/approvals lists what the
# sessions' keepers hold (?session= for one), POST /v1/approvals/{id}
# decides with the keeper's own rules. An operator decides, a viewer only
# lists, an agent never decides, not even a request held in a session it
# created itself. Every decision is an event in moatd's log with the
# caller, and the session's own log names the token that decided.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

. "$MOAT_SRC/integration/moatd_lib.bash"
N="da$$"
kpid=""
cleanup() {
	[ -n "$kpid" ] && kill -CONT "$kpid" 2>/dev/null
	moatd_cleanup "$N"
}
trap cleanup EXIT

# A stand-in git that records its arguments; `git push` is gated.
mkdir -p bin
printf '#!/bin/sh\necho "ran: $*"\n' >bin/git
chmod 755 bin bin/git
chmod 755 "$MOAT_TDIR"
TA="agent-a-$RANDOM$RANDOM" TB="agent-b-$RANDOM$RANDOM" TV="viewer-$RANDOM$RANDOM" TO="operator-$RANDOM$RANDOM"
cat >tokens <<EOT
agent $(hash "$TA") alice
agent $(hash "$TB") bob
viewer $(hash "$TV") dash
operator $(hash "$TO") ops
EOT
# alice's ceiling lets her bind the stand-in's folder, and a wall clock
# long enough for a push held while the steps below run (see POL).
cat >alice.yaml <<EOT
version: 1
filesystem:
  read_only: ["$MOAT_TDIR/bin"]
limits:
  wall: 10m
EOT
cat >moatd.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port
token_limits:
  alice: {policy: $MOAT_TDIR/alice.yaml}
EOT
moatd_start moatd.yaml

# The profile's 10 s wall would end a push held longer than that, and with
# it the session (its approvals withdrawn): on a loaded machine the steps
# below take longer. The wall outlasts the approvals' own timeout.
POL="{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_TDIR/bin:/opt/gate\"]},\"exec\":{\"approve\":[{\"path\":\"/opt/gate/git\",\"args\":[\"push\",\"*\"]}]},\"approvals\":{\"timeout\":\"120s\"},\"limits\":{\"wall\":\"10m\"}}"
st=$(tcode "$TA" POST /v1/sessions "{\"name\":\"$N-a\",\"policy\":$POL}")
sid=$(jq_ 'j.get("id")' <body)
t_eq "an agent creates a session whose policy gates git push (within its ceiling)" 201 "$st"
# push ARGS: a detached `git push ARGS` in alice's session; its exec id.
push() {
	tcode "$TA" POST "/v1/sessions/$sid/exec?wait=false" \
		"{\"argv\":[\"sh\",\"-c\",\"/opt/gate/git push \$0; echo rc=\$?\",\"$1\"]}" >/dev/null
	jq_ 'j["id"]' <body
}
# TOKEN [QUERY]: how many approvals of this test's session the token sees
# (as root, other sessions of the host may hold some too)
pending() {
	tcode "$1" GET "/v1/approvals${2:-}" >/dev/null
	jq_ "len([a for a in j['approvals'] if a['session']=='$sid'])" <body
}
wait_pending() {
	local n=0
	for _ in $(seq 300); do
		n=$(pending "$TO")
		[ "$n" = "$1" ] && break
		sleep 0.1
	done
	echo "$n"
}
wait_exec() {
	for _ in $(seq 300); do
		tcode "$TA" GET "/v1/sessions/$sid/exec/$1" >/dev/null
		[ "$(jq_ 'j["state"]' <body)" != running ] && break
		sleep 0.1
	done
	jq_ 'j["stdout"].strip().replace("\n", " ")' <body
}

x=$(push main)
t_eq "git push is held" 1 "$(wait_pending 1)"
tcode "$TV" GET /metrics >/dev/null
out=$(python3 "$MOAT_SRC/integration/prom_parse.py" <body 2>&1)
t_eq "metrics with approvals held: valid Prometheus text format" 0 $?
t_match "metrics: approvals pending counted" 'moatd_approvals_pending\{\} [1-9]' "$out"
# The parser can fail: each broken copy of the same exposition is refused.
cp body metrics.txt
refused=""
for how in no-type twice negative inf counter-name; do
	python3 - "$how" <metrics.txt >broken.txt <<'PY'
import sys
how, lines = sys.argv[1], sys.stdin.read().splitlines()
if how == 'no-type':
    lines = [l for l in lines if l != '# TYPE moatd_approvals_pending gauge']
elif how == 'twice':
    lines += [l for l in lines if l.startswith('moatd_approvals_pending ')]
elif how == 'negative':
    lines = ['moatd_execs_total -1' if l.startswith('moatd_execs_total ') else l for l in lines]
elif how == 'inf':
    lines = [l for l in lines if 'le="+Inf"' not in l]
elif how == 'counter-name':
    lines = [l.replace('moatd_approvals_pending gauge', 'moatd_approvals_pending counter') for l in lines]
print('\n'.join(lines))
PY
	python3 "$MOAT_SRC/integration/prom_parse.py" <broken.txt >/dev/null 2>&1 || refused="$refused $how"
done
t_eq "the strict parser refuses broken copies" " no-type twice negative inf counter-name" "$refused"
t_match "metrics: the gateways' requests by decision" 'moatd_gateway_requests\{decision=deny\} [0-9]' "$out"
tcode "$TO" GET "/v1/approvals?session=$sid" >/dev/null
aid=$(jq_ 'j["approvals"][0]["id"]' <body)
t_eq "GET /v1/approvals?session=: the request, its session and program" "$sid /opt/gate/git" \
	"$(jq_ 'j["approvals"][0]["session"]+" "+j["approvals"][0]["exe"]' <body)"
t_eq "?session= by name, and the whole list, both have it" "1 1" "$(pending "$TO" "?session=$N-a") $(pending "$TO")"
t_eq "a viewer may list them" 1 "$(pending "$TV")"
t_eq "the agent whose session holds it may list them" 1 "$(pending "$TA")"
t_eq "another agent sees none of them" 0 "$(pending "$TB")"
t_eq "another agent cannot name that session in ?session=" 404 "$(tcode "$TB" GET "/v1/approvals?session=$sid")"
t_eq "an unknown query: 400" 400 "$(tcode "$TO" GET "/v1/approvals?sess=$sid")"

# --- who may decide
t_eq "an agent cannot approve a request held in a session it created" "403 approval.decide: the agent role may not call this" \
	"$(tcode "$TA" POST "/v1/approvals/$aid" '{"decision":"approve"}') $(jq_ 'j["error"]' <body)"
t_eq "nor deny it" 403 "$(tcode "$TA" POST "/v1/approvals/$aid" '{"decision":"deny"}')"
t_eq "a viewer cannot decide" 403 "$(tcode "$TV" POST "/v1/approvals/$aid" '{"decision":"approve"}')"
t_eq "after the refusals it still waits" 1 "$(pending "$TO")"

# --- bad input: 400 naming the field
t_eq "decision missing: 400" "400 decision" "$(tcode "$TO" POST "/v1/approvals/$aid" '{}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "decision of another value: 400" "400 decision" \
	"$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"maybe"}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "an unknown field: 400 naming it" "400 colour" \
	"$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"approve","colour":1}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "kind for without a duration: 400 naming for" "400 for" \
	"$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"approve","kind":"for"}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "a wider scope for a once approval: 400" "400 scope" \
	"$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"approve","scope":"host"}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "a denial with a note: 400" "400 note" \
	"$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"deny","note":"x"}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "an unknown approval: 404" 404 "$(tcode "$TO" POST /v1/approvals/a00000000 '{"decision":"approve"}')"
t_eq "a malformed approval id: 404" 404 "$(tcode "$TO" POST /v1/approvals/zz '{"decision":"approve"}')"

# --- an operator decides
st=$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"approve","kind":"once","note":"release day"}')
t_eq "an operator approves once: 200, naming who" "200 approved token:ops" \
	"$st $(jq_ 'j["decision"]+" "+j["by"]' <body)"
t_eq "the held push ran" "ran: push main rc=0" "$(wait_exec "$x")"
x=$(push next)
t_eq "the next push waits again" 1 "$(wait_pending 1)"
tcode "$TO" GET "/v1/approvals?session=$sid" >/dev/null
aid2=$(jq_ 'j["approvals"][0]["id"]' <body)

# --- a keeper that does not answer is no "not found": a stopped keeper
# holds aid2 still, so the decision is 503 naming its session (after the
# hello's bound, seconds), and the list says which session it could not read.
tcode "$TO" GET "/v1/sessions/$sid" >/dev/null
kpid=$(jq_ 'j["keeper_pid"]' <body)
kill -STOP "$kpid"
st=$(tcode "$TO" POST "/v1/approvals/$aid2" '{"decision":"deny"}')
t_eq "a stopped keeper: the decision is 503, naming its session" "503 True" \
	"$st $(jq_ "'$sid' in j['error'] and 'did not answer' in j['error']" <body)"
st=$(tcode "$TO" GET /v1/approvals)
t_eq "a stopped keeper: the list names it unreachable, with none of its approvals" "200 True 0" \
	"$st $(jq_ "'$sid' in j['unreachable']" <body) $(jq_ "len([a for a in j['approvals'] if a['session']=='$sid'])" <body)"
kill -CONT "$kpid"
t_eq "continued, the keeper holds it again" 1 "$(wait_pending 1)"
t_eq "nothing unreachable once it answers" False \
	"$(tcode "$TO" GET /v1/approvals >/dev/null; jq_ "'$sid' in j['unreachable']" <body)"
t_eq "an operator denies with a reason" "200 denied" \
	"$(tcode "$TO" POST "/v1/approvals/$aid2" '{"decision":"deny","reason":"not today"}') $(jq_ 'j["decision"]' <body)"
t_match "the denied push did not run" "rc=[1-9]" "$(wait_exec "$x")"
t_eq "nothing waits any more" 0 "$(pending "$TO")"
t_eq "a decided approval cannot be decided again" 404 "$(tcode "$TO" POST "/v1/approvals/$aid" '{"decision":"deny"}')"

# --- who decided, in both logs
tcode "$TO" GET "/v1/sessions/$sid/audit" >/dev/null
t_eq "the session's log names the token that decided each" "allow:token:ops deny:token:ops" \
	"$(python3 -c '
import json
ev=[json.loads(l) for l in open("body")]
print(" ".join(e["decision"]+":"+e.get("by","-") for e in ev if e["type"]=="approval.decision"))')"
AUD="$STATE/moatd-audit.jsonl"
t_check "moatd's audit log verifies" "$MOAT" audit verify "$AUD"
t_eq "moatd's log: each decision with the caller and the approval" "token:ops:approve:$aid token:ops:deny:$aid2" \
	"$(python3 -c "
import json
ev=[json.loads(l) for l in open('$AUD')]
print(' '.join(e['identity']+':'+e['decision']+':'+e['id'] for e in ev if e['type']=='approval.decision'))")"
t_eq "moatd's log: the agent's refused attempt too" "token:alice 403" \
	"$(python3 -c "
import json
for l in open('$AUD'):
    e=json.loads(l)
    if e['type']=='api.call' and e['call']=='approval.decide' and e['identity']=='token:alice':
        print(e['identity'], e['status']); break")"

moatd_stop
moatd_no_sanitizer_report
