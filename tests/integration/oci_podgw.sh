#!/bin/bash
# moat's egress gateway in front of a Kubernetes pod's network: a bundle
# names the pod's network namespace by path (as containerd's CRI does) and
# its policy has egress rules (network.mode proxy). The container is NOT
# put in the pod's namespace: it keeps a private one holding only the
# gateway's port, and the gateway's upstream side (its connections out,
# its DNS) is made in the pod's namespace (netproxy.c: the gateway's
# thread enters it). No cluster: the test makes the pod's namespace itself
# (unshare -n, a veth pair inside it, the address a CNI plugin would give)
# with an HTTP server on that address, reachable only from inside it, and
# another on the host's loopback, reachable only from the host's.
#
# Root: as is. Rootless: as root of the user's own user namespace
# (rootless containerd under rootlesskit), the pod's namespace made there;
# a runtime without privilege over the pod's namespace is refused.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

BB=$(command -v busybox || true)
if [ -z "$BB" ] || ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	t_skip "oci pod gateway" "needs a static busybox (Debian: busybox-static) for the bundle's root"
	exit 0
fi

cat >srv.py <<'PY'
import http.server, os, sys
addr, port, body, portfile = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer((addr, port), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY

# A server only the host's namespace reaches: its loopback.
python3 srv.py 127.0.0.1 0 from-host-only host.port &
HSRV=$!
trap 'kill $HSRV 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s host.port ] && break; sleep 0.1; done
HP=$(cat host.port 2>/dev/null)
[ -n "$HP" ] || { t_fail "the host's test server started" "no port"; exit 0; }

cat >pol.yaml <<EOF
version: 1
name: k8s-pod-gateway
network:
  mode: proxy
  allow_private: [10.213.78.0/24, 127.0.0.1/32]
  hosts:
    pod.test: 10.213.78.2
    other.test: 10.213.78.2
    host.test: 127.0.0.1
  allow:
    - {host: pod.test, ports: [8080]}
    - {host: host.test, ports: [$HP]}
limits: {memory: 256M, pids: 64}
EOF
t_check "the policy is valid" "$MOAT" policy check pol.yaml
# The same with transparent egress: a program that ignores the proxy
# variables, its lookups answered by the DNS stub, its connections
# redirected to the gateway.
sed 's/^  mode: proxy$/  mode: transparent/' pol.yaml >polt.yaml

# bundle DIR ARGS_JSON NETWORK_PATH [POLICY]: a pod's container, its
# network namespace given by path, with the policy and an audit log.
bundle() {
	mkdir -p "$1/rootfs/bin" "$1/rootfs/tmp"
	cp "$BB" "$1/rootfs/bin/busybox"
	for c in sh echo cat wget cut tr readlink grep; do ln -sf busybox "$1/rootfs/bin/$c"; done
	cat >"$1/config.json" <<JSON
{"ociVersion":"1.0.2","root":{"path":"rootfs"},
 "process":{"args":$2,"env":["PATH=/bin"],"cwd":"/"},
 "linux":{"namespaces":[{"type":"pid"},{"type":"mount"},{"type":"ipc"},{"type":"uts"},
   {"type":"network","path":"$3"}]},
 "annotations":{"dev.moat.policy":"$MOAT_TDIR/${4:-pol.yaml}","dev.moat.audit":"$MOAT_TDIR/$1.audit"}}
JSON
}

APP='["sh","-c","echo net=$(readlink /proc/self/ns/net); echo ifs=$(cut -d: -f1 /proc/net/dev | tr -d \" \" | grep -v \"|\" | tr \"\\n\" ,); echo pod=$(wget -q -O - http://pod.test:8080/ 2>&1); echo other=$(wget -q -O - http://other.test:8080/ 2>&1); echo host=$(wget -q -O - http://host.test:'"$HP"'/ 2>&1); echo done; exec sleep 1000"]'

if ! is_root; then
	# A pod network namespace the runtime has no privilege over (made in
	# a user namespace of the test's own): refused, with the reason.
	unshare -Urn sleep 1000 &
	SP=$!
	for _ in $(seq 50); do [ "$(readlink /proc/$SP/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.1; done
	bundle u1 '["true"]' /proc/$SP/ns/net
	"$MOAT" oci --root "$MOAT_TDIR/u-state" create --bundle u1 u1 </dev/null >/dev/null 2>u1.err
	t_match "rootless: a gateway upstream in a pod namespace the runtime has no privilege over is refused" \
		"^1 moat-oci: linux.namespaces\\[4\\].path: /proc/$SP/ns/net: .*needs CAP_SYS_ADMIN in the user namespace that owns it" \
		"$? $(cat u1.err)"
	"$MOAT" oci --root "$MOAT_TDIR/u-state" delete --force u1 >/dev/null 2>&1
	kill $SP
	wait $SP 2>/dev/null
fi

# The scenario, as the runtime's caller: root of the host, or (rootless)
# root of the user's own user namespace, where the pod's namespace is made.
cat >scen.sh <<'SH'
set -u
cd "$1"
HP=$2
rm -f pod.port
unshare -n sh -c '
	ip link set lo up
	ip link add pod0 type veth peer name pod1 && ip link set pod1 up && ip link set pod0 up &&
		ip addr add 10.213.78.2/24 dev pod0 || exit 1
	python3 srv.py 10.213.78.2 8080 from-pod-network pod.port &
	exec sleep 1000' &
SP=$!
for _ in $(seq 100); do [ -s pod.port ] && break; sleep 0.1; done
echo "podport=$(cat pod.port 2>/dev/null)"
echo "podns=$(readlink /proc/$SP/ns/net)"
sed -i "s|@NS@|/proc/$SP/ns/net|" app/config.json
R="$1/gw-state"
"$MOAT" oci --root "$R" create --bundle app app </dev/null >app.out 2>app.err
echo "create=$?"
"$MOAT" oci --root "$R" state app | tr -d ' \n' >app.state
echo
echo "initns=$(readlink /proc/$(cat "$R/app/init.pid")/ns/net)"
echo "podsysctl=$(nsenter --net=/proc/$SP/ns/net cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
echo "appsysctl=$(nsenter --net=/proc/$(cat "$R/app/init.pid")/ns/net cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
"$MOAT" oci --root "$R" start app
for _ in $(seq 600); do grep -q '^done' app.out && break; sleep 0.1; done
# A second container of the pod, as containerd's CRI writes it: the
# pause container's /proc/PID/ns/net (PID: its keeper's), ipc and uts.
KP=$("$MOAT" oci --root "$R" state app | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
sed -i "s|@NS@|/proc/$KP/ns/net|; s|{\"type\":\"ipc\"},{\"type\":\"uts\"}|{\"type\":\"ipc\",\"path\":\"/proc/$KP/ns/ipc\"},{\"type\":\"uts\",\"path\":\"/proc/$KP/ns/uts\"}|" app2/config.json
"$MOAT" oci --root "$R" create --bundle app2 app2 </dev/null >app2.out 2>app2.err
echo "create2=$?"
echo "init2ns=$(readlink /proc/$(cat "$R/app2/init.pid")/ns/net)"
"$MOAT" oci --root "$R" start app2
for _ in $(seq 600); do grep -q '^done' app2.out && break; sleep 0.1; done
"$MOAT" oci --root "$R" delete --force app2
sed -i "s|@NS@|/proc/$SP/ns/net|" app3/config.json
"$MOAT" oci --root "$R" create --bundle app3 app3 </dev/null >app3.out 2>app3.err
echo "create3=$?"
"$MOAT" oci --root "$R" state app3 | tr -d ' \n' >app3.state
"$MOAT" oci --root "$R" start app3
for _ in $(seq 600); do grep -q '^done' app3.out && break; sleep 0.1; done
"$MOAT" oci --root "$R" delete --force app3
"$MOAT" oci --root "$R" delete --force app
# Whatever the container's server got, only its own host's server
# answers on the host's loopback: the host's server is still up.
echo "hostcheck=$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen("http://127.0.0.1:"+sys.argv[1]+"/").read().decode())' "$HP")"
kill $(cat /proc/$SP/task/$SP/children 2>/dev/null) 2>/dev/null
kill $SP
SH
bundle app "$APP" @NS@
bundle app2 "$APP" @NS@
bundle app3 '["sh","-c","unset http_proxy HTTP_PROXY; echo pod=$(wget -q -O - http://pod.test:8080/ 2>&1); echo host=$(wget -q -O - http://host.test:'"$HP"'/ 2>&1); echo done"]' @NS@ polt.yaml
# The sysctls containerd's CRI asks for every pod: the container's own
# network namespace takes them (its init writes them there), not the pod's.
sed -i 's|"linux":{|"linux":{"sysctl":{"net.ipv4.ip_unprivileged_port_start":"0","net.ipv4.ping_group_range":"0 2147483647"},|' app/config.json app2/config.json
if is_root; then
	MOAT="$MOAT" bash scen.sh "$MOAT_TDIR" "$HP" >scen.out 2>&1
else
	MOAT="$MOAT" unshare -Ur bash scen.sh "$MOAT_TDIR" "$HP" >scen.out 2>&1
fi
out="$(cat scen.out app.out 2>/dev/null)"
t_match "the pod's test server runs in the pod's namespace" '^podport=8080' "$out"
t_match "a container with an egress policy, given a pod's namespace, is created" '^create=0' "$out $(cat app.err 2>/dev/null)"
podns=$(sed -n 's/^podns=//p' scen.out)
initns=$(sed -n 's/^initns=//p' scen.out)
t_match "its init has a network namespace" '^net:\[' "$initns"
t_match "the CRI's network sysctls are written in the container's own namespace" '^appsysctl=0$' "$out"
t_match "not in the pod's" '^podsysctl=1024$' "$out"
t_nomatch "its init is not in the pod's network namespace" "^${podns//[\[\]]/.}\$" "$initns"
t_match "its state: behind the gateway, upstream in the pod's namespace" \
	'"network":\{"mode":"proxy","path":"/proc/[0-9]+/ns/net","upstream_netns":"pod"\}' "$(cat app.state 2>/dev/null)"
t_eq "its isolation report says so" "proxy pod" \
	"$(python3 -c 'import json,sys; i=json.load(open(sys.argv[1]))["isolation"]; print(i["egress"], i["upstream_netns"])' app.state 2>&1)"
t_match "the container sees no pod interface (only its loopback)" '^ifs=lo,$' "$out"
t_match "it reaches the pod network's server through the gateway" '^pod=from-pod-network$' "$out"
t_match "a host the policy does not allow is refused by the gateway" '^other=.*(403|Forbidden)' "$out"
t_nomatch "a server only the host's namespace reaches is not reached (upstream is the pod's)" 'from-host-only' "$(grep '^host=' <<<"$out")"
t_match "(that server was up all along)" '^hostcheck=from-host-only' "$out"
t_match "the audit log has the allowed request" '"type":"net.request".*"host":"pod.test".*"decision":"allow"' "$(cat app.audit 2>/dev/null)"
t_match "and the refused one" '"type":"net.request".*"host":"other.test".*"decision":"deny"' "$(cat app.audit 2>/dev/null)"
t_check "the audit log verifies" "$MOAT" audit verify app.audit

out2="$(cat scen.out app2.out 2>/dev/null)"
t_match "a second container naming the pause container's /proc/PID/ns paths is created" '^create2=0' "$out2 $(cat app2.err 2>/dev/null)"
init2ns=$(sed -n 's/^init2ns=//p' scen.out)
t_match "it has a network namespace of its own: neither the pod's nor the pause container's" '^net:\[' \
	"$([ "$init2ns" != "$podns" ] && [ "$init2ns" != "$initns" ] && echo "$init2ns")"
t_match "it sees no pod interface" '^ifs=lo,$' "$(cat app2.out 2>/dev/null)"
t_match "it reaches the pod network's server through its own gateway" '^pod=from-pod-network$' "$(cat app2.out 2>/dev/null)"
t_nomatch "and not the host's" 'from-host-only' "$(grep '^host=' app2.out)"
t_match "its audit log has the request" '"type":"net.request".*"host":"pod.test".*"decision":"allow"' "$(cat app2.audit 2>/dev/null)"

out3="$(cat scen.out app3.out 2>/dev/null)"
t_match "transparent egress: a container given the pod's namespace is created" '^create3=0' "$out3 $(cat app3.err 2>/dev/null)"
t_match "its state: transparent, upstream in the pod's namespace" \
	'"network":\{"mode":"transparent","path":"/proc/[0-9]+/ns/net","upstream_netns":"pod"\}' "$(cat app3.state 2>/dev/null)"
t_match "without the proxy variables it reaches the pod network's server through the gateway" '^pod=from-pod-network$' "$out3"
t_nomatch "and not the server only the host's namespace reaches" 'from-host-only' "$(grep '^host=' app3.out)"
t_match "its audit log has the request" '"type":"net.request".*"host":"pod.test".*"decision":"allow"' "$(cat app3.audit 2>/dev/null)"
