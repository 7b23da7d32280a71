#!/bin/bash
# moat session cp (session.h, docs/sessions.md): files and folders in and
# out of a live session, modes kept less setuid/setgid, the sandbox's side
# written as the sandbox's own user, its /tmp limit holding; links, `..`,
# devices, FIFOs refused on both sides; the attacks: links planted in the
# sandbox for a copy in and a copy out, a folder swapped for a link while
# copies run, a link planted in a --rw folder on the host's side.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

N="c$$"
ms() { "$MOAT" session "$@"; }
cleanup() { for n in "$N" "$N-s"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT

mkdir -p rw canary src/sub
# As root the sandbox runs as an unprivileged host uid: what it could
# reach through a followed link must be writable to it for an escape to
# show, and the --rw folder must be open to it.
chmod 777 rw canary
printf 'hello' >src/a
printf 'xyz' >src/sub/b
chmod 4755 src/a
chmod 750 src/sub
SECRET="moat-host-secret-$RANDOM$RANDOM"
printf '%s' "$SECRET" >secret
chmod 644 secret

ms create --name "$N" --tmp-size 2M --rw "$MOAT_TDIR/rw:/rw" --ro "$MOAT_ATTACKS:/attacks" >/dev/null 2>err
t_eq "create: exit 0" "0 " "$? $(cat err)"

# --- in
out=$(ms cp src/a "$N:/tmp/a" 2>&1)
t_eq "cp a file in: exit 0, what moved" "0 1 files, 0 folders, 5 bytes" "$? $out"
out=$(ms exec "$N" -- sh -c 'cat /tmp/a; echo; stat -c "%a %u" /tmp/a; id -u')
set -- $out
t_eq "cp in: the content" hello "$1"
t_eq "cp in: the mode is kept, less the setuid bit" 755 "$2"
t_eq "cp in: the file is the sandbox user's" "$4" "$3"
out=$(ms cp src "$N:/tmp" 2>&1)
t_eq "cp a folder in, into a folder: all of it" "0 2 files, 2 folders, 8 bytes" "$? $out"
t_eq "cp in: the tree and its modes" "hello xyz 750" \
	"$(ms exec "$N" -- sh -c 'cat /tmp/src/a; echo " $(cat /tmp/src/sub/b) $(stat -c %a /tmp/src/sub)"')"

# --- out
mkdir -p back
out=$(ms cp "$N:/tmp/src" back/ 2>&1)
t_eq "cp a folder out: all of it" "0 2 files, 2 folders, 8 bytes" "$? $out"
t_eq "cp out: the tree, the modes (less setuid)" "hello xyz 755 750" \
	"$(cat back/src/a) $(cat back/src/sub/b) $(stat -c %a back/src/a) $(stat -c %a back/src/sub)"
t_eq "cp out: the files are the caller's on the host" "$(id -u)" "$(stat -c %u back/src/a)"
out=$(ms cp "$N:/tmp/a" back/a2 2>&1)
t_eq "cp a file out to a new name" "0 hello" "$? $(cat back/a2)"

# --- bad input: 125, one line, nothing made
ms cp src/a back/x 2>e1
t_eq "cp with no session side: 125, one line" "125 1" "$? $(wc -l <e1)"
ms cp "$N:/tmp/a" "$N:/tmp/b" 2>e2
t_eq "cp with two session sides: 125, one line" "125 1" "$? $(wc -l <e2)"
ms cp src/a "$N:/tmp/../etc/x" 2>e3
t_eq "cp to a path with '..': 125, one line naming it" "125 1 1" "$? $(wc -l <e3) $(grep -c "'\.\.'" e3)"
ms cp src/a "nosuch$$:/tmp/x" 2>e4
t_eq "cp to an unknown session: 125, one line" "125 1" "$? $(wc -l <e4)"
ms cp nosuchfile "$N:/tmp/x" 2>e5
t_eq "cp of a missing file: 125, one line" "125 1" "$? $(wc -l <e5)"
mkfifo hostfifo
ms cp hostfifo "$N:/tmp/x" 2>e6
t_eq "cp in of a FIFO: refused, 125, naming it" "125 1" "$? $(grep -c FIFO e6)"
ms cp /dev/null "$N:/tmp/x" 2>e7
t_eq "cp in of a device: refused, 125, naming it" "125 1" "$? $(grep -c device e7)"
t_eq "nothing was made by the refused copies" "" "$(ms exec "$N" -- ls /tmp/x /tmp/b 2>/dev/null)$(ls back/x 2>/dev/null)"

# --- the session's limits hold: its /tmp is 2M
head -c 3000000 /dev/zero >big
ms cp big "$N:/tmp/big" 2>e8
t_eq "cp in past the session's /tmp size: 125, one line (no space)" "125 1 1" \
	"$? $(wc -l <e8) $(grep -ci 'no space' e8)"
t_eq "nothing is left of the copy stopped by the limit" "" "$(ms exec "$N" -- ls /tmp/big 2>/dev/null)"

# --- attack: links planted in the sandbox for a copy in
out=$(ms exec "$N" -- /attacks/attack_session_cp_links plant-in "$MOAT_TDIR/canary" 2>&1)
t_match "attack session_cp_links: links planted" '^BLOCKED' "$out"
r=""
for dst in /tmp/lnk /tmp/lnk/x /tmp/d/f /tmp/up/tmp/x; do
	ms cp src/a "$N:$dst" 2>/dev/null
	r="$r $?"
done
check=$(ms exec "$N" -- /attacks/attack_session_cp_links check-in 2>&1)
if [ "$r" = " 125 125 125 125" ] && [ -z "$(ls -A canary)" ] && printf '%s' "$check" | grep -q '^BLOCKED'; then
	t_ok "attack session_cp_links (copies in through links planted in the sandbox): blocked"
else
	t_fail "attack session_cp_links (copies in through links planted in the sandbox): blocked" "exits:$r" \
		"canary: $(ls -A canary)" "$check"
fi

# --- attack: links and a FIFO planted for a copy out
ms exec "$N" -- /attacks/attack_session_cp_links plant-out "$MOAT_TDIR/secret" >/dev/null 2>&1
mkdir -p o1 o2 o3
ms cp "$N:/tmp/out" o1/ 2>e9
r1=$?
ms cp "$N:/tmp/leak1" o2/ 2>/dev/null
r2=$?
ms cp "$N:/tmp/fifo" o3/ 2>e10
r3=$?
leaked=$(grep -rl "$SECRET" o1 o2 o3 2>/dev/null)
if [ "$r1 $r2 $r3" = "125 125 125" ] && [ -z "$leaked" ] && [ ! -e o1/out/leak ] && grep -q 'symbolic link' e9 &&
	grep -q FIFO e10; then
	t_ok "attack session_cp_links (copies out through links and a FIFO planted in the sandbox): blocked"
else
	t_fail "attack session_cp_links (copies out through links and a FIFO planted in the sandbox): blocked" \
		"exits: $r1 $r2 $r3" "leaked: $leaked" "$(cat e9 e10)"
fi

# --- attack: a folder swapped for a link (to a host folder) while copies
# in and out run
ms exec "$N" --detach -- /attacks/attack_session_cp_links swap "$MOAT_TDIR/canary" 6 >/dev/null
swapping=no
for _ in $(seq 200); do ms exec "$N" -- test -L /tmp/swl -o -L /tmp/sw 2>/dev/null && swapping=yes && break; sleep 0.05; done
t_eq "attack session_cp_links: the swapping has started" yes "$swapping"
ok=0 refused=0
mkdir -p o4
for i in $(seq 30); do
	if ms cp src/a "$N:/tmp/sw/f$i" >/dev/null 2>&1; then ok=$((ok + 1)); else refused=$((refused + 1)); fi
	ms cp "$N:/tmp/sw" "o4/s$i" >/dev/null 2>&1
done
if [ -z "$(ls -A canary)" ] && [ $((ok + refused)) = 30 ]; then
	echo "# $ok copies landed, $refused refused while /tmp/sw was swapped"
	t_ok "attack session_cp_links (a folder swapped for a link while copies run): blocked"
else
	t_fail "attack session_cp_links (a folder swapped for a link while copies run): blocked" \
		"canary: $(ls -A canary)"
fi

# --- attack: a link planted in a --rw folder on the host's side
ms exec "$N" -- ln -s "$MOAT_TDIR/canary" /rw/x
ms cp "$N:/tmp/a" "$MOAT_TDIR/rw/x/" 2>e11
r1=$?
ms cp "$MOAT_TDIR/rw" "$N:/tmp/rwcopy" 2>e12
r2=$?
if [ "$r1 $r2" = "125 125" ] && [ -z "$(ls -A canary)" ]; then
	t_ok "a copy out through, or in from, a link the sandbox planted in a --rw folder: refused"
else
	t_fail "a copy out through, or in from, a link the sandbox planted in a --rw folder: refused" \
		"exits: $r1 $r2" "canary: $(ls -A canary)" "$(cat e11 e12)"
fi

# --- a stopped session
ms create --name "$N-s" >/dev/null && ms stop "$N-s"
ms cp src/a "$N-s:/tmp/a" 2>e13
t_eq "cp into a stopped session: 125, one line" "125 1" "$? $(wc -l <e13)"
