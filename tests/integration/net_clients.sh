#!/bin/bash
# Package managers and git through the gateway, against servers this script
# starts on loopback (as root, inside a network namespace made here): pip
# from a package index served here, git clone and push over the smart HTTP
# protocol (git http-backend), in proxy mode and in transparent mode.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

NS=""
IN=()
if is_root; then
	if command -v ip >/dev/null && ip netns add "moat-nct-$$" 2>/dev/null; then
		NS="moat-nct-$$"
		ip -n "$NS" link set lo up
		IN=(nsenter --net="/run/netns/$NS")
	else
		t_skip "network namespace for the client tests" "ip netns add failed"
	fi
fi
mrun() {
	OUT=$("${IN[@]}" "$MOAT" "$@" 2>"$MOAT_TDIR/.err") && RC=0 || RC=$?
	ERR=$(cat "$MOAT_TDIR/.err")
}

# A package index with one wheel, made here.
mkdir -p files/simple/moatprobe files/packages
python3 - <<'EOF'
import base64, hashlib, zipfile
name = "files/packages/moatprobe-1.0-py3-none-any.whl"
entries = {
    "moatprobe/__init__.py": b"VALUE = 'moatprobe-ok'\n",
    "moatprobe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: moatprobe\nVersion: 1.0\n",
    "moatprobe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: moat-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for k, v in entries.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (k, d, len(v))
record += "moatprobe-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(name, "w") as z:
    for k, v in entries.items():
        z.writestr(k, v)
    z.writestr("moatprobe-1.0.dist-info/RECORD", record)
h = hashlib.sha256(open(name, "rb").read()).hexdigest()
open("files/simple/index.html", "w").write('<a href="moatprobe/">moatprobe</a>\n')
open("files/simple/moatprobe/index.html", "w").write(
    '<a href="../../packages/moatprobe-1.0-py3-none-any.whl#sha256=%s">moatprobe-1.0-py3-none-any.whl</a>\n' % h)
EOF

# An apt repository (flat, unsigned: [trusted=yes]) with one package.
APT_OK=""
if command -v dpkg-deb >/dev/null && command -v dpkg-scanpackages >/dev/null && command -v apt-get >/dev/null; then
	mkdir -p debpkg/DEBIAN debpkg/usr/share/moatprobe files/apt
	printf 'Package: moatprobe\nVersion: 1.0\nArchitecture: all\nMaintainer: moat test <t@moat.test>\nDescription: moat test package\n' \
		>debpkg/DEBIAN/control
	echo moatprobe-ok >debpkg/usr/share/moatprobe/v
	dpkg-deb --build -Zgzip debpkg files/apt/moatprobe_1.0_all.deb >/dev/null &&
		(cd files/apt && dpkg-scanpackages -m . /dev/null >Packages 2>/dev/null) && APT_OK=1
fi

# A bare repository with one commit, served by git http-backend.
GIT=(git -c user.email=t@moat.test -c user.name=moat-test -c init.defaultBranch=main)
"${GIT[@]}" init -q --bare files/repo.git
"${GIT[@]}" clone -q files/repo.git seed 2>/dev/null
echo first >seed/README
"${GIT[@]}" -C seed add README
"${GIT[@]}" -C seed commit -qm first
"${GIT[@]}" -C seed push -q origin HEAD:main
git -C files/repo.git symbolic-ref HEAD refs/heads/main
chmod -R a+rwX files

"${IN[@]}" python3 "$MOAT_SRC/integration/net_upstream.py" --files 127.0.0.2:0 --root files --ports ports.json &
UPSTREAM=$!
cleanup() {
	kill "$UPSTREAM" 2>/dev/null
	wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
FILES=$(json ports.json 'j["files"]')

MODES="proxy"
mrun run --net transparent -- true
if [ "$RC" = 0 ]; then
	MODES="proxy transparent"
else
	t_skip "the clients through transparent egress" "$ERR"
fi

n=1
for mode in $MODES; do
	# In transparent mode the proxy variables are taken away: the
	# clients then reach the index only through the redirect.
	E=()
	[ "$mode" = transparent ] && E=(env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy)
	NET=(--net "$mode" --allow-host "files.test:$FILES" --allow-private 127.0.0.2/32 --net-host files.test=127.0.0.2)
	mrun run "${NET[@]}" -- "${E[@]}" python3 -m pip download -q --no-deps --no-cache-dir --disable-pip-version-check \
		--index-url "http://files.test:$FILES/simple/" --trusted-host files.test -d /tmp/dl moatprobe
	[ "$RC" = 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/#   stderr: /'
	t_eq "pip download from a package index ($mode)" 0 "$RC"
	mrun run "${NET[@]}" -- "${E[@]}" sh -c "python3 -m pip install -q --no-deps --no-cache-dir --disable-pip-version-check \
		--index-url http://files.test:$FILES/simple/ --trusted-host files.test --target /tmp/site moatprobe &&
		PYTHONPATH=/tmp/site python3 -c 'import moatprobe; print(moatprobe.VALUE)'"
	t_eq "pip install, then import ($mode)" moatprobe-ok "$OUT"

	# Clone, then push a commit holding 2 MB (over git's 1 MB post
	# buffer, so the push body goes chunked).
	n=$((n + 1))
	mrun run "${NET[@]}" -- "${E[@]}" sh -c "cd /tmp && git clone -q http://files.test:$FILES/git/repo.git c && cd c &&
		head -c 2000000 /dev/urandom >blob$n && git add blob$n &&
		git -c user.email=t@moat.test -c user.name=moat-test commit -qm 'push $n' &&
		git push -q origin HEAD:main && cat README"
	[ "$RC" = 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/#   stderr: /'
	t_eq "git clone over smart HTTP ($mode)" first "$OUT"
	t_eq "git push of 2 MB over smart HTTP reached the server ($mode)" "push $n" \
		"$(git -C files/repo.git log -1 --format=%s main 2>&1)"

	# apt-get update and download from the repository, its state kept
	# under /tmp (the sandbox's /var is read-only).
	if [ -n "$APT_OK" ]; then
		mrun run "${NET[@]}" -- "${E[@]}" sh -c "mkdir -p /tmp/apt/state/lists/partial /tmp/apt/cache/archives/partial /tmp/dl &&
			echo 'deb [trusted=yes] http://files.test:$FILES/apt/ ./' >/tmp/apt/sources.list &&
			O='-o Dir::State=/tmp/apt/state -o Dir::Cache=/tmp/apt/cache -o Dir::Etc::SourceList=/tmp/apt/sources.list
			   -o Dir::Etc::SourceParts=/nonexistent -o Debug::NoLocking=1' &&
			apt-get \$O -q update >/dev/null && cd /tmp/dl && apt-get \$O -q download moatprobe >/dev/null &&
			dpkg-deb --fsys-tarfile moatprobe_1.0_all.deb | tar -xO ./usr/share/moatprobe/v"
		[ "$RC" = 0 ] || printf '%s\n' "$ERR" | tail -5 | sed 's/^/#   stderr: /'
		t_eq "apt-get update and download from a repository ($mode)" moatprobe-ok "$OUT"
	else
		t_na "apt through the gateway ($mode)" "dpkg-deb, dpkg-scanpackages or apt-get is not installed"
	fi
done
if [ "$MODES" != proxy ]; then
	t_match "transparent mode: the clients' requests were redirected (origin form, judged by name)" \
		'"host":"files.test"' "$("${IN[@]}" "$MOAT" run "${NET[@]}" --net-log "$MOAT_TDIR/t.jsonl" -- "${E[@]}" \
		python3 -c "import urllib.request; urllib.request.urlopen('http://files.test:$FILES/simple/')" >/dev/null 2>&1; cat "$MOAT_TDIR/t.jsonl")"
fi
