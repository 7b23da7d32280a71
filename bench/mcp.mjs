// make bench: the cost of moat's MCP layers, measured with the official
// MCP TypeScript SDK client.
//   node bench/mcp.mjs --moat BUILD/moat --npm NODE_MODULES [--runs N]
//                      [--calls N] [--only wrap]
// (--only wrap: part 2 alone). Every comparison is interleaved, in ABBA
// order, so that a machine whose load swings favours neither side; the
// load average is printed before and after.
// 1. run_code of print(1) through one `moat mcp serve` on stdio, against a
//    cold `moat run -- python3 -c 'print(1)'` (target: median <= 1.3x);
// 2. a tools/call of server-everything's echo through `moat mcp wrap`,
//    against the same server called directly (target: <= 1 ms added); and,
//    to show where the time goes, the server under `moat run` alone, with
//    its stdout captured (the hop wrap took before --direct-stdout) and
//    with --direct-stdout.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const moat = arg('--moat', 'build/moat');
const npm = arg('--npm');
const runs = Number(arg('--runs', '30'));
const calls = Number(arg('--calls', '200'));
const only = arg('--only', '');
const sdk = `${npm}/@modelcontextprotocol/sdk`;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const row = (name, v, extra = '') => console.log(`  ${name.padEnd(52)} ${median(v).toFixed(2).padStart(9)} ms ${Math.min(...v).toFixed(2).padStart(9)} ms ${extra}`);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
// The i-th round's order of n contenders: forwards, then backwards (ABBA).
const order = (i, n) => { const o = [...Array(n).keys()]; return i % 2 ? o.reverse() : o; };

console.log(`\n== MCP (load average ${load()}; median, min)`);
// 1. run_code against a cold moat run, interleaved.
if (only !== 'wrap') {
const client = new Client({ name: 'bench', version: '1' });
await client.connect(new StdioClientTransport({ command: moat, args: ['mcp', 'serve'], stderr: 'inherit' }));
const cold = [], served = [];
const one = [
	async () => {
		const t0 = process.hrtime.bigint();
		const r = spawnSync(moat, ['run', '--', 'python3', '-c', 'print(1)'], { stdio: ['ignore', 'pipe', 'inherit'] });
		if (r.status !== 0) throw new Error(`moat run exited ${r.status}`);
		cold.push(ms(t0));
	},
	async () => {
		const t0 = process.hrtime.bigint();
		const r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(1)' } });
		if (r.structuredContent?.stdout !== '1\n') throw new Error(`run_code: ${JSON.stringify(r)}`);
		served.push(ms(t0));
	},
];
for (let i = 0; i < runs; i++) for (const k of order(i, 2)) await one[k]();
await client.close();
console.log(`  ${runs} runs each, interleaved`);
row('moat run -- python3 -c print(1) (cold)', cold);
const ratio = median(served) / median(cold);
row('run_code print(1) via moat mcp serve (stdio)', served, `${ratio.toFixed(2)}x ${ratio <= 1.3 ? '(target <= 1.3x: met)' : '(target <= 1.3x: MISSED)'}`);
}

// 2. the wrap relay, interleaved with the server called directly and
// under moat run alone.
const dir = mkdtempSync(`${tmpdir()}/moat-bench-mcp-`);
writeFileSync(`${dir}/policy.yaml`, `version: 1\nfilesystem:\n  read_only: ["${npm}:/srv/node_modules"]\nnetwork:\n  mode: none\nlimits:\n  wall: 10m\n  memory: 1G\n  pids: 256\n  output: 64M\n`);
const everything = (prefix) => [...prefix, 'node', `${prefix.length ? '/srv/node_modules' : npm}/@modelcontextprotocol/server-everything/dist/index.js`, 'stdio'];
const setups = [
	['server-everything echo, called directly', everything([])],
	['the same under moat run (stdout captured)', everything([moat, 'run', '--policy', `${dir}/policy.yaml`, '--'])],
	['the same under moat run --direct-stdout', everything([moat, 'run', '--direct-stdout', '--policy', `${dir}/policy.yaml`, '--'])],
	['the same through moat mcp wrap (sandboxed)', everything([moat, 'mcp', 'wrap', '--policy', `${dir}/policy.yaml`, '--'])],
];
const clients = [];
for (const [, cmd] of setups) {
	const c = new Client({ name: 'bench', version: '1' });
	await c.connect(new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: 'ignore' }));
	for (let i = 0; i < 5; i++) await c.callTool({ name: 'echo', arguments: { message: 'warm' } });
	clients.push(c);
}
const times = setups.map(() => []);
for (let i = 0; i < calls; i++)
	for (const k of order(i, clients.length)) {
		const t0 = process.hrtime.bigint();
		await clients[k].callTool({ name: 'echo', arguments: { message: `hello ${i}` } });
		times[k].push(ms(t0));
	}
for (const c of clients) await c.close();
rmSync(dir, { recursive: true, force: true });
console.log(`  ${calls} calls each, interleaved`);
const direct = median(times[0]);
for (let k = 0; k < setups.length - 1; k++)
	row(setups[k][0], times[k], k ? `+${(median(times[k]) - direct).toFixed(2)} ms` : '');
const added = median(times[3]) - direct;
row(setups[3][0], times[3], `+${added.toFixed(2)} ms ${added <= 1 ? '(target <= 1 ms: met)' : '(target <= 1 ms: MISSED)'}`);
console.log(`  load average after: ${load()}`);
