#!/bin/bash
# The file trail's attacks: every attack_trail_* program from $MOAT_ATTACKS
# runs inside moat with an audit log and the file trail, and a check passes
# only when the log says what the program did and no more: the checks below,
# one per attack, read the log (tests/integration/attacks.sh runs every other
# attack; these cannot judge themselves from inside).
set -u
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

SRCDIR="$MOAT_SRC/attacks"

# check_NAME LOG: prints what is wrong, nothing when the trail held.
py() { python3 - "$@"; }

check_thread_swap() {
	local fan=no
	is_root && [ -d /proc/sys/fs/fanotify ] && fan=yes
	py "$1" "$fan" "$2" <<'PY'
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
fan = [e for e in ev if e.get("source") == "fanotify" and e["type"] == "file.open" and e.get("path") == "/tmp/hidden-secret"]
ev = [e for e in ev if e.get("source") == "seccomp"]
opens = [e for e in ev if e["type"] in ("file.open", "file.write") and
         str(e.get("path", "")).startswith(("/tmp/innocent", "/tmp/hidden"))]
hidden = int(re.search(r"hidden file (\d+) times", sys.argv[3]).group(1))
creates = [e for e in opens if e["type"] == "file.write"]
reads = [e for e in opens if e["type"] == "file.open"]
bad = [e for e in reads if e.get("reliability") != "racy"]
if len(reads) < 1000:
    print("only %d opens of the swapped path logged" % len(reads))
elif bad:
    print("%d open(s) from a two-threaded caller claim a reliable path, e.g. %s" % (len(bad), bad[0]["path"]))
elif [e for e in creates if "reliability" in e]:
    print("the single-threaded creates were marked unreliable")
elif sys.argv[2] == "yes" and len(fan) != hidden + 1:
    # As root, fanotify reports what the kernel opened: the create and
    # every open that the swap sent to the hidden file.
    print("fanotify reported %d opens of the hidden file; the program made %d" % (len(fan), hidden + 1))
PY
}

check_unreadable() {
	py "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
hits = [e for e in ev if e["type"].startswith("file.") and e.get("reliability") == "unreadable"]
nulls = [e for e in ev if e["type"].startswith("file.") and "path" in e and e["path"] is None]
if nulls:
    print("a path logged as null")
elif len(hits) != 1 or "path" in hits[0]:
    print("expected one file event marked unreadable, without a path; got %d" % len(hits))
PY
}

check_unwatched_calls() {
	py "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
want = [("file.truncate", "truncate", "/tmp/t-file", {"length": 3}),
        ("file.link", "link", "/tmp/t-file", {"to": "/tmp/t-hard"}),
        ("file.link", "linkat", "/tmp/t-file", {"to": "/tmp/t-hard2"}),
        ("file.symlink", "symlink", "/tmp/t-sym", {"target": "t-file"}),
        ("file.symlink", "symlinkat", "/tmp/t-sym2", {"target": "t-file"}),
        ("file.mkdir", "mkdir", "/tmp/t-dir", {"mode": "0700"}),
        ("file.mkdir", "mkdirat", "/tmp/t-dir2", {"mode": "0711"}),
        ("file.chmod", "chmod", "/tmp/t-file", {"mode": "0640"}),
        ("file.chmod", "fchmodat", "/tmp/t-file", {"mode": "0604"})]
for t, sc, path, extra in want:
    m = [e for e in ev if e["type"] == t and e.get("syscall") == sc and e.get("path") == path and
         all(e.get(k) == v for k, v in extra.items()) and e.get("source") == "seccomp"]
    if len(m) != 1:
        print("%s %s %s %s: %d event(s)" % (t, sc, path, extra, len(m)))
        break
PY
}

check_argv_huge() {
	py "$1" <<'PY'
import hashlib, json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
args = [b"/bin/true"] + [bytes([ord("a") + i]) * 100000 for i in range(12)]
joined = b"".join(a + b"\0" for a in args)
ex = [e for e in ev if e["type"] == "exec" and e.get("path") == "/bin/true"]
if len(ex) != 1:
    print("expected one exec of /bin/true, got %d" % len(ex))
else:
    e = ex[0]
    head = "".join(a + "\0" for a in e.get("argv", []))[:4096]
    if e.get("argv_sha256") != hashlib.sha256(joined).hexdigest():
        print("argv_sha256 %s is not the argv's" % e.get("argv_sha256"))
    elif e.get("argc") != 13 or e.get("argv_bytes") != len(joined) or not e.get("argv_truncated"):
        print("argc/argv_bytes/argv_truncated wrong: %s" % {k: e.get(k) for k in ("argc", "argv_bytes", "argv_truncated")})
    elif e["argv"][0] != "/bin/true" or e["argv"][1] != "a" * (4096 - 10):
        print("the first 4 KiB are not the argv's")
PY
}

check_exec_chain() {
	py "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ex = [e for e in ev if e["type"] == "exec" and "attack_trail_exec_chain" in " ".join(e.get("argv", [])[:1])]
folded = [e for e in ev if e["type"] == "exec" and e.get("tried")]
if len(ex) != 31 or folded:
    print("31 programs ran; %d exec events, %d with folded attempts %s" %
          (len(ex), len(folded), folded[0]["tried"] if folded else ""))
PY
}

check_log_flood() {
	local size
	size=$(stat -c %s "$1")
	[ "$size" -le $((4 * 1024 * 1024 + 8192)) ] || echo "the log grew to $size bytes"
	[ "$(grep -c '"type":"audit.overflow"' "$1")" = 1 ] || echo "not exactly one audit.overflow"
	tail -1 "$1" | grep -q '"type":"session.stop".*"audit_dropped":[1-9]' || echo "no session.stop counting the dropped events"
}

check_ansi_name() {
	local out
	out=$("$MOAT" audit show "$1" 2>&1; "$MOAT" audit show "$1" --json 2>&1)
	if printf '%s' "$out" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]'; then
		echo "audit show printed a control character"
	fi
	printf '%s' "$out" | grep -q 'looks-fine' || echo "the file is not in the trail"
}

if is_root && [ ! -d /proc/sys/fs/fanotify ]; then
	t_skip "trail_thread_swap: fanotify's count of the opens" "the kernel has no fanotify (CONFIG_FANOTIFY)"
fi

n=0
for bin in "$MOAT_ATTACKS"/attack_trail_*; do
	[ -x "$bin" ] || continue
	name="${bin##*/attack_trail_}"
	n=$((n + 1))
	src="$SRCDIR/trail_$name.c"
	case "$(head -1 "$src" 2>/dev/null)" in "/* ATTACK: "*" | LAYER: "*" | REF: "*" */") ;; *)
		t_fail "trail_$name: header" "first line must be /* ATTACK: ... | LAYER: ... | REF: ... */"
		continue ;;
	esac
	if ! declare -F "check_$name" >/dev/null; then
		t_fail "trail_$name" "no check_$name in $(basename "$0")"
		continue
	fi
	# A second line "/* RUN: moat options */" adds options (a limit the
	# attack needs loosened, under a sanitizer's slowness too).
	opts=$(sed -n '2s|^/\* RUN: \(.*\) \*/$|\1|p' "$src")
	log="$MOAT_TDIR/trail-$name.jsonl"
	rm -f "$log"
	# shellcheck disable=SC2086
	timeout -k 5 120 "$MOAT" run --ro "$MOAT_ATTACKS:/attacks" --audit "$log" --audit-files $opts \
		-- "/attacks/attack_trail_$name" >"$MOAT_TDIR/stdout" 2>"$MOAT_TDIR/err" </dev/null && RC=0 || RC=$?
	verdict=$(grep -E '^(DONE|ERROR): ' "$MOAT_TDIR/stdout" | tail -1)
	problem=""
	if [ "$RC" != 0 ] || [ "${verdict%%:*}" = ERROR ]; then
		problem="exit $RC, ${verdict:-no verdict}, stderr: $(head -c 300 "$MOAT_TDIR/err")"
	elif ! "$MOAT" audit verify "$log" >/dev/null 2>&1; then
		problem="the log does not verify: $("$MOAT" audit verify "$log" 2>&1 | head -1)"
	else
		problem=$("check_$name" "$log" "$verdict" 2>&1)
	fi
	if [ -z "$problem" ]; then
		t_ok "trail_$name: the trail held (${verdict#DONE: })"
	else
		t_fail "trail_$name" "$problem"
	fi
done
[ "$n" -ge 7 ] && t_ok "trail attacks: $n" || t_fail "trail attacks: only $n found (at least 7)"
