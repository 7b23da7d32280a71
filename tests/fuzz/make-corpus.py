#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/NAME/).

Run it again after changing the seeds; the files are committed so that the
replay run in the suite needs nothing but the build."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# HTTP: the first byte picks the chunk size the target feeds with.
http = {
    "absolute": "GET http://example.com/a?b=c HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n",
    "connect": "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\nProxy-Connection: keep-alive\r\n\r\n",
    "connect6": "CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n",
    "origin": "POST /submit HTTP/1.1\r\nHost: files.test:8080\r\nContent-Length: 5\r\n\r\nhello",
    "chunked": "POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "http10": "GET http://a.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    "options": "OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n",
    "leading": "\r\n\r\nGET / HTTP/1.1\r\nHost: 0x7f.1\r\n\r\n",
    "smuggle-cl-te": "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
    "smuggle-te-list": "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
    "fold": "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n",
    "userinfo": "GET http://allowed.test@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
    "idn": "GET http://b\u00fccher.example/ HTTP/1.1\r\nHost: xn--bcher-kva.example\r\n\r\n",
    "pipelined": "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\nGET http://b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
}
for i, (k, v) in enumerate(http.items()):
    write("http", k, bytes([i * 3]) + v.encode())


def hello(sni, extra=b"", pad=0):
    body = struct.pack(">H", 0x0303) + bytes(range(32)) + b"\x00" + struct.pack(">HH", 2, 0x1301) + b"\x01\x00"
    exts = b""
    if sni is not None:
        s = sni.encode()
        exts += struct.pack(">HHHBH", 0, len(s) + 5, len(s) + 3, 0, len(s)) + s
    exts += extra
    if pad:
        exts += struct.pack(">HH", 21, pad) + b"\x00" * pad
    body += struct.pack(">H", len(exts)) + exts
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def records(msg, frag=16384):
    out = b""
    for i in range(0, len(msg), frag):
        part = msg[i:i + frag]
        out += b"\x16\x03\x01" + struct.pack(">H", len(part)) + part
    return out


alpn = struct.pack(">HHH", 16, 14, 12) + b"\x02h2\x08http/1.1"
write("tls", "sni", records(hello("api.github.com", alpn)))
write("tls", "split", records(hello("example.com"), 40))
write("tls", "nosni", records(hello(None)))
write("tls", "ech", records(hello("public.test", b"\xfe\x0d\x00\x02\x00\x00")))
write("tls", "big", records(hello("big.test", pad=17000)))
write("tls", "dup", records(hello("a.test", struct.pack(">HHHBH", 0, 8, 6, 0, 3) + b"b.c")))

write("socks5", "domain", b"\x05\x01\x00" + b"\x05\x01\x00\x03\x0eapi.github.com\x01\xbb")
write("socks5", "ipv4", b"\x05\x02\x00\x02" + b"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50")
write("socks5", "ipv6", b"\x05\x01\x00" + b"\x05\x01\x00\x04" + b"\x00" * 15 + b"\x01\x00\x16")
write("socks5", "bind", b"\x05\x01\x00" + b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")
write("socks5", "udp", b"\x05\x01\x00" + b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")

hosts = [
    "example.com", "API.GitHub.COM.", "127.1", "0x7f.1", "2130706433", "0177.0.0.1", "[::ffff:127.0.0.1]",
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[fe80::1%25eth0]", "%31%32%37.0.0.1", "allowed.test@evil.test",
    "evil.test#@allowed.test", "evil.test\\@allowed.test", "b\u00fccher.example", "xn--bcher-kva.example",
    "\uff11\uff12\uff17.0.0.1", "127\u30020\u30020\u30021", "a.b.c.0x1g", "1.2.3.4.5", "example.com:443",
    "[::1]:8080", "/public/../admin", "/public/%2e%2e/admin", "/public/..;/admin", "/a/x%2F..%2Fb",
    "//public//a/./b", "/status/", "/%7Euser?x=1#f",
]
for i, h in enumerate(hosts):
    write("host", "h%02d" % i, h)

# Upstream responses: the first byte's low bit says the request was HEAD.
responses = {
    "length": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n",
    "chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
    "interim": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    "close": "HTTP/1.0 200 OK\r\n\r\nuntil the end",
    "both": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "two-lengths": "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    "upgrade": "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nraw",
}
for i, (k, v) in enumerate(responses.items()):
    write("httpresp", k, bytes([i]) + v.encode())
write("httpresp", "head", b"\x01HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n")
