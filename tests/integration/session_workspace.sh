#!/bin/bash
# A session's workspace (session.h, docs/sessions.md): /workspace is the
# working directory; without --workspace a folder of the session's own that
# outlives stop and rm (rm --purge removes it, never following a link the
# sandbox left in it); with --workspace DIR, that folder. What the sandbox
# writes there is never host root's.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"
# Sessions of this script only (lib.sh): the count of workspace folders
# below is of the ones it made.
private_sessions

N="w$$"
ms() { "$MOAT" session "$@"; }
jget() { python3 -c "import json,sys; v=json.load(sys.stdin)['$1']; print('' if v is None else v)"; }
cleanup() { for n in "$N-p" "$N-d" "$N-q"; do "$MOAT" session rm --purge "$n" >/dev/null 2>&1; done; }
trap cleanup EXIT
# What the sandbox writes on the host is the caller's (rootless) or the
# sandbox's unprivileged uid's (root), never root's.
if is_root; then owner=65534; else owner=$(id -u); fi

# --- the session's own workspace
out=$(ms create --name "$N-p" --json 2>err)
t_eq "create: exit 0" "0 " "$? $(cat err)"
ws=$(printf '%s' "$out" | jget workspace)
t_eq "create --json: a persistent workspace of the session's own" True "$(printf '%s' "$out" | jget workspace_persistent)"
t_check "create --json: its folder exists" test -d "$ws"
out=$(ms exec "$N-p" -- sh -c 'pwd; echo kept > notes; mkdir -p d; echo x > d/y')
t_eq "exec: the working directory is /workspace" "0 /workspace" "$? $out"
t_eq "a file written in /workspace is on the host, not root's" "kept $owner" "$(cat "$ws/notes") $(stat -c %u "$ws/notes")"
ms stop "$N-p"
t_eq "stop: the workspace stays" kept "$(cat "$ws/notes" 2>&1)"
ms rm "$N-p" 2>e1
t_eq "rm: the workspace stays, and rm says where" "0 kept 1" "$? $(cat "$ws/notes" 2>&1) $(grep -c "$ws" e1)"
rm -rf "$ws" 2>/dev/null

# --- rm --purge: removes it all, never through a link the sandbox left
mkdir canary && echo precious >canary/keep && chmod 777 canary
ms create --name "$N-q" >/dev/null 2>&1
wq=$(ms ls --json | python3 -c "import json,sys; print(*[s['workspace'] for s in json.load(sys.stdin) if s['name']=='$N-q'])")
ms exec "$N-q" -- sh -c "mkdir -p a/b && echo z > a/b/c && chmod 500 a/b && ln -s '$MOAT_TDIR/canary' link && ln -s '$MOAT_TDIR/canary/keep' flink"
ms rm --purge "$N-q" 2>e2
t_eq "rm --purge: exit 0, the workspace gone" "0 no" "$? $(test -e "$wq" && echo yes || echo no)"
t_eq "rm --purge: links the sandbox left are removed, not followed" "precious" "$(cat canary/keep 2>&1)"

# --- --workspace DIR
mkdir -p proj && echo src >proj/main.c
# As root the sandbox's uid must be able to write the folder.
chmod 777 proj
out=$(ms create --name "$N-d" --workspace proj --json 2>err)
t_eq "create --workspace: exit 0, the folder's real path, not persistent" "0 $MOAT_TDIR/proj False" \
	"$? $(printf '%s' "$out" | jget workspace) $(printf '%s' "$out" | jget workspace_persistent)"
out=$(ms exec "$N-d" -- sh -c 'cat main.c; echo built > out.o; pwd')
t_eq "--workspace: the folder is /workspace, read-write" "0 src /workspace" "$? $(echo $out)"
t_eq "--workspace: what the sandbox wrote, not root's" "built $owner" "$(cat proj/out.o) $(stat -c %u proj/out.o)"
out=$(ms exec "$N-d" --cwd /tmp -- pwd)
t_eq "exec --cwd still wins" "0 /tmp" "$? $out"
ms rm --purge "$N-d"
t_eq "rm --purge leaves a --workspace folder alone" "src" "$(cat proj/main.c 2>&1)"

# --- bad input
n_before=$(ls "$(dirname "$ws")" 2>/dev/null | wc -l)
ms create --name "$N-x" --workspace nosuch 2>e3
t_eq "create --workspace of a missing folder: 125, one line" "125 1" "$? $(wc -l <e3)"
ms create --name "$N-x" --nosuchoption 2>/dev/null
t_eq "a refused create leaves no workspace behind" "$n_before" "$(ls "$(dirname "$ws")" 2>/dev/null | wc -l)"
t_eq "nothing was made by the refused creates" "" "$(ms ls | grep "$N-x")"
