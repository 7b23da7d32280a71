#!/bin/bash
# moat doctor: the verdict agrees with itself and with what a run enforces.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR" || exit 1

mrun doctor
DOCTOR="$OUT"
t_match "doctor names every layer" "user namespaces.*seccomp.*landlock.*cgroup limits" "$(printf '%s' "$OUT" | tr '\n' ' ')"
if printf '%s' "$OUT" | grep -q '^code profile: fully enforced'; then
	t_eq "exit 0 when the code profile is fully enforced" 0 "$RC"
	t_nomatch "no fix is printed when all is enforced" "^ +(missing|partial) .*(user namespaces|seccomp|landlock|cgroup limits)" "$OUT"
else
	t_eq "exit 1 when the code profile is not fully enforced" 1 "$RC"
fi
# Every line that is not ok is followed by its fix.
bad=$(printf '%s\n' "$OUT" | awk '/^  (missing|partial) /{want=1; next} want && !/fix: /{print; exit} {want=0}')
t_eq "every missing or partial line has a fix" "" "$bad"

# The Landlock ABI the doctor finds is the one a run reports using.
abi=$(printf '%s\n' "$OUT" | sed -n 's/.*landlock *ABI \([0-9]*\):.*/\1/p')
mrun run --result "$MOAT_TDIR/r.json" -- /bin/true
run_abi=$(json "$MOAT_TDIR/r.json" 'j["isolation"]["landlock_abi"]')
t_eq "doctor and run agree on the Landlock ABI" "${abi:-0}" "$run_abi"
run_seccomp=$(json "$MOAT_TDIR/r.json" 'bool(j["isolation"]["seccomp"])')
if printf '%s\n' "$DOCTOR" | grep -q '^  ok  *seccomp'; then
	t_eq "seccomp is in force when the doctor says it is available" True "$run_seccomp"
fi
t_eq "capabilities are dropped in a run" True "$(json "$MOAT_TDIR/r.json" 'j["isolation"]["caps_dropped"]')"

# As an unprivileged user on a host without a delegated cgroup, the doctor
# must not claim the code profile is enforced.
if ! is_root && printf '%s\n' "$DOCTOR" | grep -q 'cgroup limits.*memory no'; then
	t_match "unprivileged without cgroups is not fully enforced" "NOT fully enforced" "$DOCTOR"
fi

# The doctor and a run agree on transparent egress: where the doctor says
# it works, a run gets it; where it says missing, a run fails at setup
# naming nf_tables (and the feature counts as missing: a failure in CI).
"$MOAT" run --net transparent -- true >/dev/null 2>"$MOAT_TDIR/t.err" && trc=0 || trc=$?
if printf '%s\n' "$DOCTOR" | grep -q '^  ok  *transparent egress'; then
	t_eq "transparent egress runs where the doctor says it works" 0 "$trc"
else
	t_match "transparent egress fails at setup, naming nf_tables, where the doctor says missing" "nf_tables" "$(cat "$MOAT_TDIR/t.err")"
	t_skip "transparent egress on this host" "$(printf '%s\n' "$DOCTOR" | grep 'transparent egress')"
fi

mrun doctor --bogus
t_eq "an unknown argument is a usage error" 125 "$RC"
