#!/bin/bash
# moatd's warm pool (docs/api.md, "Warm pool"): `pool:` validated by
# --check-config with the field named; a run the profile's template can
# serve takes a pooled sandbox, one it cannot (a limit set at creation, an
# inline policy, files to place) or one that finds the pool empty gets a
# cold one, and the result says which; a pooled run is exactly as strict as
# a cold one (the same probe of its sandbox prints the same in both); its
# wall and output limits hold; a pooled sandbox serves one request (the
# pool_carryover attack, run in a row and side by side through the pool);
# /metrics counts pool size, hits and misses; an orderly stop leaves no
# pooled keeper behind, and after SIGKILL the next start stops what the
# killed moatd left.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

MOATD="$(dirname "$MOAT")/moatd"
SOCK="$MOAT_TDIR/moatd.sock"
STATE="$MOAT_TDIR/state"
# CURL_MAX: a run that is to use its whole CPU budget may take long on a
# loaded host (and under a sanitizer).
c() { curl -sS --max-time "${CURL_MAX:-60}" --unix-socket "$SOCK" "$@"; }
code() {
	c -o body -w '%{http_code}' -X "$1" "http://moatd$2" ${3+--data-binary "$3"}
}
jq_() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
# The JSON body of a run of argv (python list text) with extra fields.
body() { python3 -c "import json,sys; d={'argv': $1}; d.update(json.loads(sys.argv[1])); print(json.dumps(d))" "${2:-{\}}"; }
metric() { c http://moatd/metrics | python3 "$MOAT_SRC/integration/prom_parse.py" | grep -F "$1 " | head -1 | awk '{print $NF}'; }
DPID=""
start_moatd() {
	"$MOATD" --socket "$SOCK" --state-dir "$STATE" --config "$MOAT_TDIR/moatd.yaml" 2>>moatd.err &
	DPID=$!
	for _ in $(seq 100); do
		[ -S "$SOCK" ] && c http://moatd/v1/health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
# Waits until the pool holds n ready sandboxes of profile code.
pool_ready() {
	for _ in $(seq 600); do
		[ "$(metric 'moatd_pool_ready{profile=code}')" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# The keepers moatd recorded as pooled: "PID SOCKET" lines.
recorded() { cat "$STATE"/pool/* 2>/dev/null; }
alive() { # PID SOCKET: the keeper still runs (its pid and its socket)
	kill -0 "$1" 2>/dev/null && [ -S "$2" ]
}
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	# Whatever a failed check left: stop by the recorded pid only.
	recorded | while read -r pid sock; do alive "$pid" "$sock" && kill "$pid"; done
}
trap cleanup EXIT

# --- configuration
for bad in 'pool: {cod: 2}|pool.cod: unknown profile' 'pool: {code: 65}|pool.code: expected a count from 0 to 64' \
	'pool: [code]|pool: expected a mapping'; do
	printf '%s\n' "${bad%%|*}" >bad.yaml
	out=$("$MOATD" --check-config --config bad.yaml 2>&1)
	t_match "--check-config: ${bad%%|*} is one error naming the field" "^1 moatd: bad.yaml: ${bad##*|}" "$? $out"
done
cat >moatd.yaml <<'YAML'
pool: {code: 2, agent: 1}
output_cap: 64K
YAML
t_check "--check-config accepts pool" "$MOATD" --check-config --config moatd.yaml

start_moatd
t_eq "moatd with a pool answers" 0 $?
pool_ready 2
t_eq "the pool fills to its size" 0 $?
for _ in $(seq 600); do [ "$(recorded | wc -l)" = 3 ] && break; sleep 0.1; done
t_eq "each pooled sandbox is recorded with its keeper" 3 "$(recorded | wc -l)"

# --- pooled and cold
st=$(code POST /v1/runs "$(body '["sh","-c","cat; echo $A; pwd; echo err >&2; exit 3"]' '{"stdin":"in\n","env":{"A":"a1"},"cwd":"/tmp"}')")
t_eq "pooled run: 200, pooled, exit 3, stdin, env, cwd and stderr" "200 True exited 3 'in\na1\n/tmp\n' 'err\n'" \
	"$st $(jq_ '" ".join([str(j["pooled"]), j["status"], str(j["exit_code"]), repr(j["stdout"]), repr(j["stderr"])])' <body)"
code POST /v1/runs "$(body '["true"]' '{"limits":{"memory":"100M"}}')" >/dev/null
t_eq "a limit the template cannot narrow gets a cold sandbox" "exited False" "$(jq_ 'j["status"], j["pooled"]' <body | tr -d "(),'")"
code POST /v1/runs "$(body '["true"]' '{"files":[{"path":"/in/x","content":"x"}]}')" >/dev/null
t_eq "files to place get a cold sandbox" "False" "$(jq_ 'j["pooled"]' <body)"
t_eq "misses counted by reason" "1 1" \
	"$(metric 'moatd_pool_misses_total{profile=,reason=limits}') $(metric 'moatd_pool_misses_total{profile=,reason=files}')"

# The agent profile (its egress gateway, its delegation socket) pooled and
# cold: the same sandbox seen from inside.
for _ in $(seq 600); do [ "$(metric 'moatd_pool_ready{profile=agent}')" = 1 ] && break; sleep 0.1; done
look='["sh","-c","echo $HTTP_PROXY; id; ls / /run /tmp; grep -E \"^(Seccomp|NoNewPrivs|CapEff)\" /proc/self/status"]'
code POST /v1/runs "$(body "$look" '{"profile":"agent"}')" >/dev/null
mv body agent-pooled.json
code POST /v1/runs "$(body "$look" '{"profile":"agent","limits":{"memory":"2G"}}')" >/dev/null
t_eq "agent profile: pooled and cold sandboxes look the same from inside" \
	"True False $(jq_ 'repr(j["stdout"])' <body)" \
	"$(jq_ 'j["pooled"]' <agent-pooled.json) $(jq_ 'j["pooled"]' <body) $(jq_ 'repr(j["stdout"])' <agent-pooled.json)"

# --- exactly as strict: one probe, pooled and cold (the cold one asks for
# the profile's own memory limit, which only makes it cold).
cat >probe.sh <<'SH'
id; hostname; cat /proc/self/uid_map /proc/self/gid_map
grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status
sed 's/^[0-9]* [0-9]* [0-9:]* //; s|/moat-[0-9-]* |/moat-CG |' /proc/self/mountinfo | sort
ulimit -a
echo "tmp: $(ls -A /tmp) shm: $(ls -A /dev/shm 2>&1)"
ls / /dev; tail -n +3 /proc/net/dev | cut -d: -f1
touch /usr/x 2>&1; touch /etc/x 2>&1; touch /tmp/y && echo tmp-writable
env | sort; pwd
ls /proc/1/root 2>&1 | head -1; ps 2>&1 | head -1
cat /proc/self/attr/current 2>/dev/null; echo
umask
for f in memory.max pids.max memory/memory.limit_in_bytes pids/pids.max; do cat /sys/fs/cgroup/$f 2>&1; done
SH
probe=$(python3 -c 'import json; print(json.dumps(open("probe.sh").read()))')
code POST /v1/runs "$(body "[\"sh\",\"-c\",$probe]")" >/dev/null
mv body pooled.json
code POST /v1/runs "$(body "[\"sh\",\"-c\",$probe]" '{"limits":{"memory":"256M"}}')" >/dev/null
mv body cold.json
t_eq "probe ran pooled and cold" "True False" \
	"$(jq_ 'j["pooled"]' <pooled.json) $(jq_ 'j["pooled"]' <cold.json)"
jq_ 'j["stdout"] + j["stderr"]' <pooled.json >pooled.txt
jq_ 'j["stdout"] + j["stderr"]' <cold.json >cold.txt
out=$(diff cold.txt pooled.txt)
t_eq "a pooled sandbox is the cold one's equal: ids, capabilities, seccomp, mounts, rlimits, cgroup limits, /tmp, env, umask" "" "$out"
# A limit the cgroup holds, met pooled and cold (the cold run names the
# profile's own value, which only makes it cold): the same verdict, the
# same fields, the same isolation and enforced blocks.
verdict() { # FILE: what a result says of how the run ended
	jq_ '" ".join(str(x) for x in [j["pooled"], j["status"], j["limit"], j["exit_code"], j["signal"], j["exit_status"], "error" in j, sorted(k for k in j if k != "pooled")])' <"$1"
}
same_blocks() { # FILE FILE: isolation, enforced and limits_note equal
	python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print(all(a.get(k)==b.get(k) for k in ("isolation","enforced","limits_note")) and "isolation" in a and "enforced" in a)' "$1" "$2"
}
limit_pair() { # NAME ARGV POOLED-EXTRA COLD-EXTRA STATUS LIMIT
	code POST /v1/runs "$(body "$2" "$3")" >/dev/null
	mv body "$1-pooled.json"
	code POST /v1/runs "$(body "$2" "$4")" >/dev/null
	mv body "$1-cold.json"
	# Without a cgroup (rootless on a host that delegates none) an rlimit
	# stands in and the command meets it its own way, pooled as cold (the
	# CPU one still gives cpu_limit: SIGXCPU).
	if [ "$(jq_ 'j["enforced"]["'"$6"'"]["by"]' <"$1-cold.json")" = cgroup ] ||
		[ "$(jq_ 'j["status"]' <"$1-cold.json")" = "$5" ]; then
		t_match "$1 limit met pooled: status $5, limit $6" "^True $5 $6 " "$(verdict "$1-pooled.json")"
	else
		t_na "$1 limit met pooled: status $5, limit $6" "no cgroup here: $(jq_ 'j["isolation"].get("cgroup_note","")' <"$1-cold.json")"
	fi
	t_eq "$1 limit pooled reports what cold reports (status, limit, exit code, signal, fields)" \
		"$(verdict "$1-cold.json" | sed 's/^False/True/')" "$(verdict "$1-pooled.json")"
	t_eq "$1 limit pooled: the same isolation and enforced blocks as cold" True "$(same_blocks "$1-pooled.json" "$1-cold.json")"
}
pool_ready 2
limit_pair memory '["python3","-c","x = bytearray(400 << 20); print(len(x))"]' '{}' '{"limits":{"memory":"256M"}}' oom memory
peaks="$(jq_ 'j["memory_peak_bytes"]' <memory-pooled.json) $(jq_ 'j["memory_peak_bytes"]' <memory-cold.json)"
if [ "$(jq_ 'j["enforced"]["memory"]["by"]' <memory-cold.json)" = cgroup ]; then
	t_match "...memory_peak_bytes is the cgroup's peak pooled as cold (at the limit)" "^268[0-9]{6} 268[0-9]{6}$" "$peaks"
else
	t_eq "...memory_peak_bytes: unknown without a cgroup, pooled as cold" "None None" "$peaks"
fi
pool_ready 2
# Forks until refused, then waits: the sandbox is ended for the limit
# (a shell that gave up at once would race the limits' poll).
forker=$(python3 -c 'import json; print(json.dumps(["python3", "-c", "import os, time\ntry:\n    while True:\n        if os.fork() == 0: os.execv(\"/bin/sleep\", [\"sleep\", \"60\"])\nexcept OSError: pass\ntime.sleep(60)"]))')
limit_pair pids "$forker" '{}' '{"limits":{"pids":64}}' pids_limit pids
pool_ready 2
# 10 s of CPU, the profile's budget; the wall limit is raised for both so
# that a loaded host cannot make it a timeout.
CURL_MAX=600 limit_pair cpu '["python3","-c","while True: pass"]' '{"limits":{"time":"300s"}}' \
	'{"limits":{"time":"300s","cpu":"10s"}}' cpu_limit cpu
pool_ready 2
code POST /v1/runs "$(body '["sh","-c","exit 4"]')" >/dev/null
mv body plain-pooled.json
code POST /v1/runs "$(body '["sh","-c","exit 4"]' '{"limits":{"memory":"256M"}}')" >/dev/null
t_eq "no limit met: pooled reports what cold reports" "$(verdict body | sed 's/^False/True/')" "$(verdict plain-pooled.json)"
t_eq "...with the same isolation and enforced blocks" True "$(same_blocks plain-pooled.json body)"
t_match "the probe saw the sandbox (seccomp filter, read-only /usr, fresh /tmp)" \
	"Seccomp:.2.*Read-only file system.*tmp-writable" "$(tr '\n' ' ' <pooled.txt)"

# --- the limits moatd holds for a pooled run
code POST /v1/runs "$(body '["sleep","30"]' '{"limits":{"time":"1s"}}')" >/dev/null
t_eq "pooled: the wall limit holds" "True timeout wall" "$(jq_ 'j["pooled"], j["status"], j["limit"]' <body | tr -d "(),'")"
code POST /v1/runs "$(body '["sh","-c","head -c 2000000 /dev/zero; sleep 20"]')" >/dev/null
t_eq "pooled: past the profile's output limit the run ends, its output cut" "True output_limit 1048576 True" \
	"$(jq_ 'j["pooled"], j["status"], j["stdout_bytes"], j["output_truncated"]' <body | tr -d "(),'")"

# --- one request per sandbox: the attack in a row and side by side
pool_ready 2
att="$MOAT_ATTACKS/attack_pool_carryover"
b64=$(base64 -w0 "$att")
run_att() {
	python3 -c 'import json,sys; print(json.dumps({"argv":["sh","-c","cat >/tmp/.attack-$$ && chmod +x /tmp/.attack-$$ && /tmp/.attack-$$"],"stdin_base64":sys.argv[1],"limits":{"time":"20s"}}))' "$b64" >att.json
	c -X POST --data-binary @att.json http://moatd/v1/runs
}
v=""
for i in 1 2 3; do
	pool_ready 2
	v="$v $(run_att | jq_ '"%s:%s" % (j["pooled"], j["stdout"].strip().split(":")[0])')"
done
t_eq "pool_carryover in a row: each run pooled, nothing of the one before" " True:BLOCKED True:BLOCKED True:BLOCKED" "$v"
pool_ready 2
run_att >side1.json &
p1=$!
run_att >side2.json
wait $p1
t_eq "pool_carryover side by side: both pooled, neither sees the other" "True:BLOCKED True:BLOCKED" \
	"$(for f in side1.json side2.json; do jq_ '"%s:%s" % (j["pooled"], j["stdout"].strip().split(":")[0])' <$f; done | tr '\n' ' ' | sed 's/ $//')"

# --- an empty pool: the run still runs, cold
printf 'pool: {code: 1}\noutput_cap: 64K\n' >moatd.yaml
kill "$DPID"; wait "$DPID" 2>/dev/null
start_moatd
pool_ready 1
# Six at once on six connections: the pool holds one; the first takes it,
# the next two wait for the two sandboxes then being made (a request that
# finds the pool empty waits for a refill under way that no earlier one
# waits for), and the rest, finding none, run cold.
body '["true"]' >true.json
pids=()
for i in 1 2 3 4 5 6; do
	c -o "burst$i.json" --data-binary @true.json http://moatd/v1/runs &
	pids+=($!)
done
wait "${pids[@]}"
code POST /v1/runs "$(body '["true"]' '{"profile":"agent"}')" >/dev/null
t_eq "a profile without a pool gets a cold sandbox" "False" "$(jq_ 'j["pooled"]' <body)"
t_eq "...counted as such" "1" "$(metric 'moatd_pool_misses_total{profile=,reason=profile}')"
t_match "with the pool empty, runs get cold sandboxes, and all of them run" "^(True|False)( (True|False)){5}$" \
	"$(for i in 1 2 3 4 5 6; do jq_ 'j["pooled"] if j["status"] == "exited" else j' <burst$i.json; done | tr '\n' ' ' | sed 's/ $//')"
t_match "...some of them cold" "\"pooled\":false" "$(cat burst*.json)"
t_match "misses for an empty pool are counted" "^[1-9]" "$(metric 'moatd_pool_misses_total{profile=code,reason=empty}')"
# The ones after the first found it empty: those that could wait for a
# sandbox being made did, and were pooled (a cold run before).
t_match "requests that found the pool empty waited for a sandbox being made: counted" "^[1-9]" \
	"$(metric 'moatd_pool_waits_total{profile=code}')"
t_match "...and more than the one ready sandbox's request was pooled" "^([2-9]|1[0-9])$" \
	"$(grep -l '"pooled":true' burst*.json | wc -l)"
t_match "hits are counted" "^[1-9]" "$(metric 'moatd_pool_hits_total{profile=code}')"
t_match "start latency histogram" "^[1-9]" "$(metric 'moatd_pool_start_seconds_count{}')"

c http://moatd/metrics >metrics.txt
out=$(python3 "$MOAT_SRC/integration/prom_parse.py" <metrics.txt 2>&1)
t_eq "/metrics with the pool: valid Prometheus text format" 0 $?

# --- no pooled keeper outlives moatd
pool_ready 1
recorded >before.txt
kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
# moatd asked each to stop before it exited; a keeper takes a moment to
# tear its sandbox down.
for _ in $(seq 100); do
	left=0
	while read -r pid sock; do alive "$pid" "$sock" && left=$((left + 1)); done <before.txt
	[ "$left" = 0 ] && break
	sleep 0.1
done
t_eq "an orderly stop ends every pooled keeper" "1 0 0" "$(wc -l <before.txt) $left $(recorded | wc -l)"

# Killed while a pooled run is under way: that sandbox stays recorded too.
start_moatd
pool_ready 1
c --data-binary "$(body '["sleep","30"]')" http://moatd/v1/runs >/dev/null 2>&1 &
cpid=$!
for _ in $(seq 300); do [ "$(metric 'moatd_pool_hits_total{profile=code}')" = 1 ] && break; sleep 0.1; done
recorded >before.txt
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
wait "$cpid"
left=0
while read -r pid sock; do alive "$pid" "$sock" && left=$((left + 1)); done <before.txt
t_eq "after SIGKILL mid-run the taken sandbox's keeper is left, recorded" "1 1" "$(wc -l <before.txt) $left"
start_moatd
pool_ready 1
for _ in $(seq 100); do
	left=0
	while read -r pid sock; do alive "$pid" "$sock" && left=$((left + 1)); done <before.txt
	[ "$left" = 0 ] && break
	sleep 0.1
done
t_eq "the next start stops what the killed moatd left, and refills" "0 1" "$left $(recorded | wc -l)"
# SIGTERM with a cold and a pooled run under way: moatd ends both (the
# cold run's moat process reaped, the pooled sandbox stopped), frees
# what it held for them (a sanitizer build says so below), and exits 0.
c --data-binary "$(body '["sleep","30"]')" http://moatd/v1/runs >/dev/null 2>&1 &
cpid=$!
c --data-binary "$(body '["sleep","30"]' '{"limits":{"memory":"256M"}}')" http://moatd/v1/runs >/dev/null 2>&1 &
cpid2=$!
for _ in $(seq 300); do
	[ "$(metric 'moatd_pool_hits_total{profile=code}')" = 1 ] && pgrep -P "$DPID" -x moat >/dev/null && break
	sleep 0.1
done
kids=$(pgrep -P "$DPID" -x moat | tr '\n' ' ')
recorded >before.txt
kill "$DPID"; wait "$DPID"
t_eq "moatd with a pool ends cleanly on SIGTERM, a cold and a pooled run under way" "0 1" "$? $(wc -w <<<"$kids")"
DPID=""
wait "$cpid" "$cpid2"
gone=0
for p in $kids; do kill -0 "$p" 2>/dev/null || gone=$((gone + 1)); done
for _ in $(seq 100); do
	left=0
	while read -r pid sock; do alive "$pid" "$sock" && left=$((left + 1)); done <before.txt
	[ "$left" = 0 ] && break
	sleep 0.1
done
t_eq "...the cold run's moat ended and reaped, the pooled sandbox's keeper gone" "1 0" "$gone $left"
DPID=""
# moatd under a sanitizer build reports to its stderr: nothing there.
t_nomatch "moatd: no sanitizer report" "AddressSanitizer|LeakSanitizer|runtime error" "$(cat moatd.err 2>/dev/null)"
