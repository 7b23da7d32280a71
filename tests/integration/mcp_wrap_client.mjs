// Drives real MCP servers from npm through `moat mcp wrap` with the official
// MCP TypeScript SDK client and prints one TAP line per check.
// Usage: node mcp_wrap_client.mjs NPM_DIR MOAT TDIR LABEL
// TDIR holds fs.yaml, everything.yaml, memory.yaml (policies), tools-*.yaml,
// ws/ (bound at /workspace) and outside/secret.txt (bound nowhere).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const [npm, moat, tdir, label] = process.argv.slice(2);
const sdk = `${npm}/@modelcontextprotocol/sdk`;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

let failed = 0;
const ok = (cond, name, detail) => {
	if (cond) console.log(`ok - ${label}: ${name}`);
	else {
		failed++;
		console.log(`not ok - ${label}: ${name}`);
		if (detail !== undefined) console.log(`#   ${JSON.stringify(detail).slice(0, 1500)}`);
	}
};
const text = (r) => (r.content ?? []).map((c) => c.text ?? '').join('\n');
let calls = 0;

async function wrapped(name, policy, tools, audit, cmd) {
	const transport = new StdioClientTransport({
		command: moat, args: ['mcp', 'wrap', '--policy', `${tdir}/${policy}`, '--tools', `${tdir}/${tools}`,
			'--audit', `${tdir}/${audit}`, '--name', name, '--', ...cmd],
		stderr: 'inherit', env: process.env,
	});
	const client = new Client({ name: 'moat-wrap-test', version: '1.0.0' });
	await client.connect(transport);
	const call = async (tool, args) => { calls++; return client.callTool({ name: tool, arguments: args }); };
	return { client, call };
}

// --- server-filesystem, told it may serve all of "/": only the sandbox
// keeps it inside what the policy binds.
{
	calls = 0;
	const { client, call } = await wrapped('filesystem', 'fs.yaml', 'tools-fs.yaml', 'audit-fs.log',
		['node', '/srv/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', '/']);
	const names = (await client.listTools()).tools.map((t) => t.name);
	ok(names.includes('read_text_file') && names.includes('list_directory'), 'filesystem: allowed tools listed', names);
	ok(!names.includes('write_file') && !names.includes('edit_file'), 'filesystem: denied tools hidden from tools/list', names);
	ok(names.includes('move_file'), 'filesystem: an approve-gated tool is listed', names);
	let r = await call('read_text_file', { path: '/workspace/a.txt' });
	ok(!r.isError && text(r) === 'hello from the workspace\n', 'filesystem: an allowed call works', r);
	r = await call('list_directory', { path: '/workspace' });
	ok(!r.isError && /a\.txt/.test(text(r)), 'filesystem: list_directory', r);
	r = await call('write_file', { path: '/workspace/new.txt', content: 'x' });
	ok(r.isError && /denied by the tool policy/.test(text(r)), 'filesystem: a denied call is refused with a tool error', r);
	ok(!existsSync(`${tdir}/ws/new.txt`), 'filesystem: the denied call never reached the server');
	r = await call('move_file', { source: '/workspace/a.txt', destination: '/workspace/b.txt' });
	ok(r.isError && /approval timed out: no one decided on the call of tool 'move_file'/.test(text(r)), 'filesystem: an approve-gated call no one decides times out (approvals.timeout 2s)', r);
	ok(existsSync(`${tdir}/ws/a.txt`) && !existsSync(`${tdir}/ws/b.txt`), 'filesystem: the gated call never reached the server');
	const marker = readFileSync(`${tdir}/outside/secret.txt`, 'utf8').trim();
	for (const p of [`${tdir}/outside/secret.txt`, `/workspace/../${tdir}/outside/secret.txt`, '/workspace/../../../etc/shadow', '/etc/shadow']) {
		r = await call('read_text_file', { path: p });
		ok(r.isError && !text(r).includes(marker) && !/root:/.test(text(r)), `filesystem: ${p} is out of reach`, r);
	}
	r = await call('read_text_file', { path: '/etc/hostname' });
	ok(text(r).trim() !== readFileSync('/etc/hostname', 'utf8').trim() || r.isError, 'filesystem: /etc is the sandbox\'s, not the host\'s', r);
	r = await call('list_directory', { path: tdir });
	ok(r.isError || !/secret|outside/.test(text(r)), 'filesystem: the host folder around the workspace is not there', r);
	await client.close();
	await new Promise((res) => setTimeout(res, 500));
	const log = readFileSync(`${tdir}/audit-fs.log`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
	const ev = log.filter((e) => e.type === 'mcp.tool_call');
	ok(ev.length === calls, `filesystem: every tools/call is an audit event (${ev.length} of ${calls})`, log.map((e) => e.type));
	ok(ev.some((e) => e.tool === 'write_file' && e.decision === 'deny') && ev.some((e) => e.tool === 'move_file' && e.decision === 'approve') &&
		ev.some((e) => e.tool === 'read_text_file' && e.decision === 'allow' && e.result_bytes > 0 && e.duration_ms >= 0 && e.is_error === false),
		'filesystem: the events carry tool, decision, duration, result size, error', ev);
	ok(ev.every((e) => e.server === 'filesystem'), 'filesystem: the events name the server');
	let verify = '';
	try { verify = execFileSync(moat, ['audit', 'verify', `${tdir}/audit-fs.log`]).toString(); } catch (e) { verify = String(e); }
	ok(/^ok/.test(verify), 'filesystem: the audit log verifies', verify);
}

// --- server-everything, default deny.
{
	calls = 0;
	const { client, call } = await wrapped('everything', 'everything.yaml', 'tools-everything.yaml', 'audit-ev.log',
		['node', '/srv/node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio']);
	const names = (await client.listTools()).tools.map((t) => t.name).sort();
	ok(JSON.stringify(names) === JSON.stringify(['echo', 'get-sum']), 'everything: default deny lists only the allowed tools', names);
	let r = await call('echo', { message: 'hi there' });
	ok(!r.isError && /hi there/.test(text(r)), 'everything: echo', r);
	r = await call('get-sum', { a: 2, b: 40 });
	ok(!r.isError && /42/.test(text(r)), 'everything: get-sum', r);
	r = await call('get-env', {});
	ok(r.isError && /denied by the tool policy/.test(text(r)), 'everything: get-env (not allowed) is refused', r);
	const big = 'y'.repeat(100000);
	r = await call('echo', { message: big });
	ok(!r.isError && text(r).includes(big), 'everything: a 100 kB argument is relayed', text(r).length);
	await client.close();
	await new Promise((res) => setTimeout(res, 500));
	const ev = readFileSync(`${tdir}/audit-ev.log`, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'mcp.tool_call');
	ok(ev.length === calls, `everything: every call audited (${ev.length} of ${calls})`);
	const bigEv = ev.find((e) => e.tool === 'echo' && /^sha256:[0-9a-f]{64} \(100000 bytes\)$/.test(e.arguments?.message ?? ''));
	ok(bigEv, 'everything: a large argument is hashed in the audit log', ev.map((e) => e.arguments));
}

// --- server-memory, its file in the workspace.
{
	calls = 0;
	const { client, call } = await wrapped('memory', 'memory.yaml', 'tools-memory.yaml', 'audit-mem.log',
		['node', '/srv/node_modules/@modelcontextprotocol/server-memory/dist/index.js']);
	const names = (await client.listTools()).tools.map((t) => t.name);
	ok(names.includes('create_entities') && !names.includes('delete_entities'), 'memory: delete_entities hidden', names);
	let r = await call('create_entities', { entities: [{ name: 'moat', entityType: 'project', observations: ['a sandbox'] }] });
	ok(!r.isError, 'memory: create_entities', r);
	r = await call('read_graph', {});
	ok(!r.isError && /a sandbox/.test(text(r)), 'memory: read_graph', r);
	r = await call('delete_entities', { entityNames: ['moat'] });
	ok(r.isError && /denied/.test(text(r)), 'memory: delete_entities refused', r);
	await client.close();
	await new Promise((res) => setTimeout(res, 500));
	ok(existsSync(`${tdir}/ws/memory.jsonl`) && /a sandbox/.test(readFileSync(`${tdir}/ws/memory.jsonl`, 'utf8')), 'memory: its file is in the bound workspace');
	const ev = readFileSync(`${tdir}/audit-mem.log`, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'mcp.tool_call');
	ok(ev.length === calls, `memory: every call audited (${ev.length} of ${calls})`);
}
process.exit(failed ? 1 : 0);
