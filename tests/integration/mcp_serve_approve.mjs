// A session tool's network request held by the session's approval gate,
// surfaced through `moat mcp serve` (docs/mcp.md), driven with the official
// MCP TypeScript SDK client: a client that declared elicitation is asked
// (naming the approval's id), one that asked for progress hears it, and
// either way the tool result lists the approval; a person decides with
// moat approve / moat deny, never the client. Prints one TAP line per check.
// Usage: node mcp_serve_approve.mjs SDK_DIR MOAT TDIR LABEL
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';

const [sdk, moat, tdir, label] = process.argv.slice(2);
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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The stand-in mail API on loopback, started here.
const got = [];
const api = http.createServer((req, res) => {
	let body = '';
	req.on('data', (d) => { body += d; });
	req.on('end', () => { got.push(body); res.end('{"status":"sent"}\n'); });
});
await new Promise((r) => api.listen(0, '127.0.0.1', r));
const port = api.address().port;
writeFileSync(`${tdir}/serve-approve.yaml`, `version: 1
network:
  mode: proxy
  allow_private: [127.0.0.1/32]
  hosts:
    mail.test: 127.0.0.1
  approve:
    - {host: mail.test, ports: [${port}], methods: [POST], paths: ["/v1/send"]}
approvals:
  timeout: 2m
limits:
  wall: 5m
`);

async function serve(elicit) {
	const transport = new StdioClientTransport({
		command: moat, args: ['mcp', 'serve', '--policy', `${tdir}/serve-approve.yaml`], stderr: 'inherit', env: process.env,
	});
	const client = new Client({ name: 'moat-serve-approve', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
	const asked = [];
	if (elicit)
		client.setRequestHandler(ElicitRequestSchema, async (req) => {
			asked.push(req.params.message);
			return { action: 'accept', content: { acknowledged: true } };
		});
	await client.connect(transport);
	return { client, asked };
}
const send = (to) => `python3 -c "import urllib.request as u; print(u.urlopen(u.Request('http://mail.test:${port}/v1/send', data=b'to=${to}'), timeout=300).read().decode().strip())" 2>&1 | tail -1`;
const pending = (session) => JSON.parse(execFileSync(moat, ['approvals', 'ls', '--session', session, '--json'], { encoding: 'utf8' }));

for (const elicit of [true, false]) {
	const kind = elicit ? 'elicitation' : 'progress';
	const { client, asked } = await serve(elicit);
	let r = await client.callTool({ name: 'session_create', arguments: {} });
	const session = r.structuredContent?.session;
	ok(!r.isError && session, `${kind}: session_create`, r);
	const progress = [];
	const p = client.callTool({ name: 'session_exec', arguments: { session, command: send(kind) } }, undefined,
		{ timeout: 600000, onprogress: (x) => progress.push(x.message ?? '') });
	let held = [];
	for (let i = 0; i < 600 && held.length === 0; i++) {
		await sleep(100);
		held = pending(session);
	}
	const id = held[0]?.id;
	ok(id && /POST http:\/\/mail\.test/.test(held[0].what), `${kind}: the session's POST is held`, held);
	const told = elicit ? asked : progress;
	for (let i = 0; i < 100 && !told.some((m) => m.includes(id)); i++) await sleep(100);
	ok(id && told.some((m) => m.includes(id) && /waits for a person's approval/.test(m) && /moat approve/.test(m)),
		`${kind}: the client is told it awaits a person, with the approval id`, told);
	if (elicit) {
		await sleep(700);
		ok(pending(session).some((x) => x.id === id) && got.length === 0, 'elicitation: the client\'s accept decides nothing', got);
		execFileSync(moat, ['approve', id]);
	} else
		execFileSync(moat, ['deny', id, '--reason', 'not from this agent']);
	r = await p;
	const sc = r.structuredContent ?? {};
	ok((sc.approvals ?? []).some((a) => a.id === id), `${kind}: the tool result lists the approval`, sc);
	if (elicit)
		ok(/"status": ?"sent"/.test(sc.stdout ?? '') && got.length === 1, 'approved: the request went through', sc);
	else
		ok(/403|denied by a reviewer/.test(sc.stdout ?? '') && got.length === 1, 'denied: the command reads the refusal, nothing sent', sc);
	await client.callTool({ name: 'session_stop', arguments: { session } });
	await client.close();
}
api.close();
process.exit(failed ? 1 : 0);
