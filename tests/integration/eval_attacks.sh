#!/bin/bash
# moat eval under attack: hostile samples run side by side with correct ones
# (--parallel 4). A sample that plants files and processes for its
# neighbours and looks for theirs (tests/attacks/eval_neighbour.c), forks
# without end, fills memory, floods its output, writes outside its sandbox
# or leaves a process behind must change no other sample's verdict, pass
# itself only when it is correct, and leave the host as it was.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
EX="$MOAT_STAGE/examples/eval"
NEIGHBOUR="$MOAT_ATTACKS/attack_eval_neighbour"
[ -x "$NEIGHBOUR" ] || { t_fail "attack program" "no $NEIGHBOUR"; exit 0; }
MARK="moat-eval-leftover-$$-$RANDOM"
CANARY="$MOAT_TDIR/canary"
echo "canary $RANDOM" >"$CANARY"
chmod 666 "$CANARY"
CANARY_TEXT=$(cat "$CANARY")

python3 - "$MARK" "$CANARY" >samples.jsonl <<'PY'
import json, sys
mark, canary = sys.argv[1], sys.argv[2]
good = "def add(a, b):\n    return a + b\n"
def sample(note, solution, expect_pass=False):
    print(json.dumps({"task_id": "fixture/add", "solution": solution, "note": note, "expect_pass": expect_pass}))
# Passes only when the attack program reports ESCAPED (exit 1).
neighbour = ("import subprocess\nr = subprocess.run(['/attacks/attack_eval_neighbour'], capture_output=True)\n"
             "def add(a, b):\n    return a + b if r.returncode == 1 else a - b\n")
for i in range(4):
    sample("neighbour %d" % i, neighbour)
    sample("correct beside neighbour %d" % i, good, True)
sample("forks without end", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n" + good)
sample("correct after the fork bomb", good, True)
sample("fills memory", "x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n" + good)
sample("correct after the memory hog", good, True)
sample("floods its output", "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n" + good)
sample("correct after the flood", good, True)
# Passes only when one of the writes outside lands.
sample("writes outside", "import os\nok = False\nfor p in (%r, '/usr/moat-evil', '/etc/moat-evil', '/proc/sys/kernel/hostname'):\n"
       "    try:\n        with open(p, 'a') as f:\n            f.write('evil')\n        ok = ok or p != '/tmp'\n    except OSError:\n        pass\n"
       "def add(a, b):\n    return a + b if ok else a - b\n" % canary)
sample("correct after the writer", good, True)
sample("leaves processes behind (and is correct)",
       "import os, subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'exec -a %s /bin/sleep 300'], start_new_session=True)\n"
       "if os.fork() == 0:\n    os.setsid()\n    os.execv('/bin/sh', ['%s', '-c', 'sleep 300'])\n" % (mark, mark) + good, True)
sample("correct after the one that left processes", good, True)
PY

"$MOAT" eval --problems "$EX/problems.jsonl" --samples samples.jsonl --parallel 4 --time 10s --mem 128M --pids 32 \
	--output 1M --ro "$MOAT_ATTACKS:/attacks" --out results.jsonl >summary.out 2>err.out && RC=0 || RC=$?
t_eq "eval under attack: exit 0" 0 "$RC"
t_eq "eval under attack: one line per sample" "$(wc -l <samples.jsonl)" "$(wc -l <results.jsonl 2>/dev/null || echo 0)"
python3 - samples.jsonl results.jsonl >verdicts.txt <<'PY'
import json, sys
S = [json.loads(l) for l in open(sys.argv[1])]
R = [json.loads(l) for l in open(sys.argv[2])]
for s, r in zip(S, R):
    print("%s\t%s\t%s\t%s" % (s["note"], s["expect_pass"], r["passed"], r["result"]))
PY
while IFS=$'\t' read -r note want got result; do
	t_eq "$note: passed=$want ($result)" "$want" "$got"
done <verdicts.txt
t_eq "the host's canary is unchanged" "$CANARY_TEXT" "$(cat "$CANARY")"
t_eq "nothing written under /usr or /etc" "" "$(ls /usr/moat-evil /etc/moat-evil 2>/dev/null)"
t_eq "no neighbour marker on the host" "" "$(ls -d /tmp/moat-eval-neighbour-* /dev/shm/moat-eval-neighbour-* 2>/dev/null)"
# The sandboxes are gone with their processes: nothing carries the mark.
sleep 0.5
t_eq "no process left behind" "" "$(ps -eo pid=,args= | grep -F "$MARK" | grep -v grep || true)"
