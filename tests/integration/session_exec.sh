#!/bin/bash
# moat session exec's options (session.h, docs/sessions.md): -t on a
# terminal (window size, keystrokes, signals; session_pty.py plays the
# terminal), -i, --result (moat run's result JSON for one command, never
# written through a link the session planted), --detach.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="x$$"
ms() { "$MOAT" session "$@"; }
cleanup() { for n in "$N" "$N-r" "$N-x" "$N-u"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT

mkdir -p rw canary
# As root, the sandbox runs as an unprivileged host uid: the writable bind
# must be open to it.
chmod 777 rw
ms create --name "$N" --rw "$MOAT_TDIR/rw:/rw" --ro "$MOAT_ATTACKS:/attacks" >/dev/null 2>err
t_eq "create: exit 0" "0 " "$? $(cat err)"

# A session's commands get the umask its creator had, as `moat run`'s get
# their caller's (the keeper's own 077 stays the keeper's).
(umask 027 && ms create --name "$N-u" >/dev/null 2>err)
t_eq "umask: a session made under umask 027 gives its commands 0027, as moat run does" "0027 0027" \
	"$(ms exec "$N-u" -- sh -c umask 2>&1) $(umask 027 && "$MOAT" run -- sh -c umask 2>&1)"
ms rm --purge "$N-u" >/dev/null 2>&1

# --- -t and -i on a terminal
while IFS= read -r line; do
	case "$line" in
	"ok "*) t_ok "${line#ok }" ;;
	"fail "*) t_fail "${line#fail }" ;;
	*) t_fail "session_pty.py: unexpected output" "$line" ;;
	esac
done < <(python3 "$MOAT_SRC/integration/session_pty.py" "$MOAT" "$N" 2>&1)

out=$(ms exec -t "$N" -- sh -c 'tty; exit 4' </dev/null)
rc=$?
t_match "-t without a terminal of the caller's: the command has one of its own" '^/dev/pts/[0-9]+' "$out"
t_eq "-t without a terminal of the caller's: its status" 4 "$rc"

# The keeper ignores SIGPIPE, and the exec's caller may ignore more: the
# command starts with every disposition at its default.
out=$(trap '' INT QUIT USR1; ms exec "$N" -- sh -c 'cat /proc/self/status | grep -E "^Sig(Ign|Cgt|Blk):" | tr -s "\t" " "')
t_eq "a command starts with no signal ignored, caught or blocked" \
	"$(printf 'SigBlk: 0000000000000000\nSigIgn: 0000000000000000\nSigCgt: 0000000000000000')" "$out"

out=$(printf 'a\nb\n' | ms exec -i "$N" -- wc -l)
t_eq "-i: piped input is the command's" "0 2" "$? $(echo $out)"
out=$(printf 'a\nb\n' | ms exec "$N" -- wc -l)
t_eq "without -i: the command's input is /dev/null" "0 0" "$? $(echo $out)"

# A command that ends at once still hands its terminal out (its end and
# its start may be read together).
bad=0
for _ in $(seq 20); do ms exec -t "$N" -- true </dev/null >/dev/null 2>&1 || bad=$((bad + 1)); done
t_eq "-t: twenty commands that end at once each get their terminal" 0 "$bad"

# --- --result: the command's own wall, CPU, memory peak and output bytes
ms exec "$N" --result r1.json -- sh -c 'printf 12345; printf 123 >&2; exit 3' >o1 2>e1
t_eq "--result: exec still exits with the command's status, output as it came" "3 12345 123" "$? $(cat o1) $(cat e1)"
t_eq "--result: status, code, output bytes, exit status" "exited 3 5 3 3" \
	"$(json r1.json 'j["status"], j["exit_code"], j["stdout_bytes"], j["stderr_bytes"], j["exit_status"]' | tr -d "(),'")"
t_eq "--result: wall and CPU are numbers" "True True" \
	"$(json r1.json 'isinstance(j["wall_ms"], int), isinstance(j["cpu_ms"], int)' | tr -d "(),'")"
# The memory peak is the command's own, never the init's: the kernel
# carries the resident peak of the init's memory (a command starts in it)
# into the command's at execve, so a command smaller than the init gets
# none (null), and a bigger one its own, which grows by what it touches.
ms exec "$N" --result rt.json -- /bin/true
t_eq "--result: /bin/true claims no memory peak (rusage's would be the init's)" None "$(json rt.json 'j["memory_peak_bytes"]')"
if ms exec "$N" -- python3 -c pass 2>/dev/null; then
	# Both above any init's peak (a sanitizer build's init is bigger).
	ms exec "$N" --result rp0.json -- python3 -c 'b = b"\x01" * (64 << 20)'
	ms exec "$N" --result rp50.json -- python3 -c 'b = b"\x01" * (114 << 20)'
	p0=$(json rp0.json 'j["memory_peak_bytes"]')
	p50=$(json rp50.json 'j["memory_peak_bytes"]')
	if [ "$p0" != None ] && [ "$p50" != None ] && [ $((p50 - p0)) -ge $((48 << 20)) ] &&
		[ $((p50 - p0)) -le $((56 << 20)) ]; then
		t_ok "--result: touching 50 MB more raises the peak by about 50 MB ($p0 -> $p50)"
	else
		t_fail "--result: touching 50 MB more raises the peak by about 50 MB" "$p0 -> $p50"
	fi
else
	t_skip "--result: touching 50 MB raises the peak by about 50 MB" "no python3 in the session"
fi
t_eq "--result: names the session and the command, claims no isolation of its own" "True True False" \
	"$(json r1.json 'len(j["session"]) == 24, j["command"] > 0, "isolation" in j' | tr -d "(),'")"
ms exec "$N" --result r2.json --time 1s -- sleep 60 2>/dev/null
t_eq "--result with --time passed: timeout, the wall limit, 137" "137 timeout wall 137 1000" \
	"$? $(json r2.json 'j["status"], j["limit"], j["exit_status"], j["enforced"]["wall"]["limit"]' | tr -d "(),'")"
out=$(ms exec "$N" --result - -- true)
t_eq "--result -: the JSON on stdout" "exited" "$(printf '%s' "$out" | json /dev/stdin 'j["status"]')"
ms exec "$N" -t --result r3.json -- sh -c 'printf abc' </dev/null >/dev/null 2>e5
t_eq "-t --result: what came through the terminal is counted" "0 3" "$? $(json r3.json 'j["stdout_bytes"]' 2>&1 | tail -1)$(cat e5)"

# --- attack: a session command plants a link where the next --result goes
out=$(ms exec "$N" --env "MOAT_CANARY_DIR=$MOAT_TDIR/canary" -- /attacks/attack_host_result_link 2>&1)
ms exec "$N" --result "$MOAT_TDIR/rw/d/result.json" -- true 2>e2
rc=$?
if [ "$rc" = 125 ] && [ -z "$(ls canary)" ] && printf '%s' "$out" | grep -q '^BLOCKED'; then
	t_ok "attack host_result_link (in a session, then exec --result through it): blocked"
else
	t_fail "attack host_result_link (in a session, then exec --result through it): blocked" "exit $rc" \
		"$out" "$(cat e2)" "canary: $(ls canary)"
fi

# --- --detach: the command runs on after exec has returned
out=$(ms exec --detach "$N" -- sh -c 'sleep 1; echo done > /tmp/detached')
rc=$?
t_match "--detach: exit 0 at once, printing the command's id" '^0 [0-9]+$' "$rc $out"
got=""
for _ in $(seq 300); do
	got=$(ms exec "$N" -- cat /tmp/detached 2>/dev/null) && [ -n "$got" ] && break
	sleep 0.1
done
t_eq "--detach: the command ran to its end after exec returned" done "$got"
ms exec --detach -t "$N" -- true 2>e3
t_eq "--detach -t: 125, one line" "125 1" "$? $(wc -l <e3)"
ms exec --result "" "$N" -- true 2>e4
t_eq "--result '': 125, one line" "125 1" "$? $(wc -l <e4)"

# --- create --record: each -t exec is recorded (asciicast v2), and the log
# names the file; an exec without -t is not
ms create --name "$N-r" --record >/dev/null 2>err
t_eq "create --record: exit 0" "0 " "$? $(cat err)"
ms exec -t "$N-r" -- sh -c 'echo recorded-$((6*7))' </dev/null >/dev/null
ms exec "$N-r" -- true
recs=$(ms logs "$N-r" --type command.start | python3 -c "import json,sys
for l in sys.stdin:
    print(json.loads(l).get('record') or '-')" | tr '\n' ' ')
rec=${recs%% *}
t_match "create --record: the log names the -t exec's recording, not the other's" '^/.*\.cast -$' "$(echo $recs)"
t_eq "the recording is asciicast v2 with the command's output" "2 True" \
	"$(python3 -c "import json,sys
lines=open(sys.argv[1]).read().splitlines()
h=json.loads(lines[0]); ev=[json.loads(l) for l in lines[1:]]
print(h['version'], any(e[1]=='o' and 'recorded-42' in e[2] for e in ev))" "$rec" 2>&1)"
ms rm --purge "$N-r"
t_eq "rm: the recordings go with the session" "no" "$(test -e "$rec" && echo yes || echo no)"

# --- attacks on the runtime's binary from a session's command: the init is
# the keeper's own process (moat's binary), never entered from the host
for a in proc_1_exe_write proc_self_exe_write; do
	out=$(ms exec "$N" -- "/attacks/attack_$a" 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q '^BLOCKED'; then
		t_ok "attack $a (in a session): blocked"
	else
		t_fail "attack $a (in a session): blocked" "exit $rc" "$out"
	fi
done

# --- execs racing a stop: every exec ends (its command's status, killed,
# or refused), none hangs, nothing is left running
ms create --name "$N-x" >/dev/null
secs="93$$"
pids=""
for i in $(seq 8); do
	ms exec "$N-x" -- sleep "$secs" >/dev/null 2>&1 &
	pids="$pids $!"
done
ms exec "$N-x" -- true >/dev/null 2>&1
ms stop "$N-x" &
stopper=$!
for i in $(seq 8); do ms exec "$N-x" -- sleep "$secs" >/dev/null 2>&1 & pids="$pids $!"; done
codes=""
for p in $pids; do
	wait "$p"
	codes="$codes $?"
done
wait "$stopper"
t_eq "execs racing a stop: each one ends, killed (137) or refused (125)" "" \
	"$(printf '%s\n' $codes | grep -vxE '137|125')"
left=0
for _ in $(seq 100); do
	left=$(pgrep -c -f "^sleep $secs\$")
	[ "$left" = 0 ] && break
	sleep 0.1
done
t_eq "execs racing a stop: nothing is left running" 0 "$left"
t_match "execs racing a stop: the session is stopped" "$N-x +dead .*stopped" "$(ms ls)"
