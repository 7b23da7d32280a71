#!/bin/bash
# moatd (docs/api.md): health, runs with stdin, files and output that is not
# UTF-8, sessions created, listed, exec'd in with NDJSON streamed, audited
# and deleted; bad input answered with the field named (400), bodies over
# the cap (413), unknown routes (404); a client that disconnects mid-exec
# gets its command killed; moatd killed with SIGKILL and restarted finds
# every session usable, and one whose audit log a SIGKILL left ending
# mid-line sets the partial line aside and goes on; /metrics passes a
# strict parser; the Python client
# of examples/api works. Clients are curl and python3 on the unix socket.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

. "$MOAT_SRC/integration/moatd_lib.bash"
N="d$$"
cleanup() {
	moatd_stop
	for n in "$N-a" "$N-k"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done
}
trap cleanup EXIT
cat >moatd.yaml <<'YAML'
max_body: 64K
output_cap: 4K
YAML

t_check "moatd --help" "$MOATD" --help
t_check "moatd --check-config" "$MOATD" --check-config --config moatd.yaml
printf 'sockt: /x\n' >bad.yaml
out=$("$MOATD" --check-config --config bad.yaml 2>&1)
t_eq "--check-config names an unknown field" "1 moatd: bad.yaml: sockt: unknown field" \
	"$? $(printf '%s' "$out" | cut -d'(' -f1 | sed 's/ $//')"

moatd_start
t_eq "moatd answers on its unix socket" 0 $?
t_eq "GET /v1/health" ok "$(c http://moatd/v1/health | jq_ 'j["status"]')"

# --- runs
st=$(code POST /v1/runs '{"argv":["sh","-c","cat; cat /in/data.txt; echo err >&2; exit 3"],"stdin":"from stdin\n","files":[{"path":"/in/data.txt","content":"from a file\n"}],"limits":{"time":"10s"}}')
t_eq "POST /v1/runs: 200" 200 "$st"
t_eq "run: status, exit code, stdout (stdin and a placed file), stderr" \
	"exited 3 'from stdin\nfrom a file\n' 'err\n'" \
	"$(jq_ '" ".join([j["status"], str(j["exit_code"]), repr(j["stdout"]), repr(j["stderr"])])' <body)"
code POST /v1/runs '{"argv":["sh","-c","touch /in/f 2>/dev/null && echo wrote || echo read-only"],"files":[{"path":"/in/f","content_base64":"AA=="}]}' >/dev/null
t_eq "run: a placed file is read-only" "read-only" "$(jq_ 'j["stdout"].strip()' <body)"
code POST /v1/runs '{"argv":["head","-c","3"],"stdin_base64":"/wD+"}' >/dev/null
t_eq "run: binary stdin in, output that is not UTF-8 comes back as base64" "/wD+ False" \
	"$(jq_ 'j["stdout_base64"], "stdout" in j' <body | tr -d "(),'")"
code POST /v1/runs '{"argv":["sh","-c","yes | head -c 100000"]}' >/dev/null
t_eq "run: output past output_cap is cut and says so" "4096 True" \
	"$(jq_ 'len(j["stdout"]), j["stdout_truncated"]' <body | tr -d '(),')"
code POST /v1/runs '{"argv":["sleep","30"],"limits":{"time":"1s"}}' >/dev/null
t_eq "run: a limit from the request holds" "timeout" "$(jq_ 'j["status"]' <body)"

# --- judge: the cases in the body, one NDJSON line per case as they finish
c -X POST -D jhdr -d '{"source":"a, b = map(int, input().split())\nprint(a + b)\n","cases":[{"name":"add","stdin":"1 2\n","expected_stdout":"3\n"},{"name":"wrong","stdin":"2 2\n","expected_stdout":"5\n"}],"limits":{"time":"10s"}}' \
	http://moatd/v1/judge >judge.ndjson
t_check "judge: chunked NDJSON" grep -qi '^transfer-encoding: chunked' jhdr
t_eq "judge: a verdict per case, then the summary" "add:pass wrong:wrong_answer summary:1/2" \
	"$(python3 -c '
import json
ev=[json.loads(l) for l in open("judge.ndjson")]
print(" ".join(e["case"]+":"+e["verdict"] for e in ev if "verdict" in e), "summary:%d/%d" % (ev[-1]["passed"], ev[-1]["total"]))')"
t_eq "judge: bad cases are 400 naming the field" "400 cases" \
	"$(code POST /v1/judge '{"source":"x","cases":[]}') $(jq_ 'j["error"].split(":")[0]' <body)"

# --- a sandbox moatd started cannot reach moatd (tests/attacks/moatd_socket.c)
code POST /v1/runs "{\"policy\":{\"version\":1,\"filesystem\":{\"read_only\":[\"$MOAT_ATTACKS:/attacks\"]}},\"argv\":[\"/attacks/attack_moatd_socket\",\"$SOCK\"]}" >/dev/null
t_eq "attack moatd_socket through moatd: blocked" "0 BLOCKED" \
	"$(jq_ 'str(j["exit_code"])+" "+j["stdout"].split(":")[0]' <body)"

# --- bad input
t_eq "malformed JSON: 400" "400 body" "$(code POST /v1/runs '{"argv":' ) $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "wrong type: 400 naming the field" "400 argv[1]" \
	"$(code POST /v1/runs '{"argv":["ls",7]}') $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "unknown field: 400 naming it" "400 colour: unknown field" \
	"$(code POST /v1/runs '{"argv":["ls"],"colour":"red"}') $(jq_ 'j["error"]' <body)"
t_eq "a bad limit: 400 naming the field" "400 limits.memory" \
	"$(code POST /v1/runs '{"argv":["ls"],"limits":{"memory":"lots"}}') $(jq_ 'j["error"].split(":")[0]' <body)"
head -c 70000 /dev/zero | tr '\0' a >big
st=$(c -o /dev/null -w '%{http_code}' -X POST --data-binary @big http://moatd/v1/runs)
t_eq "a body over max_body: 413" 413 "$st"
t_eq "an unknown route: 404" 404 "$(code GET /v1/nothing)"
t_eq "a known path with another method: 405" 405 "$(code DELETE /v1/runs)"
t_eq "an unknown session: 404" 404 "$(code GET /v1/sessions/no-such-$N)"

# --- sessions
st=$(code POST /v1/sessions "{\"name\":\"$N-a\"}")
t_eq "POST /v1/sessions: 201" 201 "$st"
id=$(jq_ 'j["id"]' <body)
t_match "the session's id" '^[0-9a-f]{24}$' "$id"
t_eq "GET /v1/sessions lists it, running" running \
	"$(c http://moatd/v1/sessions | jq_ "[s['state'] for s in j['sessions'] if s['id']=='$id'][0]")"
t_eq "GET /v1/sessions/NAME" "$id running" "$(c "http://moatd/v1/sessions/$N-a" | jq_ 'j["id"]+" "+j["state"]')"
c -X POST -d '{"argv":["sh","-c","echo one; echo two >&2; echo kept > /tmp/k; exit 5"]}' \
	-D hdr "http://moatd/v1/sessions/$id/exec" >ev
t_check "exec: chunked transfer" grep -qi '^transfer-encoding: chunked' hdr
t_eq "exec: NDJSON events stdout, stderr, exit" "stdout:one stderr:two exit:5" \
	"$(python3 -c '
import json,sys
ev=[json.loads(l) for l in open("ev")]
out=[e["type"]+":"+(e.get("data","").strip() if e["type"]!="exit" else str(e["code"])) for e in ev]
print(" ".join(sorted(out[:-1], key=lambda s: s[:6]!="stdout")+out[-1:]))')"
c -X POST -d '{"argv":["cat","/tmp/k"]}' "http://moatd/v1/sessions/$id/exec" >ev
t_eq "exec: the session keeps its /tmp between commands" "kept" \
	"$(python3 -c 'import json; print("".join(json.loads(l).get("data","") for l in open("ev")).strip())')"
c -X POST -d '{"argv":["cat"],"stdin":"in\n","env":{"X":"y"}}' "http://moatd/v1/sessions/$id/exec" >ev
t_eq "exec: stdin" "in" "$(python3 -c 'import json; print("".join(json.loads(l).get("data","") for l in open("ev")).strip())')"
c -X POST -d '{"argv":["sleep","30"],"time":"1s"}' "http://moatd/v1/sessions/$id/exec" >ev
t_eq "exec: time kills the command when it passes" 137 "$(python3 -c 'import json; print([json.loads(l) for l in open("ev")][-1]["code"])')"
t_eq "exec: bad input is 400 naming the field" "400 argv" \
	"$(code POST "/v1/sessions/$id/exec" '{"argv":[]}') $(jq_ 'j["error"].split(":")[0]' <body)"

# --- session files: session cp's rules behind PUT and GET
printf 'up\x00loaded\n' >up.bin
t_eq "PUT files: 200 with the bytes copied" "200 10" \
	"$(c -o body -w '%{http_code}' -X PUT --data-binary @up.bin "http://moatd/v1/sessions/$id/files?path=/tmp/up.bin") $(jq_ 'j["bytes"]' <body)"
c -X POST -d '{"argv":["od","-c","/tmp/up.bin"]}' "http://moatd/v1/sessions/$id/exec" >ev
t_match "the session sees the uploaded file" 'u +p +\\0 +l' \
	"$(python3 -c 'import json; print("".join(json.loads(l).get("data","") for l in open("ev")))')"
c -X POST -d '{"argv":["sh","-c","printf dl > /tmp/dl; ln -s /etc/shadow /tmp/link"]}' "http://moatd/v1/sessions/$id/exec" >/dev/null
t_eq "GET files: the file's bytes" "200 dl" \
	"$(c -o got -w '%{http_code}' "http://moatd/v1/sessions/$id/files?path=/tmp/dl") $(cat got)"
t_eq "GET files: a link in the session is refused (400)" 400 \
	"$(c -o body -w '%{http_code}' "http://moatd/v1/sessions/$id/files?path=/tmp/link")"
t_eq "GET files: a path that climbs out is refused (400)" 400 \
	"$(c -o body -w '%{http_code}' "http://moatd/v1/sessions/$id/files?path=/tmp/../../../etc/shadow")"
t_eq "files without ?path: 400 naming path" "400 path" \
	"$(c -o body -w '%{http_code}' "http://moatd/v1/sessions/$id/files") $(jq_ 'j["error"].split(":")[0]' <body)"
t_eq "files with a relative path: 400" 400 \
	"$(c -o body -w '%{http_code}' "http://moatd/v1/sessions/$id/files?path=tmp/dl")"

# A client that goes away mid-exec: its command is killed.
mark="moatd-gone-$$"
# curl itself in the background, not a function's subshell, so that the
# kill below reaches the client.
curl -sS --unix-socket "$SOCK" -X POST -d "{\"argv\":[\"sh\",\"-c\",\"exec sleep 300 # $mark\"]}" \
	"http://moatd/v1/sessions/$id/exec" >/dev/null 2>&1 &
cpid=$!
for _ in $(seq 100); do pgrep -f "sleep 300 # $mark" >/dev/null && break; sleep 0.1; done
t_check "the exec's command runs" pgrep -f "sleep 300 # $mark"
kill "$cpid"
wait "$cpid" 2>/dev/null
gone=no
for _ in $(seq 100); do pgrep -f "sleep 300 # $mark" >/dev/null || { gone=yes; break; }; sleep 0.1; done
t_eq "a client that disconnects mid-exec gets its command killed" yes "$gone"

# A client that stops reading a large stream: moatd pauses the command's
# pipes instead of buffering its output.
out=$(python3 - "$SOCK" "$id" "$DPID" <<'PY'
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1])
body = json.dumps({"argv": ["sh", "-c", "head -c 100000000 /dev/zero | tr '\\0' a; echo end"]}).encode()
s.sendall(b"POST /v1/sessions/%s/exec HTTP/1.1\r\nHost: m\r\nContent-Length: %d\r\n\r\n" % (sys.argv[2].encode(), len(body)) + body)
s.recv(100)
time.sleep(3)
rss = int(open("/proc/%s/status" % sys.argv[3]).read().split("VmRSS:")[1].split()[0])
tail = b""
while True:
    d = s.recv(1 << 20)
    if not d: break
    tail = (tail + d)[-200:]
    if b'"type":"exit"' in tail: break
print("bounded" if rss < 64 * 1024 else "rss %d KB" % rss, "exit" if b'"code":0' in tail else "no exit")
PY
)
t_eq "a client that reads slowly costs moatd bounded memory, and still gets all" "bounded exit" "$out"

c "http://moatd/v1/sessions/$id/audit" >audit.jsonl
t_eq "GET audit: JSON Lines with the session's start and its execs" "log.start session.start exec command.start command.end session.cp" \
	"$(python3 -c '
import json
t=[json.loads(l)["type"] for l in open("audit.jsonl")]
print(" ".join(x for i,x in enumerate(t) if x not in t[:i]))')"
t_check "the audit log verifies (its hash chain is whole)" "$MOAT" audit verify audit.jsonl
# A log past 16 MiB (the cap a whole-file read once had) is sent whole,
# not refused nor cut: grow this one with a padding line, then put it back.
alog=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["audit"])' "$STATE/owners/$id.json" 2>/dev/null)
asize=$(stat -c %s "$alog")
head -c $((17 << 20)) /dev/zero | tr '\0' a >>"$alog" && echo >>"$alog"
c "http://moatd/v1/sessions/$id/audit" >big.jsonl
t_check "GET audit: a log over 16 MiB comes whole" cmp -s big.jsonl "$alog"
truncate -s "$asize" "$alog"
rm -f big.jsonl
t_eq "audit: an unknown query is 400" 400 "$(code GET "/v1/sessions/$id/audit?tail=5")"
# ?follow=1 streams what is appended: an exec made while it follows shows.
curl -sS --max-time 60 --unix-socket "$SOCK" -N "http://moatd/v1/sessions/$id/audit?follow=1" >follow.jsonl 2>/dev/null &
fpid=$!
sleep 1
c -X POST -d '{"argv":["echo","followed-marker"]}' "http://moatd/v1/sessions/$id/exec" >/dev/null
seen=no
for _ in $(seq 100); do grep -q followed-marker follow.jsonl && { seen=yes; break; }; sleep 0.1; done
t_eq "audit ?follow=1: an event appended later is streamed" yes "$seen"
kill "$fpid" 2>/dev/null
wait "$fpid" 2>/dev/null

# --- moatd killed and restarted: its sessions live in their keepers.
st=$(code POST /v1/sessions "{\"name\":\"$N-k\"}")
kid=$(jq_ 'j["id"]' <body)
moatd_stop KILL
t_eq "after SIGKILL the session's keeper still answers" 0 \
	"$("$MOAT" session exec "$kid" -- true >/dev/null 2>&1; echo $?)"
moatd_start
t_eq "moatd restarts on the socket a killed moatd left" 0 $?
t_eq "after a restart every session is there and running" "running running" \
	"$(c http://moatd/v1/sessions | jq_ "' '.join(s['state'] for s in j['sessions'] if s['id'] in ('$id','$kid'))")"
t_eq "after a restart the owner is still known" "$(jq_ 'j["owner"]' <body)" \
	"$(c "http://moatd/v1/sessions/$kid" | jq_ 'j["owner"]')"
c -X POST -d '{"argv":["cat","/tmp/k"]}' "http://moatd/v1/sessions/$id/exec" >ev
t_eq "after a restart a session made before is usable, its state kept" "kept" \
	"$(python3 -c 'import json; print("".join(json.loads(l).get("data","") for l in open("ev")).strip())')"

st=$(code DELETE "/v1/sessions/$kid")
t_eq "DELETE a session" "200 True" "$st $(jq_ 'j["deleted"]' <body)"
t_eq "a deleted session is gone" 404 "$(code GET "/v1/sessions/$kid")"

# --- metrics, in a strict parser's eyes (counted since this moatd started)
code POST /v1/runs '{"argv":["sleep","30"],"limits":{"time":"1s"}}' >/dev/null
c http://moatd/metrics >metrics.txt
out=$(python3 "$MOAT_SRC/integration/prom_parse.py" <metrics.txt 2>&1)
t_eq "GET /metrics: valid Prometheus text format" 0 $?
t_match "metrics: running sessions counted" 'moatd_sandboxes\{kind=session,state=running\} [1-9]' "$out"
t_match "metrics: runs by status" 'moatd_runs_total\{status=timeout\} [1-9]' "$out"
t_match "metrics: the keepers' memory" 'moatd_keeper_rss_bytes\{\} [1-9]' "$out"
t_match "metrics: moatd's own memory" 'moatd_rss_bytes\{\} [1-9]' "$out"
t_match "metrics: the run latency histogram" 'moatd_run_seconds_count\{\} [1-9]' "$out"

# --- the API description
t_eq "GET /v1/openapi.json: an OpenAPI 3.1 document" 3.1.0 "$(c http://moatd/v1/openapi.json | jq_ 'j["openapi"]')"

# --- the Python client of examples/api (standard library only)
out=$(python3 "$MOAT_STAGE/examples/api/moatd_client.py" --socket "$SOCK" 2>&1)
t_eq "examples/api/moatd_client.py: create, exec, audit, delete" \
	"ok hello piped in True" \
	"$(printf '%s\n' "$out" | sed -n 's/^health: //p; s/^event: .*"data": "\(hello\)\\n".*/\1/p; s/^stdin round trip: //p; s/^deleted: //p' | tr '\n' ' ' | sed 's/ $//')"
t_eq "examples/api/moatd_client.py: a file in and out, a detached exec polled to its end" \
	"file round trip: 200 200 True|detached: exited 0 later" \
	"$(printf '%s\n' "$out" | grep -E '^(file round trip|detached):' | paste -sd'|')"

st=$(code DELETE "/v1/sessions/$id")
kill "$DPID"
wait "$DPID"
t_eq "moatd ends on SIGTERM" 0 $?
DPID=""
t_check "and removes its socket" test ! -e "$SOCK"

# --- moatd's own audit log across restarts (docs/audit.md): one file, one
# chain; each moatd is a session of its own in it, its seq continuing the
# file's, after a SIGKILL as after an orderly stop.
moatd_start
code POST /v1/runs '{"argv":["true"]}' >/dev/null
moatd_stop
t_check "moatd's audit log verifies after restarts (SIGKILL, SIGTERM)" "$MOAT" audit verify "$STATE/moatd-audit.jsonl"
t_eq "...one log.start, seq continuing across its moatd sessions, each chained to the one before" "1 True True 3" \
	"$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
seq_ok = [e["seq"] for e in ev] == list(range(len(ev)))
linked = all("prev" in e for e in ev[1:])
sessions = []
for e in ev:
    if not sessions or sessions[-1] != e["session"]:
        sessions.append(e["session"])
print(sum(e["type"] == "log.start" for e in ev), seq_ok, linked, len(set(sessions)))
' "$STATE/moatd-audit.jsonl")"

# --- a SIGKILL that cut a line's write() short (docs/audit.md, "Crash
# safety"): the kernel stops a buffered write between pages for a fatal
# signal, leaving the start of the line. No test can aim a SIGKILL at that
# moment, so the cut is made by hand: the last event's first half, as the
# kernel would leave it. moatd, restarted, sets the partial line aside in a
# named file, logs an audit.partial_tail event naming it, and its chain
# goes on: the whole file verifies.
AUD="$STATE/moatd-audit.jsonl"
size0=$(stat -c %s "$AUD")
last=$(tail -n1 "$AUD")
printf '%s' "${last:0:$((${#last} / 2))}" >>"$AUD"
t_match "a log ending mid-line is what verify calls partial" "partial" "$("$MOAT" audit verify "$AUD" 2>&1)"
moatd_start
t_eq "moatd restarts on a log that ends in a partial line" 0 $?
code POST /v1/runs '{"argv":["true"]}' >/dev/null
moatd_stop
t_check "the partial line is set aside, byte for byte, in a file named by its offset" \
	test "$(cat "$AUD.partial-$size0")" = "${last:0:$((${#last} / 2))}"
t_check "moatd's audit log verifies after it" "$MOAT" audit verify "$AUD"
t_eq "an audit.partial_tail event names it, chained where the cut line began, then the calls go on" \
	"$size0 $((${#last} / 2)) $AUD.partial-$size0 api.call" \
	"$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
i = next(i for i, e in enumerate(ev) if e["type"] == "audit.partial_tail")
e = ev[i]
print(e["offset"], e["bytes"], e["moved_to"], ev[-1]["type"] if i < len(ev) - 1 else "-")
' "$AUD")"
t_check "moatd said so on its stderr" grep -q "ended in a partial line, set aside in $AUD.partial-$size0" moatd.err

# --- socket activation (contrib/moatd.socket)
if command -v systemd-socket-activate >/dev/null; then
	systemd-socket-activate -l "$MOAT_TDIR/act.sock" "$MOATD" --state-dir "$STATE" 2>act.err &
	apid=$!
	for _ in $(seq 50); do [ -S "$MOAT_TDIR/act.sock" ] && break; sleep 0.1; done
	t_eq "socket activation: moatd serves the socket systemd passes" ok \
		"$(curl -sS --max-time 30 --unix-socket "$MOAT_TDIR/act.sock" http://m/v1/health | jq_ 'j["status"]')"
	t_check "socket activation: moatd says which socket it serves" grep -q "the socket systemd passed" act.err
	kill "$apid"
	wait "$apid" 2>/dev/null
	t_check "socket activation: the socket stays systemd's" test -S "$MOAT_TDIR/act.sock"
else
	t_skip "socket activation" "no systemd-socket-activate"
fi

# moatd under a sanitizer build reports to its stderr: nothing there.
moatd_no_sanitizer_report
