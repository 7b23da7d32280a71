// A loopback Streamable HTTP front for a stdio MCP server, built from the
// official SDK's own transports, so that the MCP conformance suite (which
// takes a URL) can drive a stdio server, and moat mcp wrap around it:
//   node mcp_stdio_bridge.mjs SDK_DIR -- COMMAND [ARG...]
// Each HTTP session gets a COMMAND of its own; messages pass through as
// they are; past 4 sessions the oldest is closed (the suite never ends its
// own, and each holds a server, here a sandbox). Prints the port it listens
// on (127.0.0.1, kernel-chosen).
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const args = process.argv.slice(2);
const sdk = args[0];
const cmd = args.slice(args.indexOf('--') + 1);
const { StreamableHTTPServerTransport } = await import(`${sdk}/dist/esm/server/streamableHttp.js`);
const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);

const sessions = new Map();

async function open() {
	const inflight = []; // the client's requests not answered yet, oldest first
	const byToken = new Map(); // progress token -> the request that set it
	const child = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: 'ignore' });
	const front = new StreamableHTTPServerTransport({
		sessionIdGenerator: () => randomUUID(),
		onsessioninitialized: (id) => {
			sessions.set(id, front);
			for (const [old, f] of sessions) {
				if (sessions.size <= 4) break;
				sessions.delete(old);
				f.close().catch(() => {});
			}
		},
	});
	front.onmessage = (m) => {
		if ('method' in m && 'id' in m) {
			inflight.push(m.id);
			const tok = m.params?._meta?.progressToken;
			if (tok !== undefined) byToken.set(tok, m.id);
		}
		child.send(m).catch(() => {});
	};
	child.onmessage = (m) => {
		if (!('method' in m)) {
			const i = inflight.indexOf(m.id);
			if (i >= 0) inflight.splice(i, 1);
			front.send(m).catch(() => {});
			return;
		}
		// A notification or a request of the server's: on the stream of
		// the request it is about (its progress token), else the newest.
		const tok = m.params?.progressToken;
		const related = tok !== undefined && byToken.has(tok) ? byToken.get(tok) : inflight[inflight.length - 1];
		front.send(m, related === undefined ? undefined : { relatedRequestId: related }).catch(() => {});
	};
	front.onclose = () => {
		if (front.sessionId) sessions.delete(front.sessionId);
		child.close().catch(() => {});
	};
	await child.start();
	return front;
}

const server = http.createServer(async (req, res) => {
	try {
		const sid = req.headers['mcp-session-id'];
		let front = sid ? sessions.get(sid) : undefined;
		if (!front && sid) {
			res.writeHead(404).end();
			return;
		}
		front ??= await open();
		await front.handleRequest(req, res);
	} catch (e) {
		if (!res.headersSent) res.writeHead(500);
		res.end(String(e));
	}
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
