#!/bin/bash
# A session's isolation report (create --json, show, session.start) is made
# before any command runs; it must say what each command of the session
# gets, as `moat run` reports it for the same policy and as a command in the
# session sees it in its own /proc/self/status: never false, 0 or "none"
# for a layer every command is in fact put under.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="iso$$"
trap '"$MOAT" session rm --purge "$N" >/dev/null 2>&1' EXIT

"$MOAT" session create --name "$N" --json >c.json 2>err
t_eq "create --json: exit 0" "0 " "$? $(cat err)"
"$MOAT" run --result run.json -- true >/dev/null 2>err
t_eq "run: exit 0" "0 " "$? $(cat err)"
iso() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["isolation"], sort_keys=True))' "$1"; }
t_eq "create --json: the isolation is moat run's for the same policy" "$(iso run.json)" "$(iso c.json)"
"$MOAT" session show "$N" >show.json
t_eq "show: the same isolation as create" "$(iso c.json)" "$(iso show.json)"

for k in no_new_privs caps_dropped proc_masked; do
	t_eq "create --json: $k" "True" "$(json c.json "j['isolation']['$k']")"
done
t_match "create --json: seccomp names its profile" "^[a-z]" "$(json c.json "j['isolation']['seccomp']['profile']")"

st=$("$MOAT" session exec "$N" -- cat /proc/self/status)
t_eq "exec: the command has seccomp filter mode" "2" "$(printf '%s\n' "$st" | awk '$1=="Seccomp:"{print $2}')"
t_eq "exec: the command has no_new_privs" "1" "$(printf '%s\n' "$st" | awk '$1=="NoNewPrivs:"{print $2}')"
t_eq "exec: the command has no effective capability" "0000000000000000" \
	"$(printf '%s\n' "$st" | awk '$1=="CapEff:"{print $2}')"
# The kernel's Landlock ABI is what both say; 0 only where the kernel has none.
abi=$(json c.json "j['isolation']['landlock_abi']")
t_eq "create --json: landlock_abi as moat run's" "$(json run.json "j['isolation']['landlock_abi']")" "$abi"
t_eq "create --json: the cgroup is moat run's" "$(json run.json "j['isolation']['cgroup']")" \
	"$(json c.json "j['isolation']['cgroup']")"
