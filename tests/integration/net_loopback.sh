#!/bin/bash
# TCP on the sandbox's own loopback: servers and clients inside work (test
# suites, language servers, local web servers), a closed port is refused as
# on any host, and that loopback reaches nothing of the host's or of another
# sandbox's. The servers here are started by this script, on loopback.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

ECHO='
import errno, socket, sys
fam, addr = (socket.AF_INET6, "::1") if sys.argv[1] == "6" else (socket.AF_INET, "127.0.0.1")
s = socket.socket(fam); s.bind((addr, 0)); s.listen()
c = socket.create_connection((addr, s.getsockname()[1])); a, _ = s.accept()
c.sendall(b"ping"); a.sendall(a.recv(4)[::-1]); print(c.recv(4).decode())
port = s.getsockname()[1]; s.close()
try:
    socket.create_connection((addr, port), timeout=5); print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))'
for p in code agent; do
	mrun run --profile "$p" -- python3 -c "$ECHO" 4
	t_eq "[$p] a TCP server and client on 127.0.0.1 talk; a closed port is ECONNREFUSED" "$(printf 'gnip\nECONNREFUSED')" "$OUT"
	mrun run --profile "$p" -- python3 -c "$ECHO" 6
	t_eq "[$p] the same on ::1" "$(printf 'gnip\nECONNREFUSED')" "$OUT"
done
mrun run --net proxy -- python3 -c "$ECHO" 4
t_eq "with --net proxy too" "$(printf 'gnip\nECONNREFUSED')" "$OUT"

# A server on the host's loopback: inside, its port is free (the sandbox's
# loopback is another one) and a connection reaches the sandbox's own server,
# never the host's.
python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.settimeout(30)
while True:
    try:
        c, _ = s.accept()
    except OSError:
        break
    open(sys.argv[1] + ".hit", "a").write("hit\n"); c.sendall(b"host"); c.close()
' "$MOAT_TDIR/hostport" &
HOSTSRV=$!
for _ in $(seq 100); do [ -s hostport ] && break; sleep 0.1; done
HP=$(cat hostport)
SAME='
import socket, sys
p = int(sys.argv[1])
try:
    socket.create_connection(("127.0.0.1", p), timeout=5); print("reached")
except OSError as e:
    print("refused")
s = socket.socket(); s.bind(("127.0.0.1", p)); s.listen()
c = socket.create_connection(("127.0.0.1", p), timeout=5); a, _ = s.accept(); a.sendall(b"mine")
print(c.recv(4).decode())'
mrun run -- python3 -c "$SAME" "$HP"
t_eq "the host's loopback server is unreachable; its port is the sandbox's own" "$(printf 'refused\nmine')" "$OUT"
mrun run --net proxy -- python3 -c "$SAME" "$HP"
t_eq "the same with --net proxy" "$(printf 'refused\nmine')" "$OUT"
t_check "the host's server is alive" kill -0 "$HOSTSRV"
t_check "the host's server saw no connection" test ! -e hostport.hit

# Two sandboxes: one listens, the other cannot reach it, nor can the host.
# The host reads the port from /out while the run goes on: the folder is
# bound in place (no --disk or --inodes cap, which would make /out a tmpfs
# copied out only after the run).
mkdir -p outa
"$MOAT" run --out "$MOAT_TDIR/outa" --disk unlimited --inodes unlimited --time 60s -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open("/out/port.tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename("/out/port.tmp", "/out/port")
s.settimeout(20)
try:
    c, _ = s.accept(); open("/out/hit", "w").write("hit")
except OSError:
    pass' >/dev/null 2>&1 &
SBA=$!
for _ in $(seq 150); do [ -s outa/port ] && break; sleep 0.1; done
AP=$(cat outa/port 2>/dev/null)
if [ -z "$AP" ]; then
	t_fail "a sandbox's loopback server started" "no port in /out"
else
	mrun run -- python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $AP), timeout=5); print('reached')
except OSError as e:
    print('refused')"
	t_eq "another sandbox's loopback server is unreachable" refused "$OUT"
	host=$(python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $AP), timeout=5); print('reached')
except OSError:
    print('refused')")
	t_eq "and the host cannot reach it either" refused "$host"
fi
kill "$SBA" 2>/dev/null
wait "$SBA" 2>/dev/null
t_check "the sandbox's server saw no connection" test ! -e outa/hit
kill "$HOSTSRV" 2>/dev/null
wait "$HOSTSRV" 2>/dev/null
exit 0
