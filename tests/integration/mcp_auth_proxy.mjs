// A loopback HTTP proxy that adds "Authorization: Bearer TOKEN" to every
// request and passes the rest through unchanged (Host, Origin, bodies, event
// streams): the MCP conformance suite connects without a token, and moat mcp
// serve --http serves nothing without one.
//   node mcp_auth_proxy.mjs UPSTREAM_PORT TOKEN_FILE
// Prints the port it listens on (127.0.0.1, kernel-chosen), then serves
// until killed.
import http from 'node:http';
import fs from 'node:fs';

const [upstreamPort, tokenFile] = process.argv.slice(2);
const token = fs.readFileSync(tokenFile, 'utf8').split('\n')[0];
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const up = http.request(
    { host: '127.0.0.1', port: Number(upstreamPort), method: req.method, path: req.url, headers },
    (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    },
  );
  up.on('error', (e) => {
    if (!res.headersSent) res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(up);
  // A client that gives up closes its connection: so does the proxy
  // upstream, which moat takes as a cancellation.
  res.on('close', () => up.destroy());
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
