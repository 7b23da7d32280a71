#!/bin/bash
# moat run: time limit, process lifetime, descriptors, network.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

marker="moat-test-marker-$$-$RANDOM"
# What a run that does nothing takes here and now.
base=$(baseline_ms "$MOAT" run -- /bin/true)
start=$(date +%s%N)
mrun run --time 1s --result "$MOAT_TDIR/t.json" -- /bin/sh -c "setsid sh -c 'exec -a $marker sleep 300' & (sh -c 'exec -a $marker-2 sleep 300' &) ; sleep 300"
end=$(date +%s%N)
t_eq "--time kills: status timeout" timeout "$(json t.json 'j["status"]')"
t_eq "--time kills: exit 137" 137 "$RC"
t_eq "--time kills: limit named" wall "$(json t.json 'j["limit"]')"
ms=$(( (end - start) / 1000000 ))
# The 1 s limit, 2 s of grace and four plain runs; the sleeps would keep a
# run that waited for them for 300 s.
bound=$((3000 + 4 * base))
t_check "--time 1s returns within ${bound} ms (took ${ms} ms; a plain run ${base} ms)" test "$ms" -lt "$bound"
# The pattern's first letter in brackets keeps pgrep from matching itself.
t_check "no setsid'd or double-forked process outlives the run" sh -c "! pgrep -f '[m]${marker#m}' >/dev/null"

# Only stdin, stdout and stderr cross (runc CVE-2024-21626).
exec 7</etc/hostname 8>"$MOAT_TDIR/leak"
mrun run -- /bin/sh -c 'ls /proc/self/fd | tr "\n" " "'
exec 7<&- 8>&-
t_eq "no descriptor of the caller leaks in" "0 1 2 3 " "$OUT"

# The network namespace holds only loopback, and nothing outside answers.
mrun run -- /bin/sh -c 'cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
t_eq "only loopback exists" lo "$OUT"
python3 -c '
import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
open(sys.argv[1],"w").write(str(s.getsockname()[1]))
s.settimeout(8)
try:
    c,_=s.accept(); open(sys.argv[1]+".hit","w").write("hit")
except Exception: pass
' "$MOAT_TDIR/port" &
lpid=$!
for _ in $(seq 50); do [ -s "$MOAT_TDIR/port" ] && break; sleep 0.1; done
port=$(cat "$MOAT_TDIR/port")
mrun run -- python3 -c "
import socket
s=socket.socket(); s.settimeout(2)
try:
    s.connect(('127.0.0.1',$port)); print('connected')
except OSError as e: print('refused')"
t_eq "a host loopback listener is unreachable" refused "$OUT"
kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null
t_check "the host listener saw nothing" test ! -e "$MOAT_TDIR/port.hit"

# A process inside cannot see or signal host processes.
sleep 60 &
spid=$!
mrun run -- /bin/sh -c "kill -9 $spid; echo \$?; ls /proc | grep -c '^[0-9]'"
t_check "a host process survives kill from inside" kill -0 "$spid"
kill "$spid"; wait "$spid" 2>/dev/null
mrun run -- /bin/sh -c 'ps -e -o pid= 2>/dev/null | wc -l || ls /proc | grep -c "^[0-9]"'
t_match "only the run's processes are visible" '^ *[1-4]$' "$OUT"

# Ctrl-C reaches the command.
( "$MOAT" run -- /bin/sh -c 'trap "echo got-int; exit 7" INT; sleep 10 & wait' > "$MOAT_TDIR/int.out" 2>&1; echo $? > "$MOAT_TDIR/int.rc" ) &
bg=$!
sleep 0.7
kill -INT "$(pgrep -P "$bg")" 2>/dev/null
wait "$bg"
t_eq "SIGINT is forwarded to the command" "got-int 7" "$(cat "$MOAT_TDIR/int.out") $(cat "$MOAT_TDIR/int.rc")"

# Output is capped and the run stopped.
"$MOAT" run --output 1000 --result "$MOAT_TDIR/o.json" -- /bin/sh -c 'yes | head -c 100000; sleep 5' > o.out 2>/dev/null
t_eq "--output caps the bytes kept" 1000 "$(wc -c < o.out)"
t_eq "--output: status output_limit" output_limit "$(json o.json 'j["status"]')"
t_eq "--output: truncated" True "$(json o.json 'j["output_truncated"]')"
