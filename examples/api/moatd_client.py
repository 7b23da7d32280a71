#!/usr/bin/env python3
"""A client of moatd (docs/api.md) using only the standard library: HTTP over
moatd's unix socket with http.client. Creates a session, runs commands in
it with their output streamed, copies a file in and out, runs a detached
command and polls it to its end, reads its audit log and deletes it.

    python3 moatd_client.py [--socket PATH]

The socket defaults to /run/moat/moatd.sock as root, else
$XDG_RUNTIME_DIR/moat/moatd.sock."""
import argparse
import http.client
import json
import os
import socket
import sys
import time


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket: only connect() differs."""

    def __init__(self, path, timeout=60):
        super().__init__('localhost', timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Moatd:
    def __init__(self, path):
        self.path = path

    def request(self, method, url, body=None, raw_body=None):
        """One request on its own connection; the reply's status and body."""
        c = UnixHTTPConnection(self.path)
        data = json.dumps(body).encode() if body is not None else raw_body
        headers = {'Content-Type': 'application/json' if body is not None else 'application/octet-stream'} \
            if data is not None else {}
        c.request(method, url, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        c.close()
        return r.status, raw

    def json(self, method, url, body=None, want=200):
        status, raw = self.request(method, url, body)
        if status != want:
            raise RuntimeError(f'{method} {url}: {status} {raw.decode(errors="replace")}')
        return json.loads(raw)

    def exec(self, session, argv, **extra):
        """Runs argv in the session; yields its events as they come."""
        c = UnixHTTPConnection(self.path)
        c.request('POST', f'/v1/sessions/{session}/exec', body=json.dumps(dict(argv=argv, **extra)).encode(),
                  headers={'Content-Type': 'application/json'})
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError(f'exec: {r.status} {r.read().decode(errors="replace")}')
        # Chunked NDJSON: http.client undoes the chunking; lines are events.
        for line in r:
            yield json.loads(line)
        c.close()


def default_socket():
    if os.getuid() == 0:
        return '/run/moat/moatd.sock'
    xdg = os.environ.get('XDG_RUNTIME_DIR')
    return f'{xdg}/moat/moatd.sock' if xdg else f'/tmp/moat-{os.getuid()}/moatd.sock'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--socket', default=default_socket())
    args = ap.parse_args()
    m = Moatd(args.socket)

    print('health:', m.json('GET', '/v1/health')['status'])
    s = m.json('POST', '/v1/sessions', {'profile': 'code'}, want=201)
    sid = s['id']
    print('session:', sid)
    try:
        for ev in m.exec(sid, ['sh', '-c', 'echo hello > /tmp/greeting; cat /tmp/greeting; echo to-stderr >&2']):
            print('event:', json.dumps(ev, sort_keys=True))
        out = ''.join(ev.get('data', '') for ev in m.exec(sid, ['cat'], stdin='piped in\n') if ev['type'] == 'stdout')
        print('stdin round trip:', out.strip())
        # Files: the body's bytes in, the file's bytes out (session cp's rules).
        status, _ = m.request('PUT', f'/v1/sessions/{sid}/files?path=/tmp/in.bin', raw_body=b'bytes\x00in')
        status2, got = m.request('GET', f'/v1/sessions/{sid}/files?path=/tmp/in.bin')
        print('file round trip:', status, status2, got == b'bytes\x00in')
        # A detached command: its id at once, then polled until it ends.
        x = m.json('POST', f'/v1/sessions/{sid}/exec?wait=false', {'argv': ['sh', '-c', 'sleep 1; echo later']},
                   want=202)
        for _ in range(600):
            d = m.json('GET', f'/v1/sessions/{sid}/exec/{x["id"]}')
            if d['state'] != 'running':
                break
            time.sleep(0.1)
        print('detached:', d['state'], d['exit_code'], d['stdout'].strip())
        status, raw = m.request('GET', f'/v1/sessions/{sid}/audit')
        events = [json.loads(line) for line in raw.splitlines() if line.strip()]
        print('audit:', status, 'events:', ' '.join(e['type'] for e in events))
    finally:
        print('deleted:', m.json('DELETE', f'/v1/sessions/{sid}')['deleted'])


if __name__ == '__main__':
    sys.exit(main())
