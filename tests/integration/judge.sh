#!/bin/bash
# moat judge: grading passing, failing, crashing and hostile submissions,
# stdin style and function style, Python and JavaScript; verdicts, figures,
# case order under --parallel, exit statuses and refused input.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
EX="$MOAT_STAGE/examples/judge"
# Staging folders land here, so the test can see that none is left behind.
export TMPDIR="$MOAT_TDIR/tmp"
mkdir -p "$TMPDIR"

# verdicts FILE: the verdicts of the case lines, space-separated.
verdicts() {
	python3 -c 'import json,sys
print(" ".join(json.loads(l)["verdict"] for l in open(sys.argv[1]) if "summary" not in json.loads(l)))' "$1"
}
# jl FILE N EXPR: evaluates EXPR on line N (1-based; -1 is the summary).
jl() {
	python3 -c 'import json,sys
j=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - (1 if int(sys.argv[2]) > 0 else 0)])
print(eval(sys.argv[3]))' "$1" "$2" "$3"
}
judge() { # OUTFILE ARGS...: runs moat judge, keeping stdout in OUTFILE.
	local f="$1"
	shift
	"$MOAT" judge "$@" >"$f" 2>"$MOAT_TDIR/.err" && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# --- stdin-style cases -------------------------------------------------------
judge ok.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_correct.py"
t_eq "correct Python: exit 0" 0 "$RC"
t_eq "correct Python: every case passes" "pass pass pass pass pass" "$(verdicts ok.out)"
t_eq "correct Python: one line per case and a summary" 6 "$(wc -l <ok.out)"
t_eq "summary counts" "5 5 0" "$(jl ok.out -1 '"%d %d %d" % (j["total"], j["passed"], j["failed"])')"
t_eq "case lines carry the run's figures" True \
	"$(jl ok.out 1 'all(k in j for k in ("wall_ms","cpu_ms","memory_peak_bytes","status","exit_code","stdout_bytes")) and j["wall_ms"] > 0')"
t_eq "the summary carries the isolation" True "$(jl ok.out -1 'j["isolation"]["pidns"] and j["isolation"]["netns"]')"

judge wrong.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_wrong.py"
t_eq "wrong Python: exit 1" 1 "$RC"
t_eq "wrong Python: the negative cases fail" "pass wrong_answer wrong_answer pass pass" "$(verdicts wrong.out)"
t_eq "wrong answer says where" 'line 3: expected "0\n", got "1\n"' "$(jl wrong.out 2 'j["detail"]')"

judge crash.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_crash.py"
t_eq "crashing Python: exit 1" 1 "$RC"
t_eq "crashing Python: runtime_error even where the printed answer was right" \
	"runtime_error runtime_error runtime_error runtime_error runtime_error" "$(verdicts crash.out)"
t_match "runtime error quotes stderr" 'ZeroDivisionError|Traceback' "$(jl crash.out 1 'j["detail"]')"

# The same program given as a command, with its folder bound read-only.
judge cmd.out --tests "$EX/sum_cases.jsonl" --ro "$EX:/ex" -- /usr/bin/python3 /ex/sum_correct.py
t_eq "-- COMMAND: every case passes" "pass pass pass pass pass" "$(verdicts cmd.out)"

# Case "args" reach the command; per-case compare modes.
cat >args.jsonl <<'EOF'
{"name": "argv", "args": ["a b", "c"], "expected_stdout": "a b|c\n"}
{"name": "numeric", "args": ["0.3333334"], "expected_stdout": "0.333333", "compare": "numeric", "tolerance": 1e-6}
{"name": "numeric-far", "args": ["0.34"], "expected_stdout": "0.333333", "compare": "numeric", "tolerance": 1e-6}
EOF
judge args.out --tests args.jsonl -- /bin/sh -c 'IFS="|"; echo "$*"' sh
t_eq "args and compare modes" "pass pass wrong_answer" "$(verdicts args.out)"

# Node.js reserves about 800 MB of address space at start; generous memory
# keeps this test about the judge, not about limits.
if [ -x /usr/bin/node ]; then
	judge js.out --tests "$EX/sum_cases.jsonl" --mem 1G --source "$EX/sum_correct.js"
	t_eq "JavaScript stdin style: every case passes" "pass pass pass pass pass" "$(verdicts js.out)"
else
	t_skip "JavaScript stdin style" "no /usr/bin/node (apt-get install nodejs)"
fi

# --- function cases ----------------------------------------------------------
judge fn.out --tests "$EX/solve_cases.jsonl" --source "$EX/solve_correct.py"
t_eq "function cases, correct Python: exit 0" 0 "$RC"
t_eq "function cases, correct Python: all pass" "pass pass pass pass pass" "$(verdicts fn.out)"
t_eq "the submission's own prints are counted, not judged" True "$(jl fn.out 1 'j["other_stdout_bytes"] >= 0')"

judge fnw.out --tests "$EX/solve_cases.jsonl" --source "$EX/solve_wrong.py"
t_eq "function cases, wrong Python: exit 1" 1 "$RC"
t_eq "function cases, wrong Python: verdicts" "wrong_answer wrong_answer pass wrong_answer wrong_answer" "$(verdicts fnw.out)"
t_eq "structural comparison names the path" '$[0]: expected 0, got 2' "$(jl fnw.out 1 'j["detail"]')"

if [ -x /usr/bin/node ]; then
	judge fnjs.out --tests "$EX/solve_cases.jsonl" --mem 1G --source "$EX/solve_correct.js"
	t_eq "function cases, JavaScript (plain, exported and async functions)" "pass pass pass pass pass" "$(verdicts fnjs.out)"
else
	t_skip "function cases, JavaScript" "no /usr/bin/node (apt-get install nodejs)"
fi

cat >raise.py <<'EOF'
def solve(nums, target):
    raise ValueError("no idea")
def mean(xs):
    import sys
    sys.exit(0)
def stats(xs):
    return float("nan")
EOF
judge raise.out --tests "$EX/solve_cases.jsonl" --source raise.py
t_eq "exceptions, sys.exit and NaN are runtime errors" \
	"runtime_error runtime_error runtime_error runtime_error runtime_error" "$(verdicts raise.out)"
t_eq "the exception is reported" "ValueError: no idea" "$(jl raise.out 1 'j["detail"]')"

# --- hostile submissions -----------------------------------------------------
judge fake.out --tests "$EX/solve_cases.jsonl" --source "$EX/fake_verdict.py"
t_eq "fake verdicts and a stolen nonce: exit 1" 1 "$RC"
t_nomatch "fake verdicts: nothing passes" 'pass' "$(verdicts fake.out)"
t_match "a second tagged line is caught as tampering" 'tampered' "$(jl fake.out 1 'j["detail"]')"
t_eq "the submission's prints never reach judge's output" 6 "$(wc -l <fake.out)"

judge fake2.out --tests "$EX/sum_cases.jsonl" --source "$EX/fake_verdict.py"
t_eq "fake verdict as stdout: all wrong_answer" \
	"wrong_answer wrong_answer wrong_answer wrong_answer wrong_answer" "$(verdicts fake2.out)"
t_eq "fake verdict as stdout: exit 1" 1 "$RC"

# The expected value never enters the sandbox: a submission searching every
# file it can read, its environment and its stdin for it finds nothing.
marker="expected-marker-$$-$RANDOM$RANDOM"
printf '{"name": "secret", "call": {"function": "hunt", "args": []}, "expected": "%s"}\n' "$marker" >secret.jsonl
cat >hunt.py <<'EOF'
import os, sys
def hunt():
    # Built, so that the source itself (readable at /judge) holds no copy.
    needle = b"expected" + b"-marker-"
    found = []
    paths = [os.path.join(r, f) for top in ("/judge", "/tmp", "/etc", "/out") for r, _, fs in os.walk(top) for f in fs]
    paths += ["/proc/%s/%s" % (p, f) for p in ("self", "1") for f in ("cmdline", "environ")]
    for p in paths:
        try:
            with open(p, "rb") as fh:
                if needle in fh.read(1 << 20):
                    found.append(p)
        except OSError:
            pass
    if needle in sys.stdin.buffer.read():
        found.append("stdin")
    if any(needle in v.encode() for v in os.environ.values()):
        found.append("environ")
    return found or "not found"
EOF
judge hunt.out --tests secret.jsonl --source hunt.py
t_eq "the expected value is nowhere inside" "\$: expected \"$marker\", got \"not found\"" "$(jl hunt.out 1 'j["detail"]')"

printf '{"name": "loop", "stdin": "", "expected_stdout": "x"}\n' >loop.jsonl
# What grading one quick case takes here and now.
printf 'print("x")\n' >quick.py
base=$(baseline_ms "$MOAT" judge --tests loop.jsonl --source quick.py)
start=$(date +%s%N)
judge loop.out --tests loop.jsonl --time 1s --source "$EX/infinite_loop.py"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
t_eq "infinite loop: timeout" timeout "$(verdicts loop.out)"
t_eq "infinite loop: exit 1" 1 "$RC"
# The 1 s limit, 3 s of grace and four quick gradings.
bound=$((4000 + 4 * base))
t_check "infinite loop ends within ${bound} ms (took ${ms} ms; a quick case ${base} ms)" test "$ms" -lt "$bound"

# A policy file shapes every case's sandbox; one with a writable folder is
# refused, since cases must not share state.
printf 'version: 1\nname: grader\nlimits: {wall: 1s}\n' >grader.yaml
judge pol.out --tests loop.jsonl --policy grader.yaml --source "$EX/infinite_loop.py"
t_eq "--policy limits apply to every case" timeout "$(verdicts pol.out)"
mkdir -p shared
printf 'version: 1\nname: shared\nfilesystem:\n  read_write: [%s]\n' "$MOAT_TDIR/shared" >shared.yaml
judge polrw.out --tests "$EX/sum_cases.jsonl" --policy shared.yaml --source "$EX/sum_correct.py"
t_eq "a policy with a writable folder is refused" 125 "$RC"
t_match "the refusal names the folder" 'writable bind' "$ERR"
# A secret read from a variable that is not set: one error naming it
# (judge_secrets.sh tests secrets in cases).
printf 'version: 1\nname: sec\nsecrets:\n  - {name: tok, from: "env:MOAT_T_JUDGE_SECRET", env: TOK, inject: {host: api.example.test}}\n' >sec.yaml
judge sec.out --tests "$EX/sum_cases.jsonl" --policy sec.yaml --source "$EX/sum_correct.py"
t_eq "a secret whose variable is unset is refused" 125 "$RC"
t_match "the refusal names the secret and the variable" 'secrets.tok: the variable MOAT_T_JUDGE_SECRET is not set' "$ERR"

printf '{"name": "flood", "stdin": "", "expected_stdout": "y\\n", "limits": {"output": "64K"}}\n' >flood.jsonl
judge flood.out --tests flood.jsonl -- /usr/bin/yes
t_eq "output flood: output_limit" output_limit "$(verdicts flood.out)"

# Fork bombs and memory hogs run only where moat holds them: a probe first
# asks moat to stop something harmless, and the hostile example runs only
# when it did.
# hostile NAME PROBE EXAMPLE LIMITS VERDICTS CGROUP_VERDICT: the verdict must
# match VERDICTS, and be CGROUP_VERDICT when a cgroup enforced the limit.
hostile() {
	local name="$1" probe="$2" example="$3" limits="$4" want="$5" want_cg="$6" v
	if [ "$(json "$probe" 'j["status"] != "exited" or j["exit_code"] != 0')" != True ]; then
		t_skip "$name" "moat does not enforce this limit here ($(json "$probe" 'j["isolation"].get("cgroup_note", j["isolation"]["cgroup"])'))"
		return
	fi
	printf '{"name": "%s", "stdin": "", "expected_stdout": "", "limits": %s}\n' "$name" "$limits" >"$name.jsonl"
	judge "$name.out" --tests "$name.jsonl" --source "$EX/$example"
	v=$(verdicts "$name.out")
	t_match "$name: stopped with an honest verdict ($v)" "^($want)\$" "$v"
	t_eq "$name: exit 1" 1 "$RC"
	if [ "$(json "$probe" 'j["isolation"]["cgroup"]')" != none ]; then
		t_eq "$name under a cgroup: $want_cg" "$want_cg" "$v"
	fi
}
"$MOAT" run --pids 8 --result "$MOAT_TDIR/pprobe.json" -- /bin/sh -c \
	'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 2 & done; wait' >/dev/null 2>&1
hostile fork-bomb pprobe.json fork_bomb.py '{"pids": 16, "time": "5s"}' 'pids_limit|timeout|runtime_error' pids_limit
"$MOAT" run --mem 48M --result "$MOAT_TDIR/mprobe.json" -- /usr/bin/python3 -c \
	'b = bytearray(200 << 20); b[::4096] = b"x" * len(b[::4096])' >/dev/null 2>&1
hostile memory-hog mprobe.json memory_hog.py '{"mem": "64M", "time": "10s"}' 'oom|runtime_error' oom

# --- order, parallelism, refusals --------------------------------------------
judge par.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_wrong.py" --parallel 4
t_eq "--parallel 4: the same verdicts" "pass wrong_answer wrong_answer pass pass" "$(verdicts par.out)"
t_eq "--parallel 4: lines in case order" "0 1 2 3 4" \
	"$(python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["index"]) for l in open(sys.argv[1]) if "summary" not in l))' par.out)"
judge p0.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_correct.py" --parallel 0
t_eq "--parallel 0 is refused" 125 "$RC"
judge p9.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_correct.py" --parallel 100000
t_eq "--parallel beyond CPUs x 4 is refused" 125 "$RC"
t_match "--parallel names the cap" 'CPUs x 4' "$ERR"

printf '{"name": "a", "expected_stdout": "1"}\n{"name": "b", "stdn": "1", "expected_stdout": "1"}\n' >bad.jsonl
judge bad.out --tests bad.jsonl -- /bin/true
t_eq "bad cases file: exit 125" 125 "$RC"
t_match "bad cases file: file and line named" 'bad.jsonl:2: unknown key "stdn"' "$ERR"
t_eq "bad cases file: nothing runs" 0 "$(wc -c <bad.out)"
judge nosrc.out --tests "$EX/solve_cases.jsonl" -- /bin/true
t_eq "function cases without --source: exit 125" 125 "$RC"
judge out.out --tests "$EX/sum_cases.jsonl" --out "$MOAT_TDIR" --source "$EX/sum_correct.py"
t_eq "--out is refused (cases must not share state)" 125 "$RC"
judge lang.out --tests "$EX/sum_cases.jsonl" --source "$EX/sum_cases.jsonl"
t_eq "unknown source language: exit 125" 125 "$RC"
judge lang2.out --tests "$EX/sum_cases.jsonl" --lang python --source "$EX/sum_correct.py"
t_eq "--lang python" 0 "$RC"
judge none.out --tests "$MOAT_TDIR/missing.jsonl" -- /bin/true
t_eq "missing cases file: exit 125" 125 "$RC"
t_eq "no staging folder is left behind" "" "$(ls "$TMPDIR")"
