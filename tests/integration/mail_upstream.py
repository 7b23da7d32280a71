# A stand-in for an email API, on the host's loopback, for the approval
# gate tests and docs/approvals.md: POST anything sends "a mail" (counted,
# the body echoed back), GET answers "inbox". The port it got is written
# to the file named by its first argument.
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    sent = 0

    def log_message(self, *args):
        pass

    def reply(self, text):
        out = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode(errors="replace")
        Handler.sent += 1
        self.reply("sent %d: %s\n" % (Handler.sent, body))

    def do_GET(self):
        self.reply("inbox\n")


# Room for every request of a burst at once (fifty held requests let
# through together): the default backlog of 5 would drop connections.
http.server.ThreadingHTTPServer.request_queue_size = 128
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
