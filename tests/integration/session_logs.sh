#!/bin/bash
# A session's audit log (session.h, keeper-audit.h): one per session,
# hash-chained across all its commands: session.start, command.start (argv,
# cwd, who asked) and command.end, session.cp, session.end; `logs` with
# --type and --follow; `show`; create --json's isolation report.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="g$$"
ms() { "$MOAT" session "$@"; }
cleanup() { for n in "$N" "$N-f" "$N-a" "$N-p"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT
jq1() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

created=$(ms create --name "$N" --json 2>err)
t_eq "create: exit 0" "0 " "$? $(cat err)"
log=$(printf '%s' "$created" | jq1 'j["audit_log"]')
t_check "create --json: the session's own audit log exists" test -f "$log"
t_eq "create --json: the isolation report (what was in force)" "True True" \
	"$(printf '%s' "$created" | jq1 'j["isolation"]["pidns"], j["isolation"]["mountns"]' | tr -d '(),')"
ms exec "$N" --cwd /tmp -- sh -c 'exit 3'
ms exec "$N" -- true
echo data >f
ms cp f "$N:/tmp/f" >/dev/null
ms cp "$N:/nonexistent" back 2>/dev/null

types=$(ms logs "$N" | python3 -c "import json,sys; print(' '.join(json.loads(l)['type'] for l in sys.stdin))")
t_match "logs: session.start first, then each command and copy" \
	'^log.start session.start .*command.start .*command.end .*session.cp .*session.cp' "$types"
out=$(ms logs "$N" --type command.start | python3 -c "import json,sys
for l in sys.stdin:
    e=json.loads(l); print(e['argv'][-1], e['cwd'], e['asked_by']['uid'])" | head -2 | tr '\n' ' ')
t_eq "command.start: argv, cwd (given, else the session's), who asked" "exit 3 /tmp $(id -u) true /workspace $(id -u) " "$out"
out=$(ms logs "$N" --type command.end | head -1 | jq1 'j["exit_status"]')
t_eq "command.end: the status" 3 "$out"
out=$(ms logs "$N" --type session.cp | python3 -c "import json,sys
for l in sys.stdin:
    e=json.loads(l); print(e['direction'], e['path'], e['bytes'], e.get('error') is not None)" | tr '\n' ' ')
t_eq "session.cp: direction, path, bytes, and why one failed" "in /tmp/f 5 False out /nonexistent 0 True " "$out"
t_eq "logs --type command: command.start and command.end only" "command.end command.start" \
	"$(ms logs "$N" --type command | python3 -c "import json,sys; print(' '.join(sorted(set(json.loads(l)['type'] for l in sys.stdin))))")"
t_check "the session's log verifies" "$MOAT" audit verify "$log"
sid=$(printf '%s' "$created" | jq1 'j["id"]')
t_eq "every event's session field is the session's own id (docs/audit.md)" "$sid" \
	"$(python3 -c "import json,sys; print(' '.join(sorted({json.loads(l)['session'] for l in open(sys.argv[1])})))" "$log")"

out=$(ms show "$N")
t_eq "show: state, commands run, copies, cp bytes in" "running True 2 5" \
	"$(printf '%s' "$out" | jq1 'j["state"], j["used"]["commands"] >= 2, j["used"]["copies"], j["used"]["cp_in_bytes"]' | tr -d "(),'")"
t_eq "show: the audit head is the log's last event" \
	"$(tail -1 "$log" | jq1 'j["seq"]')" "$(printf '%s' "$out" | jq1 'j["audit_head"]["seq"]')"

# --- --follow: each event as it is written, until session.end
ms create --name "$N-f" >/dev/null
ms logs "$N-f" --follow --type command.start >follow.out &
fp=$!
for _ in $(seq 100); do [ -s follow.out ] && break; ms exec "$N-f" -- true; sleep 0.1; done
ms stop "$N-f"
wait "$fp"
t_eq "logs --follow: exits when the session ends" 0 "$?"
t_match "logs --follow: the events written while it followed" '"type":"command.start"' "$(head -1 follow.out)"

# --- create --audit FILE: the session's log is that one, kept by rm
ms create --name "$N-a" --audit "$MOAT_TDIR/mine.log" >/dev/null
ms exec "$N-a" -- true
ms rm --purge "$N-a"
ms rm --purge "$N" 2>/dev/null
t_eq "create --audit FILE: the log is that file, kept by rm, ending with session.end" "session.end stopped" \
	"$(tail -1 mine.log | jq1 'j["type"], j["reason"]' | tr -d "(),'")"
t_eq "rm: the session's own log goes" "no" "$(test -e "$log" && echo yes || echo no)"

ms logs "nosuch$$" 2>e1
t_eq "logs of an unknown session: 125, one line" "125 1" "$? $(wc -l <e1)"

# --- the agent profile (audit.files): the session's log has its file
# events, from each command's seccomp trail
ms create --name "$N-p" --profile agent >/dev/null 2>e2
t_eq "create --profile agent: exit 0, no note" "0 0" "$? $(grep -c 'no file events' e2)"
ms exec "$N-p" -- true
t_eq "create --profile agent: its log has its commands" 2 "$(ms logs "$N-p" --type command | wc -l)"
ms exec "$N-p" -- cat /etc/hostname >/dev/null
t_eq "create --profile agent: its log has the file a command opened" 1 \
	"$(ms logs "$N-p" --type file.open | grep -c '"path":"/etc/hostname"')"
ms rm --purge "$N-p"
