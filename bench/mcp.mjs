// make bench: the cost of moat's MCP layers, measured with the official
// MCP TypeScript SDK client.
//   node bench/mcp.mjs --moat BUILD/moat --npm NODE_MODULES [--runs N]
//                      [--only wrap] [--order direct|wrapped]
// (--only wrap: part 2 alone; --order: which of part 2's two runs first,
// since a loaded machine favours one order; default direct)
// 1. run_code of print(1) through one `moat mcp serve` on stdio, against a
//    cold `moat run -- python3 -c 'print(1)'` (target: median <= 1.3x);
// 2. a tools/call of server-everything's echo through `moat mcp wrap`,
//    against the same server called directly (target: <= 1 ms added).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const moat = arg('--moat', 'build/moat');
const npm = arg('--npm');
const runs = Number(arg('--runs', '30'));
const only = arg('--only', '');
const order = arg('--order', 'direct');
const sdk = `${npm}/@modelcontextprotocol/sdk`;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const row = (name, v, extra = '') => console.log(`  ${name.padEnd(52)} ${median(v).toFixed(2).padStart(9)} ms ${Math.min(...v).toFixed(2).padStart(9)} ms ${extra}`);

console.log(`\n== MCP (${runs} runs each; median, min)`);
// 1. run_code against a cold moat run.
if (only !== 'wrap') {
const cold = [];
for (let i = 0; i < runs; i++) {
	const t0 = process.hrtime.bigint();
	const r = spawnSync(moat, ['run', '--', 'python3', '-c', 'print(1)'], { stdio: ['ignore', 'pipe', 'inherit'] });
	if (r.status !== 0) throw new Error(`moat run exited ${r.status}`);
	cold.push(ms(t0));
}
const client = new Client({ name: 'bench', version: '1' });
await client.connect(new StdioClientTransport({ command: moat, args: ['mcp', 'serve'], stderr: 'inherit' }));
const served = [];
for (let i = 0; i < runs; i++) {
	const t0 = process.hrtime.bigint();
	const r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(1)' } });
	if (r.structuredContent?.stdout !== '1\n') throw new Error(`run_code: ${JSON.stringify(r)}`);
	served.push(ms(t0));
}
await client.close();
row('moat run -- python3 -c print(1) (cold)', cold);
const ratio = median(served) / median(cold);
row('run_code print(1) via moat mcp serve (stdio)', served, `${ratio.toFixed(2)}x ${ratio <= 1.3 ? '(target <= 1.3x: met)' : '(target <= 1.3x: MISSED)'}`);
}

// 2. the wrap relay.
const dir = mkdtempSync(`${tmpdir()}/moat-bench-mcp-`);
writeFileSync(`${dir}/policy.yaml`, `version: 1\nfilesystem:\n  read_only: ["${npm}:/srv/node_modules"]\nnetwork:\n  mode: none\nlimits:\n  wall: 10m\n  memory: 1G\n  pids: 256\n  output: 64M\n`);
const everything = (prefix) => [...prefix, 'node', `${prefix.length ? '/srv/node_modules' : npm}/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];
async function echoTimes(cmd) {
	const c = new Client({ name: 'bench', version: '1' });
	await c.connect(new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: 'ignore' }));
	for (let i = 0; i < 5; i++) await c.callTool({ name: 'echo', arguments: { message: 'warm' } });
	const t = [];
	for (let i = 0; i < runs * 3; i++) {
		const t0 = process.hrtime.bigint();
		await c.callTool({ name: 'echo', arguments: { message: `hello ${i}` } });
		t.push(ms(t0));
	}
	await c.close();
	return t;
}
let direct, wrapped;
if (order === 'wrapped') {
	wrapped = await echoTimes(everything([moat, 'mcp', 'wrap', '--policy', `${dir}/policy.yaml`, '--']));
	direct = await echoTimes(everything([]));
} else {
	direct = await echoTimes(everything([]));
	wrapped = await echoTimes(everything([moat, 'mcp', 'wrap', '--policy', `${dir}/policy.yaml`, '--']));
}
rmSync(dir, { recursive: true, force: true });
row('server-everything echo, called directly', direct);
const added = median(wrapped) - median(direct);
row('the same through moat mcp wrap (sandboxed)', wrapped, `+${added.toFixed(2)} ms ${added <= 1 ? '(target <= 1 ms: met)' : '(target <= 1 ms: MISSED)'}`);
