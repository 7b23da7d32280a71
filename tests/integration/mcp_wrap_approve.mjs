// Approve-gated tools through `moat mcp wrap`, driven with the official MCP
// TypeScript SDK client: a gated call waits until a person decides with
// `moat approve` / `moat deny` (found by `moat approvals ls`); approve-once
// lets exactly that call through and the next one waits again; a deny and
// a timeout come back as tool errors saying why; a client that declared
// the elicitation capability is told what waits, and its answer decides
// nothing; the wrapped server, inside the sandbox, cannot approve its own
// call. Prints one TAP line per check.
// Usage: node mcp_wrap_approve.mjs NPM_DIR MOAT TDIR ATTACKS LABEL
// TDIR holds approve.yaml and approve-short.yaml (policies binding
// TDIR/aws at /workspace), tools-approve.yaml, mcp_approve_server.py.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const [npm, moat, tdir, attacks, label] = process.argv.slice(2);
const sdk = `${npm}/@modelcontextprotocol/sdk`;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);
const { ElicitRequestSchema } = await import(`${sdk}/dist/esm/types.js`);

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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sent = () => (existsSync(`${tdir}/aws/sent.txt`) ? readFileSync(`${tdir}/aws/sent.txt`, 'utf8') : '');
const ls = () => JSON.parse(execFileSync(moat, ['approvals', 'ls', '--json'], { encoding: 'utf8' }));
const run = (...a) => execFileSync(moat, a, { encoding: 'utf8' });

// The approval waiting for tool with arguments text (polled: the call is
// on its way through the relay).
async function waiting(tool, t) {
	for (let i = 0; i < 600; i++) {
		const a = ls().find((x) => x.action === 'tool' && x.tool === tool && (x.what ?? '').includes(t));
		if (a) return a;
		await sleep(100);
	}
	return null;
}

async function wrapped(policy, elicit) {
	const transport = new StdioClientTransport({
		command: moat, args: ['mcp', 'wrap', '--policy', `${tdir}/${policy}`, '--tools', `${tdir}/tools-approve.yaml`,
			'--audit', `${tdir}/audit-approve.log`, '--name', 'mailer', '--',
			'python3', '/srv/t/mcp_approve_server.py'],
		stderr: 'inherit', env: process.env,
	});
	const client = new Client({ name: 'moat-approve-test', version: '1.0.0' },
		{ capabilities: elicit ? { elicitation: {} } : {} });
	const asked = [];
	if (elicit)
		client.setRequestHandler(ElicitRequestSchema, async (req) => {
			asked.push(req.params.message);
			// An agent answering for itself: must not count as a decision.
			return { action: 'accept', content: { acknowledged: true } };
		});
	await client.connect(transport);
	const progress = [];
	const call = (tool, args) => client.callTool({ name: tool, arguments: args }, undefined,
		{ timeout: 600000, onprogress: (p) => progress.push(p.message ?? '') });
	return { client, call, asked, progress };
}

{
	const { client, call, progress } = await wrapped('approve.yaml', false);
	// approve once
	let p = call('send', { text: 'one' });
	let a = await waiting('send', 'one');
	ok(a && /^a[0-9a-f]{8}$/.test(a.id) && /^mcp:mailer$/.test(a.session_name ?? ''), 'a gated call is listed by moat approvals ls', a);
	ok(!sent().includes('one'), 'the held call has not reached the server');
	for (let i = 0; i < 50 && progress.length === 0; i++) await sleep(100);
	ok(a && progress.some((m) => m.includes(a.id) && /waits for a person's approval/.test(m)), 'a client without elicitation hears (progress) that the call awaits a person, with the id', progress);
	if (a) run('approve', a.id, '--note', 'fine');
	let r = await p;
	ok(!r.isError && text(r) === 'sent' && sent().includes('one\n'), 'approve: the call goes through', r);
	// a second call like it waits again
	p = call('send', { text: 'one' });
	a = await waiting('send', 'one');
	ok(a !== null, 'approve once: the next call like it waits again', a);
	// the wrapped server tries to approve its own call from inside the sandbox
	const sock = a ? `${process.env.XDG_RUNTIME_DIR && process.getuid() !== 0 ? process.env.XDG_RUNTIME_DIR + '/moat' : (process.getuid() === 0 ? '/run/moat' : `/tmp/moat-${process.getuid()}`)}/sandboxes/${a.session}/ctl` : '';
	ok(a && existsSync(sock), 'the relay\'s control socket is known to the test (the attack gets it)', sock);
	const pr = await call('probe', { id: a?.id ?? '', socket: sock, program: '/srv/attacks/attack_approval_queue' });
	ok(/^BLOCKED/m.test(text(pr)), 'attack approval_queue (the wrapped server approving its own call): blocked', text(pr));
	const still = ls().find((x) => x.id === a?.id);
	ok(still !== undefined, 'after the attack the call still waits', ls());
	// deny
	if (a) run('deny', a.id, '--reason', 'not today');
	r = await p;
	ok(r.isError && /denied by a reviewer: not today/.test(text(r)) && text(r).includes(a?.id), 'deny: a tool error with the reason', r);
	ok((sent().match(/one/g) ?? []).length === 1, 'deny: the call never reached the server');
	await client.close();
}

{
	// elicitation: the client is told; its accept does not approve
	const { client, call, asked } = await wrapped('approve.yaml', true);
	const p = call('send', { text: 'two' });
	const a = await waiting('send', 'two');
	for (let i = 0; i < 100 && asked.length === 0; i++) await sleep(100);
	ok(asked.length === 1 && a && asked[0].includes(a.id) && /moat approve/.test(asked[0]), 'elicitation: the client is told what waits', asked);
	await sleep(500);
	ok(ls().some((x) => x.id === a?.id) && !sent().includes('two'), 'elicitation: the client\'s accept decides nothing', ls());
	if (a) run('approve', a.id);
	const r = await p;
	ok(!r.isError && sent().includes('two\n'), 'elicitation: approved by a person, the call goes through', r);
	await client.close();
}

{
	// timeout (approvals.timeout: 2s)
	const { client, call } = await wrapped('approve-short.yaml', false);
	const t0 = Date.now();
	const r = await call('send', { text: 'three' });
	ok(r.isError && /approval timed out/.test(text(r)) && !sent().includes('three'), 'timeout: a tool error saying no one decided', r);
	ok(Date.now() - t0 >= 1900, 'timeout: it waited for the timeout', Date.now() - t0);
	await client.close();
}

// the audit log: the requests, the decisions and the calls with them
const ev = readFileSync(`${tdir}/audit-approve.log`, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const calls = ev.filter((e) => e.type === 'mcp.tool_call' && e.tool === 'send');
ok(calls.some((e) => e.approved === 'once' && e.approval && !e.is_error) && calls.some((e) => e.approved === 'deny') &&
	calls.some((e) => e.approved === 'timed_out'), 'audit: each gated call names its approval and decision', calls);
ok(ev.filter((e) => e.type === 'approval.request').length >= 4 && ev.some((e) => e.type === 'approval.decision' && e.decision === 'deny'),
	'audit: approval.request and approval.decision events', ev.map((e) => e.type));
process.exit(failed ? 1 : 0);
