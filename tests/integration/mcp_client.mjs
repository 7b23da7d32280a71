// Drives `moat mcp serve` with the official MCP TypeScript SDK client and
// prints one TAP line per check. Usage: node mcp_client.mjs SDK_DIR MOAT POLICY LABEL
import { execFileSync } from 'node:child_process';

const [sdkDir, moat, policy, label] = process.argv.slice(2);
const { Client } = await import(`${sdkDir}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdkDir}/dist/esm/client/stdio.js`);

let failed = 0;
const ok = (cond, name, detail) => {
	if (cond) console.log(`ok - ${label}: ${name}`);
	else {
		failed++;
		console.log(`not ok - ${label}: ${name}`);
		if (detail !== undefined) console.log(`#   ${JSON.stringify(detail).slice(0, 2000)}`);
	}
};

// With MCP_URL and MCP_TOKEN set, over Streamable HTTP to a server the
// caller started; else over stdio to one started here.
const url = process.env.MCP_URL;
let transport;
if (url) {
	const { StreamableHTTPClientTransport } = await import(`${sdkDir}/dist/esm/client/streamableHttp.js`);
	let refused;
	try {
		const bad = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: 'Bearer wrong-token-0123456789' } } });
		await new Client({ name: 'bad', version: '1' }).connect(bad);
	} catch (e) { refused = e; }
	ok(refused && /bearer token is required/.test(String(refused)), 'http: a wrong bearer token is refused', String(refused));
	transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } } });
} else
	transport = new StdioClientTransport({
		command: moat, args: ['mcp', 'serve', '--policy', policy], stderr: 'inherit', env: process.env,
	});
const client = new Client({ name: 'moat-test', version: '1.0.0' });
await client.connect(transport);
ok(client.getServerVersion()?.name === 'moat', 'initialize: the server names itself', client.getServerVersion());

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
ok(JSON.stringify(names) === JSON.stringify(['run_code', 'session_create', 'session_exec', 'session_list_files',
	'session_read_file', 'session_stop', 'session_write_file']), 'tools/list: the seven tools', names);
ok(tools.every((t) => t.inputSchema?.type === 'object'), 'tools/list: each has an input schema');

const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);
const sc = (r) => r.structuredContent ?? {};

let r = await call('run_code', { language: 'python', code: 'import sys\nprint(6*7)\nprint(sys.stdin.read().upper(), end="")', stdin: 'abc' });
ok(!r.isError && sc(r).status === 'exited' && sc(r).exit_code === 0 && sc(r).stdout === '42\nABC', 'run_code python: output, stdin, status', r);
ok(r.content?.[0]?.type === 'text' && JSON.parse(r.content[0].text).stdout === '42\nABC', 'run_code: the structured output as text too', r.content);

r = await call('run_code', { language: 'javascript', code: 'const fs = require("fs"); console.log(fs.readFileSync("/src/data.txt", "utf8").trim() + "!"); process.exit(4)', files: { 'data.txt': 'files work\n' } });
ok(!r.isError && sc(r).stdout === 'files work!\n' && sc(r).exit_code === 4, 'run_code javascript: files beside the program, the exit code', r);

r = await call('run_code', { language: 'bash', code: 'cat /etc/hostname; ls /home 2>&1 | head -1; curl -s http://127.0.0.1:1 || echo nonet' });
ok(!r.isError && sc(r).exit_code === 0, 'run_code bash: runs in the sandbox', r);

r = await call('run_code', { language: 'python', code: 'import time\ntime.sleep(30)', limits: { wall: '2s' } });
ok(!r.isError && sc(r).status === 'timeout' && sc(r).limit === 'wall', 'run_code: a timeout is status timeout', r);

r = await call('run_code', { language: 'python', code: 'a = bytearray(1 << 30)\nprint(len(a))', limits: { memory: '64M' } });
// Without a cgroup (rootless on some hosts) memory is bounded by an rlimit:
// the allocation fails instead.
const memBy = sc(r).enforced?.memory?.by;
if (memBy === 'rlimit')
	ok(!r.isError && sc(r).exit_code !== 0 && /MemoryError/.test(sc(r).stderr), 'run_code: over the memory limit (an rlimit here) the allocation fails', r);
else
	ok(!r.isError && sc(r).status === 'oom' && memBy === 'cgroup', 'run_code: over the memory limit is status oom', r);

r = await call('run_code', { language: 'cobol', code: 'x' });
ok(r.isError && /arguments\.language: must be one of/.test(r.content[0].text), 'a schema violation: a tool error naming the field', r);
r = await call('run_code', { language: 'python', code: 'x', network: true });
ok(r.isError && /arguments: has no field 'network'/.test(r.content[0].text), 'an unknown argument: a tool error', r);
r = await call('run_code', { language: 'python', code: 'print(1)', limits: { memory: '4G' } });
ok(r.isError && /limits\.memory: 4G exceeds the server policy's/.test(r.content[0].text), 'more memory than the server policy: a tool error naming limits.memory', r);
r = await call('session_create', { policy: { version: 1, network: { mode: 'proxy', allow: [{ host: 'example.com' }] } } });
ok(r.isError && /network/.test(r.content[0].text), 'a session asking for network the server policy denies: a tool error naming the field', r);

let err;
try { await client.callTool({ name: 'no_such_tool', arguments: {} }); } catch (e) { err = e; }
ok(err && err.code === -32602, 'an unknown tool: JSON-RPC error -32602', String(err));

// Progress notifications while a call runs.
let progress = 0;
r = await call('run_code', { language: 'bash', code: 'sleep 3; echo done' }, { onprogress: () => progress++ });
ok(sc(r).stdout === 'done\n' && progress >= 1, `progress notifications during a long run (${progress})`, r);

// Cancellation: the run ends long before its wall limit.
const marker = 900 + Math.floor(Math.random() * 99);
const ac = new AbortController();
const started = Date.now();
const p = call('run_code', { language: 'bash', code: `sleep ${marker}.5` }, { signal: ac.signal });
const running = () => execFileSync('ps', ['-eo', 'args']).toString().split('\n').some((l) => l === `sleep ${marker}.5`);
let seen = false;
for (let i = 0; i < 100 && !seen; i++) { await new Promise((res) => setTimeout(res, 100)); seen = running(); }
ok(seen, 'cancellation: the run was going');
ac.abort('test');
try { await p; } catch (e) { err = e; }
let gone = false;
for (let i = 0; i < 150 && !gone; i++) { await new Promise((res) => setTimeout(res, 100)); gone = !running(); }
ok(gone, `cancellation: the sandboxed process ended (${Date.now() - started} ms, wall limit 120 s)`);
r = await call('run_code', { language: 'python', code: 'print("after")' });
ok(sc(r).stdout === 'after\n', 'the server answers after a cancellation', r);

// A session round trip.
r = await call('session_create', { profile: 'code', name: `mcp-${process.pid}` });
const sid = sc(r).session;
ok(!r.isError && /^[0-9a-f]{24}$/.test(sid ?? ''), 'session_create: an id', r);
r = await call('session_write_file', { session: sid, path: '/tmp/hello.txt', content: 'hello\nworld\n' });
ok(!r.isError, 'session_write_file', r);
r = await call('session_exec', { session: `mcp-${process.pid}`, command: 'wc -l < /tmp/hello.txt; echo e >&2; exit 5' });
ok(!r.isError && sc(r).stdout === '2\n' && sc(r).stderr === 'e\n' && sc(r).exit_code === 5, 'session_exec by name: the file written before, stdout, stderr, exit code', r);
r = await call('session_exec', { session: sid, command: 'echo kept > /tmp/k; pwd', cwd: '/tmp' });
ok(sc(r).stdout === '/tmp\n', 'session_exec: cwd', r);
r = await call('session_read_file', { session: sid, path: '/tmp/k' });
ok(!r.isError && r.content[0].text === 'kept\n', 'session_read_file: what a command wrote', r);
r = await call('session_list_files', { session: sid });
ok(!r.isError && /^f 12 hello\.txt$/m.test(r.content[0].text) && /^f 5 k$/m.test(r.content[0].text), 'session_list_files', r);
r = await call('session_read_file', { session: sid, path: '/etc/shadow' });
ok(r.isError, 'session_read_file: a file the sandbox does not have is a tool error', r);
r = await call('session_exec', { session: sid, command: 'sleep 30', timeout: 1 });
ok(!r.isError && sc(r).status === 'timeout', 'session_exec: timeout', r);
r = await call('session_exec', { session: 'not-ours', command: 'id' });
ok(r.isError && /no session 'not-ours' made by this server/.test(r.content[0].text), 'a session this server did not make is refused', r);
r = await call('session_stop', { session: sid });
ok(!r.isError, 'session_stop', r);
r = await call('session_exec', { session: sid, command: 'id' });
ok(r.isError, 'a stopped session is gone', r);
const ls = execFileSync(moat, ['session', 'ls']).toString();
ok(!ls.includes(sid), 'session_stop removed the session', ls);

// One left running is removed when the server ends.
r = await call('session_create', {});
const left = sc(r).session;
if (url) {
	ok(/^[0-9a-f]{32}$/.test(transport.sessionId ?? ''), 'http: an Mcp-Session-Id', transport.sessionId);
	await transport.terminateSession();
}
await client.close();
await new Promise((res) => setTimeout(res, 1500));
const ls2 = execFileSync(moat, ['session', 'ls']).toString();
ok(left && !ls2.includes(left), url ? 'http: the sandbox sessions of an MCP session are removed when it is deleted' : 'the sessions of a server are removed when it ends', ls2);
process.exit(failed ? 1 : 0);
