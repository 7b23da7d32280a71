#!/bin/bash
# The audit trail: run events, the file and exec trail, verify against each
# kind of tampering, the terminal recording, and a moat killed mid-run.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# Lines of LOG whose type is T, as "path" values (one a line), from the
# seccomp source (SOURCE=fanotify for the other).
paths_of() { # LOG TYPE [PID]
	SOURCE="${SOURCE:-seccomp}" python3 -c '
import json, os, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == sys.argv[2] and (len(sys.argv) < 4 or str(e.get("pid")) == sys.argv[3]) and \
       e.get("source", "seccomp") == os.environ["SOURCE"]:
        print(e.get("path"))' "$@"
}
types_of() { python3 -c 'import json,sys; print(" ".join(sorted({json.loads(l)["type"] for l in open(sys.argv[1])})))' "$1"; }

# --- a run with every run event type -------------------------------------
mkdir -p work
mrun run --audit run.jsonl --audit-files --out "$MOAT_TDIR/work" -- /bin/sh -c \
	'read x < /etc/hostname; echo hi > note.txt; mv note.txt memo.txt; rm memo.txt; /bin/true'
t_eq "a trailed run succeeds" 0 "$RC"
mrun run --audit run.jsonl --time 300ms -- /bin/sleep 5
t_eq "a run that hits the wall limit is appended" 137 "$RC"
mrun audit verify run.jsonl
t_eq "verify accepts the log" 0 "$RC"
t_match "verify counts its events" '^ok: [0-9]+ events, head [0-9a-f]{64}' "$OUT"
t_eq "every run event type is there" \
	"exec file.open file.rename file.unlink file.write limit.hit log.start session.start session.stop" \
	"$(types_of run.jsonl)"
t_eq "one header for two sessions" 1 "$(grep -c '"type":"log.start"' run.jsonl)"
t_eq "two sessions, each closed" 2 "$(grep -c '"type":"session.stop"' run.jsonl)"
t_match "limit.hit names the limit" '"limit":"wall","value":300,"unit":"ms"' "$(grep limit.hit run.jsonl)"
t_match "session.start carries the isolation report" '"isolation":\{"userns":true' "$(grep session.start run.jsonl | head -1)"
t_match "the supervisor logs the exec without the trail" '"type":"exec","path":"/bin/sleep".*"source":"supervisor"' \
	"$(cat run.jsonl)"

# --- the file trail of a known program matches what it did ---------------
# dash opens nothing but its libraries and what its redirections name.
sh_pid=$(python3 -c 'import json,sys
for l in open("run.jsonl"):
    e=json.loads(l)
    if e["type"]=="exec" and e.get("source")=="seccomp" and e["argv"][0]=="/bin/sh": print(e["pid"]); break')
t_eq "the command's exec is seen with its pid inside" 2 "$sh_pid"
t_eq "the shell's own files, in order" "/etc/hostname /out/note.txt" \
	"$(paths_of run.jsonl file.open "$sh_pid" | grep -v -e ld.so -e '\.so' | tr '\n' ' ')$(paths_of run.jsonl file.write "$sh_pid" | tr -d '\n')"
t_match "a relative path is made absolute, and kept as asked" '"path":"/out/note.txt","path_asked":"note.txt"' "$(cat run.jsonl)"
t_match "the rename, both names" '"type":"file.rename","path":"/out/note.txt","path_asked":"note.txt","to":"/out/memo.txt"' "$(cat run.jsonl)"
t_match "the unlink" '"type":"file.unlink","path":"/out/memo.txt"' "$(cat run.jsonl)"
t_match "programs it ran, with argv and parent" '"type":"exec","path":"/usr/bin/mv","argv":\["mv","note.txt","memo.txt"\],"pid":[0-9]+,"host_pid":[0-9]+,"parent":2' "$(cat run.jsonl)"
t_match "an absolute exec path" '"type":"exec","path":"/bin/true","argv":\["/bin/true"\]' "$(cat run.jsonl)"
t_match "write flags by name" '"type":"file.write","path":"/out/note.txt".*"flags":\["O_WRONLY","O_CREAT","O_TRUNC"\]' "$(cat run.jsonl)"
t_nomatch "moat's own setup calls are not the command's" 'moat-init|/proc/self' "$(paths_of run.jsonl file.open)"
# As root, fanotify on the sandbox's mounts reports what the kernel opened.
if is_root && [ ! -d /proc/sys/fs/fanotify ]; then
	t_skip "root: the trail has the fanotify source" "the kernel has no fanotify (CONFIG_FANOTIFY)"
elif is_root; then
	t_match "root: the trail has the fanotify source" '"sources":\["seccomp","fanotify"\]' "$(grep session.stop run.jsonl | head -1)"
	t_eq "root: fanotify saw the shell's files (opened, then closed after writing)" "/etc/hostname /out/note.txt /out/note.txt" \
		"$(SOURCE=fanotify paths_of run.jsonl file.open "$sh_pid" | grep -v -e ld.so -e '\.so' | tr '\n' ' ')$(SOURCE=fanotify paths_of run.jsonl file.write "$sh_pid" | tr -d '\n')"
	t_match "root: and the programs executed" '"type":"exec","path":"/usr/bin/mv","event":"open_exec","source":"fanotify"' "$(cat run.jsonl)"
else
	t_match "rootless: the seccomp source alone, and it says so" '"sources":\["seccomp"\]' "$(grep session.stop run.jsonl | head -1)"
fi
mrun audit show run.jsonl --type file.write
t_eq "show --type filters" "1" "$(printf '%s\n' "$OUT" | grep 'file.write' | grep -c 'source=seccomp')"
t_nomatch "show --type shows nothing else" 'file.open|exec ' "$OUT"
mrun audit show run.jsonl --since 1h-ago --json
t_eq "show --since --json prints every line as it is" "$(wc -l < run.jsonl)" "$(printf '%s\n' "$OUT" | wc -l)"
mrun audit show run.jsonl --since 2999-01-01T00:00:00Z
t_eq "show --since in the future shows nothing" "" "$OUT"

# File names from the sandbox reach the auditor's terminal as text: an ANSI
# escape in one is shown escaped, in both forms of show.
mrun run --audit esc.jsonl --audit-files -- /bin/sh -c 'printf x > "/tmp/$(printf "\033[2J\033]0;owned\007")name"'
t_eq "a file name with terminal escapes is written" 0 "$RC"
mrun audit show esc.jsonl --type file.write
t_match "show prints the escape as text" 'path=/tmp/\\x1b\[2J\\x1b\]0;owned\\x07name' "$OUT"
t_nomatch "show prints no control byte" $'[\x01-\x08\x0b-\x1f\x7f]' "$OUT"
mrun audit show esc.jsonl --json
t_nomatch "show --json prints no control byte" $'[\x01-\x08\x0b-\x1f\x7f]' "$OUT"
t_match "show --json keeps it as JSON" '"/tmp/\\u001[bB]\[2J' "$OUT"

# The trail cannot be diverted: a second listener on the same chain is
# refused by the kernel, so the program cannot answer its own calls.
mkdir -p dv
cat > dv/divert.py <<'PY'
import ctypes
s = ctypes.CDLL("libseccomp.so.2")
s.seccomp_init.restype = ctypes.c_void_p
ctx = ctypes.c_void_p(s.seccomp_init(ctypes.c_uint32(0x7fff0000)))   # SCMP_ACT_ALLOW
s.seccomp_rule_add(ctx, ctypes.c_uint32(0x7fc00000), 257, 0)        # openat -> SCMP_ACT_NOTIFY
print("loaded" if s.seccomp_load(ctx) == 0 else "refused")
PY
chmod -R a+rX dv
mrun run --ro "$MOAT_TDIR/dv:/dv" -- /usr/bin/python3 /dv/divert.py
t_eq "without the trail a program may install its own listener (control)" loaded "$OUT"
mrun run --audit divert.jsonl --audit-files --ro "$MOAT_TDIR/dv:/dv" -- /usr/bin/python3 /dv/divert.py
t_eq "with the trail a second listener is refused" refused "$OUT"

# --- tampering, through the command line ---------------------------------
n=$(wc -l < run.jsonl)
tamper() { # NAME EXPECTED-REGEX SCRIPT
	cp run.jsonl t.jsonl
	python3 -c "$3" t.jsonl
	mrun audit verify t.jsonl
	t_eq "verify: $1 exits 1" 1 "$RC"
	t_match "verify: $1 is named" "$2" "$OUT"
}
tamper "an edited field" '^t.jsonl:4: edited: ' '
import sys; p=sys.argv[1]; L=open(p).readlines(); L[3]=L[3].replace("\"pid\":", "\"pid\": ", 1) if "\"pid\":" in L[3] else L[3].replace("\"type\"", "\"type\" ", 1); open(p,"w").writelines(L)'
tamper "one hex digit of a prev, blamed on its own line" '^t.jsonl:4: edited: this line does not link to line 3 .*line 5 does not link to it' '
import sys; p=sys.argv[1]; L=open(p).readlines(); i=L[3].index("\"prev\":\"")+8; c=L[3][i]; L[3]=L[3][:i]+("1" if c!="1" else "2")+L[3][i+1:]; open(p,"w").writelines(L)'
tamper "an edited seq, blamed on its own line" '^t.jsonl:4: edited: line 5 does not link to this line.*its seq' '
import sys; p=sys.argv[1]; L=open(p).readlines(); L[3]=L[3].replace("\"seq\":3,", "\"seq\":9,", 1); open(p,"w").writelines(L)'
tamper "a removed line" '^t.jsonl:5: removed: seq jumps from 3 to 5' '
import sys; p=sys.argv[1]; L=open(p).readlines(); del L[4]; open(p,"w").writelines(L)'
tamper "two swapped lines" '^t.jsonl:5: reordered: ' '
import sys; p=sys.argv[1]; L=open(p).readlines(); L[4],L[5]=L[5],L[4]; open(p,"w").writelines(L)'
tamper "a line cut in the middle" "^t.jsonl:$n: truncated: partial last line" '
import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b[:-40])'
tamper "a forged appended line" "^t.jsonl:$((n + 1)): forged: " '
import sys, json; p=sys.argv[1]; L=open(p).readlines(); e=json.loads(L[-1]); e["seq"]+=1; e["type"]="exec"; e["prev"]="0"*64
open(p,"a").write(json.dumps(e, separators=(",",":"))+"\n")'
cp run.jsonl t.jsonl
head=$("$MOAT" audit verify run.jsonl | sed -n 's/.*head \([0-9a-f]*\).*/\1/p')
mrun audit verify t.jsonl --head "$head"
t_eq "verify --head: the anchored line is in the chain" 0 "$RC"
sed -i '$d' t.jsonl
mrun audit verify t.jsonl --head "$head"
t_eq "verify --head: a log cut at a line boundary is caught" 1 "$RC"
mrun audit verify
t_eq "verify without a file is a usage error" 125 "$RC"
mrun audit verify nonexistent.jsonl
t_eq "verify of a missing file is a usage error" 125 "$RC"

# A log that ends mid-line is not continued.
cp run.jsonl cut.jsonl
truncate -s -10 cut.jsonl
mrun run --audit cut.jsonl -- /bin/true
t_eq "a truncated log is not appended to" 125 "$RC"
t_match "and the error says so" 'partial line' "$ERR"
ln -s run.jsonl link.jsonl
mrun run --audit link.jsonl -- /bin/true
t_eq "the log is never opened through a symlink" 125 "$RC"

# --- the recording --------------------------------------------------------
mrun run --record out.cast -- /bin/sh -c 'printf "h\303\251llo\n"; sleep 0.2; echo done >&2; sleep 0.2; printf "\342\202"; sleep 0.2; printf "\254\n"'
t_eq "a recorded run succeeds" 0 "$RC"
t_match "a character cut across two reads is held back, not split" '"\\u20ac\\n"|"€\\n"' "$(cat out.cast)"
t_check "the recording is valid asciicast v2" python3 -c '
import json, sys
L = open("out.cast").read().splitlines()
h = json.loads(L[0]); assert h["version"] == 2 and h["width"] > 0 and h["height"] > 0 and "timestamp" in h, h
last = 0
for l in L[1:]:
    t, code, data = json.loads(l); assert code in "oi" and t >= last, l; last = t'
want=$(printf 'h\303\251llo\ndone\n\342\202\254\n')
if command -v asciinema >/dev/null 2>&1; then
	# asciinema reads keys from /dev/tty even for cat: give it a terminal.
	t_eq "asciinema cat plays it back" "$want" \
		"$(script -qec 'asciinema cat out.cast' /dev/null </dev/null 2>&1 | tr -d '\r')"
else
	t_skip "asciinema cat plays it back" "asciinema is not installed (scripts/install-deps)"
fi
mrun replay out.cast --speed 50
t_eq "moat replay plays it back" "$want" "$OUT"
# With -t, the keys typed into the sandbox's terminal are "i" events.
# The keys' stream stays open until the answer is in the recording (for at
# most 30 s): at its end script hangs up the terminal, which on a loaded
# machine could come before the shell inside has answered.
{
	printf 'typed-word\n'
	for _ in $(seq 300); do
		grep -q '"o","got typed-word' tty.cast 2>/dev/null && break
		sleep 0.1
	done
} | script -qec "$MOAT run -t --record tty.cast -- /bin/sh -c 'read a; echo got \$a'" /dev/null >/dev/null 2>&1
t_match "-t records the input" '\[[0-9.]+,"i","typed-word\\n"\]' "$(cat tty.cast 2>/dev/null)"
# The echo of the typed line and the answer may arrive in one read.
t_match "-t records the output" '"o","[^]]*got typed-word' "$(cat tty.cast 2>/dev/null)"
mrun replay --audit run.jsonl --max-idle 0.01 --type session
t_eq "moat replay --audit walks the timeline" 4 "$(printf '%s\n' "$OUT" | grep -c session)"

# --- a moat killed with SIGKILL mid-run -----------------------------------
"$MOAT" run --audit killed.jsonl --audit-files --time 30s -- /bin/sh -c \
	'while :; do read x < /etc/hostname; done' >/dev/null 2>&1 &
mpid=$!
for _ in $(seq 50); do
	[ "$(grep -c file.open killed.jsonl 2>/dev/null)" -gt 20 ] && break
	sleep 0.1
done
kill -KILL "$mpid"
wait "$mpid" 2>/dev/null
mrun audit verify killed.jsonl
t_eq "a log whose writer was killed verifies" 0 "$RC"
t_match "up to its last complete event, and says the session was not closed" \
	'^ok: [0-9]+ events.*note: 1 session\(s\) without session.stop' "$(echo $OUT)"
mrun run --audit killed.jsonl -- /bin/true
t_eq "the next run continues its chain" 0 "$RC"
mrun audit verify killed.jsonl
t_eq "and the whole log still verifies" 0 "$RC"

# --- the log's size cap ---------------------------------------------------
mrun run --audit cap.jsonl --audit-files --audit-max-size 64K -- /bin/sh -c \
	'i=0; while [ $i -lt 3000 ]; do read x < /etc/hostname; i=$((i+1)); done'
t_eq "a run past the log's cap succeeds" 0 "$RC"
t_eq "exactly one audit.overflow" 1 "$(grep -c '"type":"audit.overflow"' cap.jsonl)"
t_check "the log stays near the cap" test "$(stat -c %s cap.jsonl)" -lt $((64 * 1024 + 4096))
t_match "session.stop is still written, and counts what was dropped" '"type":"session.stop".*"audit_dropped":[1-9]' "$(tail -1 cap.jsonl)"
mrun audit verify cap.jsonl
t_eq "a capped log verifies" 0 "$RC"
mrun run --audit cap2.jsonl --audit-max-size 1K -- /bin/true
t_eq "a cap below 64K is refused" 125 "$RC"
t_match "with the range" "out of range \(expected 64K to 1T\)" "$ERR"
mrun policy show --profile code
t_match "the code profile caps the log at 4M" 'max_size: 4M' "$OUT"

# --- the policy's audit section ------------------------------------------
mkdir -p pol
cat > pol/policy.yaml <<'YAML'
version: 1
name: audited
audit: {log: ./policy-run.jsonl, files: true, record: ./policy-run.cast}
YAML
mrun run --policy pol/policy.yaml -- /bin/sh -c 'read x < /etc/hostname; echo done'
t_eq "a policy with an audit section runs" 0 "$RC"
mrun audit verify pol/policy-run.jsonl
t_eq "audit.log is written where the policy says" 0 "$RC"
t_match "audit.files turns the trail on" '"type":"file.open","path":"/etc/hostname"' "$(cat pol/policy-run.jsonl 2>/dev/null)"
t_match "session.start names the policy and its hash" \
	'"policy":"pol/policy.yaml","policy_sha256":"[0-9a-f]{64}"' "$(grep session.start pol/policy-run.jsonl 2>/dev/null)"

# The hash is of the effective policy, flags included, as `moat policy show`
# prints it with the same options (the output paths are the front's, not
# the policy's): a flag changes it, and it is never null.
hash_of() { python3 -c 'import json,sys
print([json.loads(l) for l in open(sys.argv[1]) if "session.start" in l][0]["policy_sha256"])' "$1"; }
mrun run --profile code --mem 64M --audit h1.jsonl -- /bin/true
t_eq "--profile code --mem 64M: session.start has the effective policy's hash" \
	"$("$MOAT" policy show --profile code --mem 64M | sha256sum | cut -d' ' -f1)" "$(hash_of h1.jsonl)"
mrun run --profile code --audit h2.jsonl -- /bin/true
t_eq "--profile code: the hash of the profile as shown" \
	"$("$MOAT" policy show --profile code | sha256sum | cut -d' ' -f1)" "$(hash_of h2.jsonl)"
t_check "a flag changes the hash" [ "$(hash_of h1.jsonl)" != "$(hash_of h2.jsonl)" ]
t_match "audit.record records the terminal" '"o","done' "$(cat pol/policy-run.cast 2>/dev/null)"

# A new log's folder entry is synced once, when the file is made: after a
# crash, the session.start (synced) is in a file the folder still names.
# strace -y shows which file each fsync was of.
if ! command -v strace >/dev/null; then
	t_skip "a new audit log's folder is synced" "strace is not installed"
else
	mkdir -p syncdir
	strace -f -qq -y -e trace=fsync -o sync.txt "$MOAT" run --audit "$MOAT_TDIR/syncdir/new.jsonl" -- /bin/true \
		>/dev/null 2>sync.err </dev/null
	if ! [ -s sync.txt ] && grep -q "Operation not permitted" sync.err; then
		t_skip "a new audit log's folder is synced" "ptrace is not allowed here"
	else
		t_eq "a new audit log: its folder is synced once" 1 \
			"$(grep -c "fsync([0-9]*<$MOAT_TDIR/syncdir>) = 0" sync.txt)"
		t_check "and the log itself" grep -q "fsync([0-9]*<$MOAT_TDIR/syncdir/new.jsonl>) = 0" sync.txt
		strace -f -qq -y -e trace=fsync -o sync2.txt "$MOAT" run --audit "$MOAT_TDIR/syncdir/new.jsonl" -- /bin/true \
			>/dev/null 2>&1 </dev/null
		t_eq "a log appended to: its folder is not synced again" 0 \
			"$(grep -c "fsync([0-9]*<$MOAT_TDIR/syncdir>)" sync2.txt)"
	fi
fi
