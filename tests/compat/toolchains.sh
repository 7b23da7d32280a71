#!/bin/bash
# Everyday toolchains inside `moat run --profile agent`, as TAP lines
# (sourced by tests/integration/compat.sh, which has sourced lib.sh). A tool
# missing on this host is reported as skipped, never as passed. Every check
# builds and runs inside the sandbox's own /tmp.
A=(run --profile agent --mem 2G --pids 1024 --time 600s --tmp-size 1G --cwd /tmp)

have() { command -v "$1" >/dev/null 2>&1; }

if have gcc; then
	mrun "${A[@]}" -- /bin/sh -c 'printf "#include <stdio.h>\nint main(void){puts(\"c-ok\");return 0;}\n" > t.c && gcc -O2 -o t t.c && ./t'
	t_eq "gcc builds and the program runs" c-ok "$OUT"
	mrun "${A[@]}" -- /bin/sh -c 'printf "#include <iostream>\nint main(){std::cout<<\"cxx-ok\"<<std::endl;}\n" > t.cc && g++ -o t t.cc && ./t'
	t_eq "g++ builds and the program runs" cxx-ok "$OUT"
	mrun "${A[@]}" -- /bin/sh -c 'printf "all:\n\techo make-ok\n" > Makefile && make -s'
	t_eq "make" make-ok "$OUT"
	# ASan finds the overflow; no LeakSanitizer failure at exit (it needs
	# ptrace). Rootless without a cgroup, --mem is RLIMIT_DATA, which
	# counts ASan's shadow: such runs get --mem unlimited.
	MEM=()
	mrun "${A[@]}" -- /bin/sh -c 'test -d /sys/fs/cgroup && echo cg'
	[ "$OUT" = cg ] || is_root || MEM=(--mem unlimited)
	mrun "${A[@]}" "${MEM[@]}" -- /bin/sh -c 'printf "#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v){char *p=malloc(8); puts(\"asan-ok\"); fflush(stdout); if (c > 1) p[8]=1; free(p); return 0;}\n" > a.c && gcc -fsanitize=address -g a.c -o a && ./a && { ./a x 2>&1 | grep -o heap-buffer-overflow | head -1; }'
	t_eq "gcc -fsanitize=address: runs clean, finds an overflow${MEM:+ (--mem unlimited: no cgroup)}" "$(printf 'asan-ok\nheap-buffer-overflow')" "$OUT"
else
	t_skip "gcc, g++, make" "not installed"
fi
if have python3; then
	mrun "${A[@]}" -- /bin/sh -c 'python3 -m venv /tmp/v && mkdir -p /tmp/p/hello && printf "def main():\n    print(\"venv-ok\")\n" > /tmp/p/hello/__init__.py && printf "[project]\nname=\"hello\"\nversion=\"1\"\n[project.scripts]\nhello=\"hello:main\"\n[build-system]\nrequires=[\"setuptools\"]\nbuild-backend=\"setuptools.build_meta\"\n" > /tmp/p/pyproject.toml && /tmp/v/bin/pip install -q --no-build-isolation --no-index /tmp/p >/dev/null 2>&1 && /tmp/v/bin/hello'
	if [ "$OUT" = venv-ok ]; then
		t_ok "python venv with a console script"
	else
		mrun "${A[@]}" -- /bin/sh -c 'python3 -m venv --without-pip /tmp/v && printf "#!/tmp/v/bin/python\nprint(\"venv-ok\")\n" > /tmp/v/bin/hello && chmod +x /tmp/v/bin/hello && /tmp/v/bin/hello'
		t_eq "python venv with a console script (no pip on this host: a hand-made script)" venv-ok "$OUT"
	fi
	mrun "${A[@]}" -- python3 -c 'import os, pty; m, s = os.openpty(); os.write(s, b"x"); print("pty-ok" if os.read(m, 1) == b"x" else "bad")'
	t_eq "python os.openpty without -t" pty-ok "$OUT"
	mrun "${A[@]}" -- python3 -c '
import http.server, threading, urllib.request, os
os.environ.pop("http_proxy", None); os.environ.pop("HTTP_PROXY", None)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=s.serve_forever, daemon=True).start()
print(urllib.request.urlopen("http://127.0.0.1:%d/" % s.server_port).status)'
	t_eq "python http.server and urllib over loopback" 200 "$OUT"
else
	t_skip "python3" "not installed"
fi
if have node; then
	mrun "${A[@]}" -- node -e '
const http = require("http");
const s = http.createServer((q, r) => r.end("node-ok")).listen(0, "127.0.0.1", () => {
  http.get({host: "127.0.0.1", port: s.address().port}, r => { let b = ""; r.on("data", d => b += d); r.on("end", () => { console.log(b); s.close(); }); });
});'
	t_eq "node http server and client over loopback" node-ok "$OUT"
	mrun "${A[@]}" --mem 512M -- /bin/sh -c 'test -d /sys/fs/cgroup || { echo no-cgroup; exit; }; node -e "console.log(process.constrainedMemory())"'
	if [ "$OUT" = no-cgroup ] && ! is_root; then
		t_na "node sees --mem as its constrained memory" "no cgroup for a rootless run on this host"
	else
		t_eq "node sees --mem as its constrained memory" 536870912 "$OUT"
	fi
	if have npm; then
		mrun "${A[@]}" -- /bin/sh -c 'mkdir -p /tmp/lib /tmp/app && cd /tmp/lib && printf "{\"name\":\"lib\",\"version\":\"1.0.0\",\"main\":\"i.js\"}" > package.json && echo "module.exports=\"npm-ok\"" > i.js && cd /tmp/app && printf "{\"name\":\"app\",\"version\":\"1.0.0\"}" > package.json && HOME=/tmp npm install --offline --no-audit --no-fund ../lib >/dev/null 2>&1; node -e "console.log(require(\"lib\"))"'
		t_eq "npm install of a local package" npm-ok "$OUT"
	fi
else
	t_skip "node" "not installed"
fi
if have sqlite3; then
	mrun "${A[@]}" -- /bin/sh -c 'sqlite3 /tmp/d.db "pragma journal_mode=wal; create table t(x); insert into t values(42); select x from t;" | tail -1'
	t_eq "sqlite3 with WAL" 42 "$OUT"
fi
if have git; then
	mrun "${A[@]}" -- /bin/sh -c 'cd /tmp && git init -q r && cd r && echo a > f && git add f && git -c user.email=t@t -c user.name=t commit -qm one && git log --format=%s'
	t_eq "git init, add, commit, log" one "$OUT"
fi
if have javac && have java; then
	mrun "${A[@]}" -- /bin/sh -c "printf 'public class H { public static void main(String[] a) { System.out.println(\"java-ok\"); } }' > H.java && javac H.java && java H"
	t_eq "javac and java, default options" java-ok "$OUT"
	# HotSpot trusts a cgroup v1 limit only when it finds its own cgroup
	# in the memory, cpu, cpuacct and cpuset hierarchies all four; then
	# its default heap is a quarter of --mem, as -XshowSettings says.
	mrun "${A[@]}" --mem 1G -- /bin/sh -c 'test -d /sys/fs/cgroup || { echo no-cgroup; exit; }; java -XshowSettings:system -XX:+PrintFlagsFinal -version >/tmp/j 2>&1; grep -o "Memory Limit: .*" /tmp/j; grep -E "size_t MaxHeapSize " /tmp/j | tr -s " " | cut -d" " -f5'
	if [ "$OUT" = no-cgroup ] && ! is_root; then
		t_na "the JVM sizes its heap from --mem" "no cgroup for a rootless run on this host (docs/compatibility.md)"
	else
		t_eq "the JVM sizes its heap from --mem" "$(printf 'Memory Limit: 1.00G\n268435456')" "$OUT"
	fi
else
	t_skip "javac, java" "not installed"
fi
# Go, Rust and the JDK as Debian installs them (scripts/install-deps): the
# sandbox sees the system paths, not a toolchain under the caller's home
# (rustup's, say). Missing, a row is skipped, which CI counts as a failure.
if [ -x /usr/bin/go ]; then
	mrun "${A[@]}" --env GOCACHE=/tmp/gc --env GOPATH=/tmp/gp --env GOFLAGS=-mod=mod -- /bin/sh -c 'mkdir -p /tmp/m && cd /tmp/m && printf "module m\ngo 1.19\n" > go.mod && printf "package main\nimport \"fmt\"\nfunc main(){fmt.Println(\"go-ok\")}\n" > main.go && printf "package main\nimport (\"net\";\"testing\")\nfunc TestListen(t *testing.T){l,err:=net.Listen(\"tcp\",\"127.0.0.1:0\");if err!=nil{t.Fatal(err)};c,err:=net.Dial(\"tcp\",l.Addr().String());if err!=nil{t.Fatal(err)};c.Close();l.Close()}\n" > main_test.go && go build -o m . && ./m && go test . >/dev/null && echo go-test-ok'
	t_eq "go build, and go test with net.Listen and a loopback dial" "$(printf 'go-ok\ngo-test-ok')" "$OUT"
else
	t_skip "go build and go test" "no /usr/bin/go (golang-go)"
fi
if [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ]; then
	mrun "${A[@]}" -- /bin/sh -c 'printf "fn main(){println!(\"rust-ok\");}\n" > r.rs && rustc -O r.rs -o r && ./r && mkdir -p c/src && cd c && printf "[package]\nname = \"c\"\nversion = \"0.1.0\"\nedition = \"2021\"\n" > Cargo.toml && printf "fn main(){println!(\"cargo-ok\");}\n#[test]\nfn t(){ let l = std::net::TcpListener::bind(\"127.0.0.1:0\").unwrap(); std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap(); }\n" > src/main.rs && CARGO_HOME=/tmp/ch cargo build -q --offline && ./target/debug/c && CARGO_HOME=/tmp/ch cargo test -q --offline 2>&1 | grep -o "test result: ok"'
	t_eq "rustc, and cargo build and test offline (a loopback listener)" "$(printf 'rust-ok\ncargo-ok\ntest result: ok')" "$OUT"
else
	t_skip "rustc and cargo" "no /usr/bin/rustc and /usr/bin/cargo (rustc, cargo)"
fi
if have javac && have java; then
	mrun "${A[@]}" -- /bin/sh -c "cat > S.java <<'EOF'
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
public class S {
  public static void main(String[] a) throws Exception {
    HttpServer s = HttpServer.create(new InetSocketAddress(\"127.0.0.1\", 0), 0);
    s.createContext(\"/\", x -> { byte[] b = \"java-http-ok\".getBytes(); x.sendResponseHeaders(200, b.length); x.getResponseBody().write(b); x.close(); });
    s.start();
    HttpClient c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
    HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(\"http://127.0.0.1:\" + s.getAddress().getPort() + \"/\")).build(), HttpResponse.BodyHandlers.ofString());
    System.out.println(r.body());
    s.stop(0);
  }
}
EOF
javac S.java && java S"
	t_eq "java http server and HttpClient over loopback" java-http-ok "$OUT"
fi
# Interface lists come from a netlink route query, which the agent profile
# allows (the code profile refuses it on purpose: docs/compatibility.md).
if have python3; then
	mrun "${A[@]}" -- python3 -c 'import socket; print(socket.if_nameindex())'
	t_eq "python socket.if_nameindex (netlink route)" "[(1, 'lo')]" "$OUT"
fi
if have node; then
	mrun "${A[@]}" -- node -e 'console.log(Object.keys(require("os").networkInterfaces()).join())'
	t_eq "node os.networkInterfaces (netlink route)" lo "$OUT"
fi
