#!/bin/bash
# moatd's detached execs (docs/api.md): POST .../exec?wait=false answers an
# exec id at once; GET .../exec/ID tells its state, exit code, result JSON
# and output (capped like a run's). The command outlives its client and a
# moatd killed with SIGKILL and started again; an exec whose watcher was
# killed is reported lost, exactly; another agent cannot see it.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

. "$MOAT_SRC/integration/moatd_lib.bash"
N="dd$$"
trap 'moatd_cleanup "$N"' EXIT
TA="agent-a-$RANDOM$RANDOM" TB="agent-b-$RANDOM$RANDOM"
printf 'agent %s alice\nagent %s bob\n' "$(hash "$TA")" "$(hash "$TB")" >tokens
cat >moatd.yaml <<EOT
output_cap: 4K
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port
EOT
moatd_start
t_eq "moatd answers" 0 $?

code POST /v1/sessions "{\"name\":\"$N-a\"}" >/dev/null
id=$(jq_ 'j["id"]' <body)
# poll ID: until the exec is no longer running (bounded: 60 s)
poll() {
	local st=running
	for _ in $(seq 600); do
		c "http://moatd/v1/sessions/$id/exec/$1" >exec.json
		st=$(jq_ 'j["state"]' <exec.json)
		[ "$st" != running ] && break
		sleep 0.1
	done
	echo "$st"
}

st=$(code POST "/v1/sessions/$id/exec?wait=false" '{"argv":["sh","-c","echo started; sleep 2; echo survived; echo e >&2; exit 4"]}')
x1=$(jq_ 'j["id"]' <body)
t_eq "exec?wait=false: 202 with an exec id, running" "202 running" "$st $(jq_ 'j["state"]' <body)"
t_match "the exec id" '^[0-9a-f]{32}$' "$x1"
t_eq "GET exec/ID while it runs" running "$(c "http://moatd/v1/sessions/$id/exec/$x1" | jq_ 'j["state"]')"
# The client is gone (curl ended): the command goes on to its end.
t_eq "a detached exec outlives its client: it ends on its own" exited "$(poll "$x1")"
t_eq "its exit code, output and result JSON" "4 'started\nsurvived\n' 'e\n' exited True" \
	"$(jq_ '" ".join([str(j["exit_code"]), repr(j["stdout"]), repr(j["stderr"]), j["result"]["status"], str("cpu_ms" in j["result"])])' <exec.json)"
st=$(code POST "/v1/sessions/$id/exec" '{"argv":["sh","-c","yes | head -c 100000"],"wait":false}')
x2=$(jq_ 'j["id"]' <body)
t_eq "\"wait\": false in the body too" 202 "$st"
poll "$x2" >/dev/null
t_eq "a detached exec's output is capped at output_cap and says so" "4096 True 100000" \
	"$(jq_ '" ".join([str(len(j["stdout"])), str(j["stdout_truncated"]), str(j["result"]["stdout_bytes"])])' <exec.json)"

# moatd killed with SIGKILL while a detached exec runs, and started again.
mark="moatd-detach-$$"
code POST "/v1/sessions/$id/exec?wait=false" "{\"argv\":[\"sh\",\"-c\",\"sleep 3; echo after-restart # $mark\"]}" >/dev/null
x3=$(jq_ 'j["id"]' <body)
moatd_stop KILL
moatd_start
t_eq "moatd restarts" 0 $?
t_eq "after a restart the detached exec is known" running "$(c "http://moatd/v1/sessions/$id/exec/$x3" | jq_ 'j["state"]')"
t_eq "and it survived the restart to its end" "exited 0 after-restart" \
	"$(poll "$x3") $(jq_ 'str(j["exit_code"])+" "+j["stdout"].split()[0]' <exec.json)"

# lost: the watcher that records how the exec ends is killed before the
# command does. Its lock goes with it and no status.json is written, so
# moatd, before and after a restart, reports the exec lost: no exit code,
# no result, the output it wrote so far.
code POST "/v1/sessions/$id/exec?wait=false" "{\"argv\":[\"sh\",\"-c\",\"echo before-loss; exec sleep 600 # $mark-lost\"]}" >/dev/null
xl=$(jq_ 'j["id"]' <body)
for _ in $(seq 600); do
	[ "$(c "http://moatd/v1/sessions/$id/exec/$xl" | jq_ 'j["stdout"]')" = before-loss ] && break
	sleep 0.1
done
# The watcher is the process holding the exec's lock as its fd 3.
wpid=""
lockf=$(readlink -f "$STATE/execs/$xl/lock")
for f in /proc/[0-9]*/fd/3; do
	if [ "$(readlink "$f" 2>/dev/null)" = "$lockf" ]; then
		wpid=${f#/proc/}
		wpid=${wpid%%/*}
		break
	fi
done
t_match "the detached exec's watcher holds its lock" '^[0-9]+$' "$wpid"
t_eq "while the watcher lives, the exec is running" running "$(c "http://moatd/v1/sessions/$id/exec/$xl" | jq_ 'j["state"]')"
[ -n "$wpid" ] && kill -KILL "$wpid"
lost() {
	python3 -c '
import json,sys
j=json.load(sys.stdin)
print(j["id"]==sys.argv[1], j["session"]==sys.argv[2], j["argv"][:2], j["state"], j["exit_code"], j["result"],
      repr(j["stdout"]), repr(j["stderr"]), j["stdout_truncated"])' "$xl" "$id"
}
WANT_LOST="True True ['sh', '-c'] lost None None 'before-loss\n' '' False"
t_eq "a detached exec whose watcher was killed is lost: no exit code, no result, its output so far" \
	"200 $WANT_LOST" "$(poll "$xl" >/dev/null; code GET "/v1/sessions/$id/exec/$xl") $(lost <body)"
moatd_stop KILL
moatd_start
t_eq "a restarted moatd reports the lost exec exactly so" "200 $WANT_LOST" \
	"$(code GET "/v1/sessions/$id/exec/$xl") $(lost <body)"

# tests/attacks/moatd_exec_record.c: a detached command that tries to
# rewrite its own record (moatd would then report what it wrote).
code POST /v1/sessions "{\"name\":\"$N-atk\",\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_ATTACKS:/attacks\"]}}}" >/dev/null
kid=$(jq_ 'j["id"]' <body)
code POST "/v1/sessions/$kid/exec?wait=false" "{\"argv\":[\"/attacks/attack_moatd_exec_record\",\"$STATE/execs\"]}" >/dev/null
kx=$(jq_ 'j["id"]' <body)
id_save=$id
id=$kid
t_eq "attack moatd_exec_record as a detached exec: blocked, and its record is moatd's" "exited 0 BLOCKED" \
	"$(poll "$kx") $(jq_ 'str(j["exit_code"])+" "+j["stdout"].split(":")[0]' <exec.json)"
id=$id_save

# A non-detached exec whose client leaves still loses its command.
curl -sS --unix-socket "$SOCK" -X POST -d "{\"argv\":[\"sh\",\"-c\",\"exec sleep 300 # $mark-att\"]}" \
	"http://moatd/v1/sessions/$id/exec" >/dev/null 2>&1 &
cpid=$!
for _ in $(seq 100); do pgrep -f "sleep 300 # $mark-att" >/dev/null && break; sleep 0.1; done
kill "$cpid"
wait "$cpid" 2>/dev/null
gone=no
for _ in $(seq 100); do pgrep -f "sleep 300 # $mark-att" >/dev/null || { gone=yes; break; }; sleep 0.1; done
t_eq "an attached exec whose client leaves is killed (the detached ones are not)" yes "$gone"

# --- bad input, unknown execs, other callers
t_eq "an unknown exec: 404" 404 "$(code GET "/v1/sessions/$id/exec/0123456789abcdef0123456789abcdef")"
t_eq "an exec id of the wrong shape: 404" 404 "$(code GET "/v1/sessions/$id/exec/../../owners")"
t_eq "exec: an unknown query is 400" "400" "$(code POST "/v1/sessions/$id/exec?detach=1" '{"argv":["true"]}')"
t_eq "exec: wait of the wrong type is 400 naming it" "400 wait" \
	"$(code POST "/v1/sessions/$id/exec" '{"argv":["true"],"wait":"no"}') $(jq_ 'j["error"].split(":")[0]' <body)"
tcode "$TA" POST /v1/sessions "{\"name\":\"$N-alice\"}" >/dev/null
aid=$(jq_ 'j["id"]' <body)
st=$(tcode "$TA" POST "/v1/sessions/$aid/exec?wait=false" '{"argv":["echo","mine"]}')
ax=$(jq_ 'j["id"]' <body)
t_eq "an agent starts a detached exec in its session" 202 "$st"
for _ in $(seq 100); do
	tcode "$TA" GET "/v1/sessions/$aid/exec/$ax" >/dev/null
	[ "$(jq_ 'j["state"]' <body)" = exited ] && break
	sleep 0.1
done
t_eq "and reads it" "exited mine" "$(jq_ 'j["state"]+" "+j["stdout"].strip()' <body)"
t_eq "another agent cannot read it" 404 "$(tcode "$TB" GET "/v1/sessions/$aid/exec/$ax")"
t_eq "nor read an exec of another session through its own" 404 \
	"$(tcode "$TA" GET "/v1/sessions/$aid/exec/$x1")"

t_check "the session's detached execs are on record" test -d "$STATE/execs/$x1"
t_eq "DELETE the session" 200 "$(code DELETE "/v1/sessions/$id")"
t_check "its ended execs' records go with it" test ! -e "$STATE/execs/$x1" -a ! -e "$STATE/execs/$x3"
t_check "another session's stay" test -d "$STATE/execs/$ax"

moatd_stop
moatd_no_sanitizer_report
