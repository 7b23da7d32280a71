#!/bin/bash
# A token's limits in moatd (docs/api.md, "Token limits"): its policy
# ceiling bounds every run and session it asks for (more is 403 naming the
# field; what it leaves unsaid takes the ceiling's value), whatever its
# role; and its cpu_seconds quota counts the CPU time of its runs and
# execs, 429 naming the limit once used up, across a restart. A unix
# peer's peer_limits entry carries the same ceiling and quotas.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

. "$MOAT_SRC/integration/moatd_lib.bash"
N="dl$$"
trap 'moatd_cleanup "$N"' EXIT

mkdir -p data other
echo inside >data/f
echo secret >other/f
chmod 755 "$MOAT_TDIR" data other
chmod 644 data/f other/f
TA="agent-$RANDOM$RANDOM" TO="operator-$RANDOM$RANDOM" TC="cpu-$RANDOM$RANDOM" TJ="judge-$RANDOM$RANDOM"
cat >tokens <<EOT
agent $(hash "$TA") boxed
operator $(hash "$TO") boxed-op
agent $(hash "$TC") burner
agent $(hash "$TJ") judger
EOT
cat >ceiling.yaml <<EOT
version: 1
filesystem:
  read_only: ["$MOAT_TDIR/data"]
limits: {memory: 256M, wall: 60s}
EOT
cat >moatd.yaml <<EOT
tokens: $MOAT_TDIR/tokens
listen: 127.0.0.1:$port
token_limits:
  boxed: {policy: $MOAT_TDIR/ceiling.yaml}
  boxed-op: {policy: $MOAT_TDIR/ceiling.yaml}
  burner: {quotas: {cpu_seconds: 1}}
  judger: {quotas: {cpu_seconds: 1}}
EOT
# Unix peers of other uids (as root: moat-test by its uid, nobody by its
# group) carry the same ceiling and quotas under peer_limits.
if is_root; then
	PU=$(id -u moat-test) NG=$(getent group nogroup | cut -d: -f3)
	# SU: an agent by its uid, in group SG by a supplementary group only,
	# whose primary gid is one with no entry (as after "sg OTHER").
	SU=4000000124 SG=4000000123 SP=4000000125
	cat >>moatd.yaml <<EOT
roles:
  agent: {uids: [$PU, $SU], gids: [$NG]}
peer_limits:
  uid:$PU:
    policy: $MOAT_TDIR/ceiling.yaml
    quotas: {sandboxes: 1, runs_per_minute: 2}
  gid:$NG: {quotas: {runs_per_minute: 1}}
  gid:$SG: {quotas: {runs_per_minute: 1}}
EOT
fi
moatd_start moatd.yaml
t_eq "moatd starts with token limits" 0 $?

# --- the ceiling
t_eq "ceiling: no network (allow_hosts is 403 naming the field)" "403 network.mode" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"allow_hosts":["example.com"]}') $(err_field)"
t_eq "ceiling: no network through an inline policy either" "403 network.mode" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"policy":{"version":1,"network":{"allow":[{"host":"example.com"}]}}}') $(err_field)"
t_eq "ceiling: its folder read-only, never read-write" "403 filesystem.read_write" \
	"$(tcode "$TA" POST /v1/runs "{\"argv\":[\"true\"],\"policy\":{\"version\":1,\"filesystem\":{\"read_write\":[\"$MOAT_TDIR/data\"]}}}") $(err_field)"
t_eq "ceiling: no folder beside it" "403 filesystem.read_only" \
	"$(tcode "$TA" POST /v1/runs "{\"argv\":[\"cat\",\"/o/f\"],\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_TDIR/other:/o\"]}}}") $(err_field)"
# A nested run's /tmp is its parent sandbox's own; the host's /tmp is not.
t_eq "ceiling: not the host's /tmp, which a nested run's check would grant" "403 filesystem.read_write" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"policy":{"version":1,"filesystem":{"read_write":["/tmp"]}}}') $(err_field)"
t_eq "ceiling: not the host's root" "403 filesystem.read_only" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"policy":{"version":1,"filesystem":{"read_only":["/:/host"]}}}') $(err_field)"
t_eq "ceiling: no limit above its own" "403 limits.memory" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"limits":{"memory":"1G"}}') $(err_field)"
st=$(tcode "$TA" POST /v1/runs "{\"argv\":[\"cat\",\"/d/f\"],\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_TDIR/data:/d\"]}}}")
t_eq "ceiling: a policy within it runs (an agent with a ceiling may send one)" "200 inside" "$st $(jq_ 'j["stdout"].strip()' <body)"
st=$(tcode "$TA" POST /v1/runs '{"argv":["cat","/etc/moat/policy.yaml"]}')
t_match "ceiling: what the request leaves unsaid takes the ceiling's value" "memory: (256M|268435456)" \
	"$(jq_ 'j["stdout"]' <body)"
t_eq "ceiling: bad input is still 400 naming the field" "400 policy" \
	"$(tcode "$TA" POST /v1/runs '{"argv":["true"],"policy":"x"}') $(err_field)"
t_eq "ceiling: a judge within it" "200 pass" \
	"$(tcode "$TA" POST /v1/judge '{"source":"print(input())","cases":[{"name":"echo","stdin":"x\n","expected_stdout":"x\n"}]}') $(python3 -c 'import json; print(json.loads(open("body").readline())["verdict"])')"
t_eq "ceiling: a judge asking for more is refused" "403 limits.memory" \
	"$(tcode "$TA" POST /v1/judge '{"source":"print(1)","cases":[{"stdin":""}],"limits":{"memory":"1G"}}') $(err_field)"
t_eq "ceiling: an operator's token is held to its ceiling too" "403 network.mode" \
	"$(tcode "$TO" POST /v1/runs '{"argv":["true"],"allow_hosts":["example.com"]}') $(err_field)"
t_eq "ceiling: a session asking for the network is refused" "403 network.mode" \
	"$(tcode "$TA" POST /v1/sessions "{\"name\":\"$N-n\",\"allow_hosts\":[\"example.com\"]}") $(err_field)"
st=$(tcode "$TA" POST /v1/sessions "{\"name\":\"$N-a\"}")
sid=$(jq_ 'j.get("id")' <body)
t_eq "ceiling: a session within it" 201 "$st"
tcode "$TA" POST "/v1/sessions/$sid/exec" '{"argv":["cat","/etc/moat/policy.yaml"]}' >/dev/null
t_match "ceiling: the session's policy is narrowed to it" "memory: (256M|268435456)" \
	"$(python3 -c 'import json; print("".join(json.loads(l).get("data","") for l in open("body")))')"
# An exec's time: the session lives no longer than the ceiling's wall, so
# a command asking for more is refused naming the field; within it, it runs.
t_eq "ceiling: an exec asking for more time than the ceiling's wall is 403 naming it" "403 time" \
	"$(tcode "$TA" POST "/v1/sessions/$sid/exec" '{"argv":["true"],"time":"2m"}') $(err_field)"
t_eq "ceiling: an exec within the ceiling's wall runs" 200 \
	"$(tcode "$TA" POST "/v1/sessions/$sid/exec" '{"argv":["true"],"time":"30s"}')"

# --- a unix peer's ceiling and quotas (peer_limits): the token form's rules
if is_root; then
	# ucode USER METHOD URL [BODY]: the status over the unix socket as USER
	ucode() {
		local u="$1" g="$2" m="$3" url="$4"
		shift 4
		setpriv --reuid="$u" --regid="$g" --clear-groups curl -sS --max-time 120 -o - -w '\n%{http_code}' \
			-X "$m" --unix-socket "$SOCK" "http://m$url" ${1+--data-binary "$1"} >ubody
		tail -n1 ubody
		sed '$d' ubody >body
	}
	pc() { ucode moat-test moat-test "$@"; }
	t_eq "peer ceiling: an agent peer asking for the network is 403 naming the field" "403 network.mode" \
		"$(pc POST /v1/runs '{"argv":["true"],"allow_hosts":["example.com"]}') $(err_field)"
	t_eq "peer ceiling: no limit above its own" "403 limits.memory" \
		"$(pc POST /v1/runs '{"argv":["true"],"limits":{"memory":"1G"}}') $(err_field)"
	t_eq "peer ceiling: its folder read-only, never read-write" "403 filesystem.read_write" \
		"$(pc POST /v1/runs "{\"argv\":[\"true\"],\"policy\":{\"version\":1,\"filesystem\":{\"read_write\":[\"$MOAT_TDIR/data\"]}}}") $(err_field)"
	st=$(pc POST /v1/runs "{\"argv\":[\"cat\",\"/d/f\"],\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_TDIR/data:/d\"]}}}")
	t_eq "peer ceiling: a policy within it runs" "200 inside" "$st $(jq_ 'j["stdout"].strip()' <body)"
	st=$(pc POST /v1/sessions "{\"name\":\"$N-p\"}")
	psid=$(jq_ 'j.get("id")' <body)
	t_eq "peer quota: a session, owned by the peer's uid" "201 uid:$PU" "$st $(jq_ 'j.get("owner")' <body)"
	t_eq "peer quota: holding its one sandbox, a run is 429 naming sandboxes" "429 sandboxes uid:$PU" \
		"$(pc POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]+" "+j["error"].split()[-1]' <body)"
	t_eq "peer: an agent peer never decides an approval" "403 approval.decide: the agent role may not call this" \
		"$(pc POST /v1/approvals/a00000000 '{"decision":"approve"}') $(jq_ 'j["error"]' <body)"
	t_eq "peer: deletes its session" 200 "$(pc DELETE "/v1/sessions/$psid")"
	t_eq "peer quota: its second run of the minute passes (refused ones do not count)" 200 "$(pc POST /v1/runs '{"argv":["true"]}')"
	t_eq "peer quota: past runs_per_minute, 429 naming it" "429 runs_per_minute" \
		"$(pc POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]' <body)"
	# nobody takes its group's entry: no ceiling, its own quota.
	t_eq "peer by gid: a run within its quota" 200 "$(ucode nobody nogroup POST /v1/runs '{"argv":["true"]}')"
	t_eq "peer by gid: past its group's runs_per_minute, 429" "429 runs_per_minute" \
		"$(ucode nobody nogroup POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]' <body)"
	t_eq "peer by gid: still an agent held to the profiles (no ceiling to widen it)" "403 policy" \
		"$(ucode nobody nogroup POST /v1/runs '{"argv":["true"],"policy":{"version":1}}') $(err_field)"
	# The entry of a group the peer is in holds whichever of its groups
	# is its primary one: a member that switches its gid (sg, newgrp)
	# does not leave its group's quota behind.
	sup() {
		setpriv --reuid="$SU" --regid="$SP" --groups="$SG" curl -sS --max-time 120 -o - -w '\n%{http_code}' \
			--unix-socket "$SOCK" -d '{"argv":["true"]}' http://m/v1/runs >ubody
		tail -n1 ubody
		sed '$d' ubody >body
	}
	t_eq "peer by a supplementary group: a run within its group's quota" 200 "$(sup)"
	t_eq "peer by a supplementary group: past its group's runs_per_minute, 429" "429 runs_per_minute" \
		"$(sup) $(jq_ 'j.get("limit")' <body)"
	t_eq "moatd's own user takes no peer limit" 200 \
		"$(curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" -d '{"argv":["true"],"limits":{"memory":"1G"}}' http://m/v1/runs)"
else
	t_na "unix peers' ceilings and quotas" "rootless moatd's socket is its user's alone"
fi

# --- cpu_seconds
# Runs that burn CPU until the quota refuses one: how many it takes
# depends on the machine's load, what they used before the refusal does not.
total=0 first="" last=""
for _ in $(seq 30); do
	st=$(tcode "$TC" POST /v1/runs '{"argv":["sh","-c","while :; do :; done"],"limits":{"cpu":"2s"}}')
	[ -z "$first" ] && first="$st $(jq_ 'j.get("status")' <body)"
	last="$st $(jq_ 'j.get("limit")' <body)"
	[ "$st" = 200 ] || break
	total=$((total + $(jq_ 'j["cpu_ms"]' <body)))
done
# (cpu_limit, or on a loaded host its wall limit first)
t_match "cpu quota: a run that burns CPU is let through while under it" "^200 (cpu_limit|timeout)$" "$first"
t_eq "cpu quota: used up, the next run is 429 naming cpu_seconds" "429 cpu_seconds" "$last"
t_check "cpu quota: refused only once the results' CPU time reached it ($total ms)" test "$total" -ge 1000
# A judge's cases count too, from their lines.
JBODY='{"source":"while True:\n    pass\n","cases":[{"name":"spin","stdin":"","expected_stdout":""}],"limits":{"cpu":"2s"}}'
jlast=""
for _ in $(seq 30); do
	st=$(tcode "$TJ" POST /v1/judge "$JBODY")
	jlast="$st $(python3 -c 'import json; l=open("body").read().strip().splitlines(); print(json.loads(l[-1]).get("limit") if l else "")' 2>/dev/null)"
	[ "$st" = 200 ] || break
done
t_eq "cpu quota: a judge's cases count, 429 once used up" "429 cpu_seconds" "$jlast"
t_eq "cpu quota: a session too" "429 cpu_seconds" \
	"$(tcode "$TC" POST /v1/sessions '{}') $(jq_ 'j["limit"]' <body)"
t_eq "cpu quota: another token is not touched" 200 "$(tcode "$TA" POST /v1/runs '{"argv":["true"]}')"
moatd_stop
moatd_start moatd.yaml
t_eq "cpu quota: what was used is still counted after a restart" "429 cpu_seconds" \
	"$(tcode "$TC" POST /v1/runs '{"argv":["true"]}') $(jq_ 'j["limit"]' <body)"
moatd_stop

# --- a ceiling is checked at start
printf 'version: 1\nfilesystem:\n  read_only: ["%s/data:/d"]\n' "$MOAT_TDIR" >moved.yaml
sed "s#$MOAT_TDIR/ceiling.yaml#$MOAT_TDIR/moved.yaml#" moatd.yaml >moved-moatd.yaml
out=$("$MOATD" --socket "$MOAT_TDIR/x.sock" --state-dir "$MOAT_TDIR/x" --config moved-moatd.yaml 2>&1)
t_match "a ceiling binding a folder elsewhere than its own path is refused at start" "at their own path" "$out"
out=$("$MOATD" --check-config --config moved-moatd.yaml 2>&1)
t_eq "--check-config reads the ceilings too, naming the one that is wrong" "1 moatd: token_limits.boxed.policy" \
	"$? $(printf '%s' "$out" | cut -d: -f1-2)"
t_check "--check-config takes good ones" "$MOATD" --check-config --config moatd.yaml
printf 'peer_limits:\n  uid:4000000001: {policy: %s/moved.yaml}\n' "$MOAT_TDIR" >peer-moved.yaml
out=$("$MOATD" --check-config --config peer-moved.yaml 2>&1)
t_eq "--check-config reads a peer's ceiling too, naming its entry" "1 moatd: peer_limits.uid:4000000001.policy" \
	"$? $(printf '%s' "$out" | cut -d: -f1-3)"
printf 'peer_limits:\n  alice: {quotas: {sandboxes: 1}}\n' >peer-bad.yaml
out=$("$MOATD" --check-config --config peer-bad.yaml 2>&1)
t_match "--check-config: a peer_limits key that is no uid:N or gid:N is named" "peer_limits.alice: expected uid:N or gid:N" "$out"

moatd_no_sanitizer_report
