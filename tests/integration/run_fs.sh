#!/bin/bash
# moat run: what is visible and what is writable.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

mrun run -- /bin/sh -c 'ls -A /'
# /sys appears only to hold the run's own cgroup, when the run has one.
t_eq "the root holds only what moat built" "bin dev etc lib lib32 lib64 proc sbin tmp usr" "$(echo $OUT | tr '\n' ' ' | sed 's/libx32 //;s/sys //;s/ $//')"
mrun run -- /bin/sh -c 'cd /sys 2>/dev/null && find . -maxdepth 2 | sort | tr "\n" " "'
case "$OUT" in "" | ". ./fs ./fs/cgroup ") t_ok "/sys holds nothing but fs/cgroup" ;;
*) t_fail "/sys holds nothing but fs/cgroup" "actual: $OUT" ;; esac
for d in /home /root /run /var /srv /mnt /boot /sys/class /sys/kernel /sys/devices "$MOAT_TDIR"; do
	mrun run -- /bin/sh -c "ls -d $d"
	t_eq "$d is not visible" 2 "$RC"
done
mrun run -- /bin/cat /etc/shadow
t_eq "/etc/shadow does not exist" 1 "$RC"
mrun run -- /bin/sh -c 'ls /etc/ssl | tr "\n" " "'
t_eq "/etc/ssl holds only certs and openssl.cnf" "certs openssl.cnf " "$OUT"
mrun run -- python3 -c 'import socket; print(socket.getservbyname("https"), socket.getprotobyname("tcp"))'
t_eq "/etc/services and /etc/protocols are carried" "443 6" "$OUT"
if ls -d /etc/java-* >/dev/null 2>&1; then
	j=$(basename "$(ls -d /etc/java-* | head -1)")
	mrun run -- /bin/sh -c "test -r /etc/$j/security/java.security && echo readable; touch /etc/$j/x 2>/dev/null || echo read-only"
	t_eq "/etc/$j is carried, read-only" "$(printf 'readable\nread-only')" "$OUT"
else
	t_na "/etc/java-* is carried" "no Java runtime on this host"
fi
mrun run -- /bin/sh -c 'getent passwd sandbox'
t_match "passwd names the sandbox user" '^sandbox:x:1000:1000' "$OUT"

for p in / /usr /etc /usr/bin /dev; do
	mrun run -- /bin/sh -c "touch $p/moat-probe"
	t_eq "$p is read-only" 1 "$RC"
done
mrun run -- /bin/sh -c 'echo x > /tmp/f && cat /tmp/f'
t_eq "/tmp is writable" x "$OUT"
mrun run --tmp-size 1M -- /bin/sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=4 2>&1; ls -l /tmp/big | awk "{print \$5}"'
t_eq "/tmp is size-limited" 1048576 "$(printf '%s\n' "$OUT" | tail -1)"
mrun run -- /bin/sh -c 'ls /dev | tr "\n" " "'
t_eq "/dev is minimal (and a devpts of its own)" "core fd full null ptmx pts random shm stderr stdin stdout urandom zero " "$OUT"
mrun run -- /bin/sh -c 'head -c 4 /dev/urandom | wc -c; echo x > /dev/null && echo nullok'
t_eq "/dev nodes work" "4 nullok" "$(echo $OUT)"

mkdir -p in out
echo data > in/file.txt
mrun run --ro "$MOAT_TDIR/in:/input" -- /bin/cat /input/file.txt
t_eq "--ro bind is visible" data "$OUT"
mrun run --ro "$MOAT_TDIR/in:/input" -- /bin/sh -c 'echo y > /input/new'
t_eq "--ro bind is read-only" 2 "$RC"
t_check "--ro bind changed nothing on the host" test ! -e in/new
mrun run --ro in:/input -- /bin/cat /input/file.txt
t_eq "--ro relative host path with :PATH" data "$OUT"

mkdir -p rw rwroot
if is_root; then
	mrun run --rw "$MOAT_TDIR/rwroot:/data" -- /bin/true
	t_eq "as root, a --rw source the sandbox user cannot write is refused" 125 "$RC"
	t_match "and the error says how to fix it" "not writable by the sandbox user" "$ERR"
	chown 65534:65534 rw
fi
# As root the sandbox's user (host uid 65534) opens the sources: one
# under a folder it may not search is refused with that folder's name and
# mode, not as a path that changed during setup.
if is_root; then
	mkdir -p closed/sub
	chmod 700 closed
	mrun run --ro "$MOAT_TDIR/closed/sub:/data" -- /bin/true
	t_eq "as root, a --ro source under a 0700 folder of root's is refused" 125 "$RC"
	t_match "and the error names the folder, its mode and its owner" \
		"sub: the sandbox's user \(host uid 65534\) may not search $MOAT_TDIR/closed \(mode 0700, owned by another user\)" "$ERR"
	t_nomatch "and does not say the path changed" "changed while" "$ERR"
fi
mrun run --rw "$MOAT_TDIR/rw:/data" -- /bin/sh -c 'echo w > /data/written'
t_eq "--rw bind is writable" 0 "$RC"
t_eq "--rw writes reach the host" w "$(cat rw/written 2>/dev/null)"

mrun run --out "$MOAT_TDIR/out" -- /bin/sh -c 'pwd; echo result > /out/answer.txt'
t_eq "--out is the default working directory" /out "$OUT"
t_eq "--out persists" result "$(cat out/answer.txt 2>/dev/null)"
owner=$(stat -c %u out/answer.txt 2>/dev/null)
if is_root; then
	t_check "files written to /out are not owned by host root" test "$owner" != 0
else
	t_eq "files written to /out belong to the caller" "$(id -u)" "$owner"
fi

# Binds are nosuid and nodev.
mrun run --rw "$MOAT_TDIR/rw:/data" -- /bin/sh -c 'grep " /data " /proc/self/mounts'
t_match "binds are nosuid,nodev" 'nosuid,nodev' "$OUT"

# A symlink planted in a writable bind must not redirect a later mount
# (runc CVE-2021-30465).
mkdir -p plant
ln -s /etc plant/sub
is_root && chown -h 65534:65534 plant plant/sub
mrun run --rw "$MOAT_TDIR/plant:/w" --ro "$MOAT_TDIR/in:/w/sub" -- /bin/true
t_eq "a mount target through a symlink is refused" 125 "$RC"
t_match "and the error says why" "symbolic link" "$ERR"
# An init that fails its setup at once races the supervisor's start
# messages; what it said must still be the error, every time.
said=0
for _ in $(seq 30); do
	mrun run --rw "$MOAT_TDIR/plant:/w" --ro "$MOAT_TDIR/in:/w/sub" -- /bin/true
	case "$ERR" in *"symbolic link"*) said=$((said + 1)) ;; esac
done
t_eq "an init's setup error is reported, never a broken pipe (30 tries)" 30 "$said"

# Output directory hygiene: what the run leaves in /out cannot hurt the host.
mkdir -p hyg
mrun run --out "$MOAT_TDIR/hyg" --result "$MOAT_TDIR/h.json" -- /bin/sh -c '
	ln -s /etc/shadow /out/abs; ln -s ../../x /out/up; ln -s sub/f /out/ok
	mkfifo /out/fifo; mkdir /out/sub; touch /out/sub/f; chmod 4755 /out/sub/f; chmod g+s /out/sub
	python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"/out/sock\")"'
t_check "an absolute symlink in /out is removed" test ! -L hyg/abs
t_check "a climbing symlink in /out is removed" test ! -L hyg/up
t_check "a FIFO in /out is removed" test ! -e hyg/fifo
t_check "a socket in /out is removed" test ! -e hyg/sock
t_check "a descending symlink in /out is kept" test -L hyg/ok
t_eq "setuid bits in /out are cleared" 755 "$(stat -c %a hyg/sub/f)"
t_eq "setgid directories in /out are cleared" 755 "$(stat -c %a hyg/sub)"
# Where Landlock runs, the FIFO and the socket are refused when they are made
# (no MAKE_FIFO or MAKE_SOCK in /out), so only the two links reach the clean-up.
removed=4
[ "$(json h.json 'j["isolation"]["landlock_abi"]')" -gt 0 ] && removed=2
t_eq "the result reports the clean-up" "$removed 2" "$(json h.json 'str(j["out_sanitized"]["removed"])+" "+str(j["out_sanitized"]["modes_fixed"])')"
