#!/bin/bash
# moat mcp wrap (docs/mcp.md): real MCP servers from npm (server-filesystem,
# server-everything, server-memory) run in a sandbox and driven through moat
# with the official SDK client (mcp_wrap_client.mjs): allowed calls work,
# denied tools are hidden and refused, approve-gated ones refused, the
# filesystem server cannot read outside what the policy binds even when told
# it may serve "/", and every call is in the audit log, which verifies; and
# malformed messages from either side are refused and logged
# (mcp_wrap_raw.py); a wrapped server reaching outside its allowlist is
# refused by the gateway, and the host's loopback is out of its reach.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

# moat run --direct-stdout, which wrap runs the server with: the command's
# stdout is moat run's own pipe, not captured (so not capped by --output);
# a terminal, a file (tests/attacks/direct_stdout_file.c) or a recording
# is refused.
t_eq "run --direct-stdout: a pipe is the command's stdout, past --output" 100000 \
	"$("$MOAT" run --direct-stdout --output 1K -- sh -c 'head -c 100000 /dev/zero' | wc -c)"
# moat never sees that stdout: its result gives no count of it (null),
# not a false 0, and still counts stderr, which it does relay.
"$MOAT" run --direct-stdout --result direct.json -- sh -c 'echo hello; echo err >&2' 2>/dev/null | cat >/dev/null
t_eq "run --direct-stdout --result: stdout_bytes is null, not 0" None "$(json direct.json "j['stdout_bytes']")"
t_eq "run --direct-stdout --result: stderr_bytes still counted" 4 "$(json direct.json "j['stderr_bytes']")"
"$MOAT" run --direct-stdout -- true >direct.out 2>direct.err
t_eq "run --direct-stdout: a file as stdout is refused (125)" 125 "$?"
t_match "run --direct-stdout: ... saying why" 'must be a pipe' "$(cat direct.err)"
if command -v script >/dev/null; then
	script -qec "'$MOAT' run --direct-stdout -- sh -c 'echo reached; tty'; echo rc=\$?" /dev/null </dev/null >direct.tty 2>&1
	t_match "run --direct-stdout: a terminal as stdout is refused" 'rc=125' "$(cat direct.tty)"
	t_nomatch "run --direct-stdout: ... before the command runs" 'reached' "$(cat direct.tty)"
else
	t_skip "run --direct-stdout: a terminal as stdout is refused" "script (util-linux) is not installed"
fi
"$MOAT" run --direct-stdout --record direct.cast -- true 2>direct.err | cat
t_match "run --direct-stdout: with --record, refused" 'both given' "$(cat direct.err)"
"$MOAT" session create --direct-stdout >/dev/null 2>direct.err
t_match "session create --direct-stdout: refused, not ignored" 'only moat run takes it' "$(cat direct.err)"

# Malformed messages from both sides, with a server of our own (needs no npm).
cat >bad.yaml <<YAML
version: 1
filesystem:
  read_only: ["$MOAT_SRC/integration:/srv/bad"]
network:
  mode: none
limits:
  output: 64M
  wall: 10m
YAML
printf 'tools:\n  default: allow\n  deny: [secret]\n' >tools-bad.yaml
cat >net.yaml <<YAML
version: 1
filesystem:
  read_only: ["$MOAT_SRC/integration:/srv/bad"]
network:
  mode: proxy
  allow:
    - host: example.com
secrets:
  - name: apikey
    from: env:MCP_TEST_SECRET
    env: APIKEY
    inject:
      host: example.com
audit:
  log: $MOAT_TDIR/net-run.log
limits:
  output: 64M
  wall: 10m
YAML
# cap.yaml: limits.output 1M, and a second secret, from a file.
echo "file-secret-$$-$RANDOM$RANDOM" >filekey.txt
cat >cap.yaml <<YAML
version: 1
filesystem:
  read_only: ["$MOAT_SRC/integration:/srv/bad"]
network:
  mode: proxy
  allow:
    - host: example.com
secrets:
  - name: apikey
    from: env:MCP_TEST_SECRET
    env: APIKEY
    inject:
      host: example.com
  - name: filekey
    from: file:$MOAT_TDIR/filekey.txt
    env: FILEKEY
    inject:
      host: example.com
limits:
  output: 1M
  wall: 10m
YAML
MCP_TEST_SECRET="sk-mcp-$$-$RANDOM$RANDOM" timeout 300 python3 "$MOAT_SRC/integration/mcp_wrap_raw.py" "$MOAT" "$MOAT_TDIR" "[$MOAT_MODE] $T_PREFIX: raw" ||
	t_fail "mcp_wrap_raw.py exited $?"

NPM="$MOAT_STAGE/npm/node_modules"
if [ ! -f "$NPM/@modelcontextprotocol/server-filesystem/package.json" ]; then
	t_skip "wrapped MCP servers from npm" "$(cat "$MOAT_STAGE/npm/why" 2>/dev/null || echo "no npm packages staged")"
	exit 0
fi
mkdir -p ws outside
echo "hello from the workspace" >ws/a.txt
echo "host-secret-$$-$RANDOM" >outside/secret.txt
# As root the sandbox user is 65534, which must be able to write the workspace.
is_root && chown -R 65534 ws
for s in fs everything memory; do
	cat >"$s.yaml" <<YAML
version: 1
filesystem:
  read_only: ["$NPM:/srv/node_modules"]
  read_write: ["$MOAT_TDIR/ws:/workspace"]
network:
  mode: none
env:
  MEMORY_FILE_PATH: /workspace/memory.jsonl
limits:
  wall: 10m
  cpu_time: 5m
  memory: 1G
  pids: 256
  output: 64M
approvals:
  timeout: 2s
YAML
done
cat >tools-fs.yaml <<'YAML'
tools:
  default: allow
  deny: [write_file, edit_file, create_directory]
  approve: [move_file]
YAML
cat >tools-everything.yaml <<'YAML'
tools:
  default: deny
  allow: [echo, get-sum]
YAML
cat >tools-memory.yaml <<'YAML'
tools:
  default: allow
  deny: [delete_entities, delete_observations, delete_relations]
YAML
timeout 600 node "$MOAT_SRC/integration/mcp_wrap_client.mjs" "$NPM" "$MOAT" "$MOAT_TDIR" "[$MOAT_MODE] $T_PREFIX" 2>client.err ||
	t_fail "the SDK client exited $?" "$(tail -20 client.err)"

# Approve-gated calls wait for a person (mcp_wrap_approve.mjs): approve,
# deny, timeout, elicitation, and the wrapped server trying to approve its
# own call (the approval_queue attack, run by the server in the sandbox).
mkdir -p aws
is_root && chown -R 65534 aws
for t in "" 2s; do
	cat >"approve${t:+-short}.yaml" <<YAML
version: 1
filesystem:
  read_only: ["$MOAT_SRC/integration:/srv/t", "$MOAT_ATTACKS:/srv/attacks"]
  read_write: ["$MOAT_TDIR/aws:/workspace"]
network:
  mode: none
limits:
  wall: 10m
  output: 64M
${t:+approvals:
  timeout: $t}
YAML
done
printf 'tools:\n  default: allow\n  approve: [send]\n' >tools-approve.yaml
timeout 600 node "$MOAT_SRC/integration/mcp_wrap_approve.mjs" "$NPM" "$MOAT" "$MOAT_TDIR" "$MOAT_ATTACKS" "[$MOAT_MODE] $T_PREFIX: approve" 2>approve.err ||
	t_fail "the SDK client (approvals) exited $?" "$(tail -20 approve.err)"
