#!/bin/bash
# The egress attack suite: every attack_net_* program runs inside
# `moat run --net proxy` with an allowed upstream (up.test on the host's
# 127.0.0.2) and an internal service (MOAT-SECRET on the host's 127.0.0.1)
# that must stay out of reach. Each attack must exit 0 (blocked), and every
# attempt that went through the gateway must be logged as denied.
#
# As root, the upstreams and moat itself run inside a network namespace made
# here, holding only loopback: even a gateway that failed would have nowhere
# to send a packet. Rootless, attacks whose target is outside loopback are
# skipped rather than aimed at the host's real network.
. "$MOAT_SRC/lib.sh"
cd "$MOAT_TDIR"

NS=""
IN=()
if is_root && command -v ip >/dev/null && ip netns add "moat-gwt-$$" 2>/dev/null; then
	NS="moat-gwt-$$"
	ip -n "$NS" link set lo up
	# nsenter --net enters only the network namespace; `ip netns exec`
	# would also remount /sys in a new mount namespace, where moat finds
	# no cgroup to delegate and falls back to rlimits: the attacks would
	# not run under the limits users get.
	IN=(nsenter --net="/run/netns/$NS")
fi
cleanup() {
	[ -n "${UPSTREAM:-}" ] && kill "$UPSTREAM" 2>/dev/null && wait "$UPSTREAM" 2>/dev/null
	[ -n "$NS" ] && ip netns delete "$NS"
}
trap cleanup EXIT
if is_root && [ -z "$NS" ]; then
	t_skip "network namespace for the attack suite" "ip netns add failed"
fi

ABSTRACT="moat-gwt-abstract-$$"
"${IN[@]}" python3 "$MOAT_SRC/integration/net_upstream.py" --up 127.0.0.2:0 --secret 127.0.0.1:0 \
	--dns 127.0.0.1:0 --rebind-first 127.0.0.2 --abstract "$ABSTRACT" --ports ports.json &
UPSTREAM=$!
for _ in $(seq 100); do [ -s ports.json ] && break; sleep 0.1; done
UP=$(json ports.json 'j["up"]')
SECRET=$(json ports.json 'j["secret"]')
DNS=$(json ports.json 'j["dns"]')

# Attacks whose target lies outside loopback: only run where a failure
# could not reach a real network.
outside="net_ipv6_ula net_ipv6_sitelocal net_ipv6_zone net_metadata_v4 net_metadata_v6 net_rfc1918_10
net_rfc1918_172 net_rfc1918_192 net_cgnat net_multicast net_broadcast net_reserved net_benchmark net_ietf
net_metadata_azure net_metadata_azure_name net_metadata_eks net_metadata_scaleway net_metadata_gcp_v6
net_transparent_literal"
# Attacks that never talk to the gateway, and one whose only request is
# allowed (its smuggled second request is dropped unseen).
direct="net_direct_connect net_direct_outside net_direct_ipv6 net_raw_socket net_packet_socket net_dns_lookup
net_dns_udp net_abstract_unix net_transparent_udp net_transparent_ipv6 net_transparent_nft_flush"

# The rules allow every address the attacks aim at, on the internal
# service's port, so that for them only the SSRF guard stands in the way
# (a rule names an address once: every spelling normalises to it).
LITERALS=()
for lit in 127.0.0.1 0.0.0.0 '[::1]' '[::ffff:127.0.0.1]' '[::127.0.0.1]' '[::ffff:0:7f00:1]' \
	'[2002:7f00:1::]' '[2001:0:4136:e378:8000:63bf:80ff:fffe]' '[64:ff9b::7f00:1]' '[64:ff9b:1::7f00:1]' \
	'[fd00::1]' '[fec0::1]' 169.254.169.254 '[fd00:ec2::254]' 10.0.0.1 172.16.0.1 192.168.1.1 \
	100.64.0.1 224.0.0.1 255.255.255.255 240.0.0.1 198.18.0.1 192.0.0.8 168.63.129.16 169.254.170.23 \
	169.254.42.42 '[fd20:ce::254]'; do
	LITERALS+=(--allow-host "$lit:$SECRET")
done

# Rules that only a policy file states (deny and approve beside a broader
# allow) for the net_rule_* attacks; the test name server answers every
# name below wild.test with the allowed upstream.
cat >rules.yaml <<EOF
version: 1
network:
  mode: proxy
  deny:
    - secret.wild.test
    - "*.internal.wild.test"
    - {host: paths.wild.test, paths: ["/admin/*"]}
    - {host: get.wild.test, methods: [DELETE]}
  approve:
    - held.wild.test
  allow:
    - {host: "*.wild.test", ports: [443, $UP]}
EOF

# The byte budget for net_budget_head.
cat >budget.yaml <<EOF
version: 1
network:
  mode: proxy
  budget: {bytes_up: 4K}
EOF

# The value of the secret the net_secret_* attacks try to misuse.
export MOAT_T_GH_VALUE="ghp_attackvalue$RANDOM$RANDOM$RANDOM"

n=0 i=0
for a in "$MOAT_ATTACKS"/attack_net_*; do
	[ -x "$a" ] || continue
	name=$(basename "$a")
	name=${name#attack_}
	# The net_tls_* attacks need an HTTPS upstream: net_secrets_keepalive.sh runs them.
	case "$name" in net_tls_*) continue ;; esac
	if printf '%s\n' $outside | grep -qx "$name"; then
		if [ -z "$NS" ]; then
			t_na "$name" "its target is outside loopback: it runs in the root pass, inside a test network namespace"
			continue
		fi
	else
		# Under a sanitizer build the others alternate between modes
		# (lib.sh: in_other_mode); they count as run.
		i=$((i + 1))
		if in_other_mode "$i"; then
			t_na "$name" "the sanitizer pass runs it $(other_mode)"
			n=$((n + 1))
			continue
		fi
	fi
	log="$MOAT_TDIR/$name.jsonl"
	RULES=()
	# The descriptor flood needs more descriptors than a sandbox gets by
	# default (256), as a policy could give it.
	[ "$name" = net_conn_flood ] && RULES=(--files 2048)
	[ "$name" = net_budget_head ] && RULES=(--policy budget.yaml)
	# The net_secret_* attacks hold a placeholder for a secret bound to
	# bound.wild.test; its value is in moat's environment only.
	case "$name" in net_secret_*) RULES=(--policy rules.yaml --secret "GH_TOKEN=env:MOAT_T_GH_VALUE@bound.wild.test") ;; esac
	# Transparent egress attacks run in that mode (net_transparent.sh
	# probes the kernel features it needs).
	case "$name" in net_transparent_*) RULES=(--net transparent) ;; esac
	case "$name" in net_rule_* | net_path_* | net_method_* | net_original_url | net_dns_answer_hidden | net_metadata_azure_name)
		RULES=(--policy rules.yaml) ;;
	esac
	OUT=$("${IN[@]}" "$MOAT" run "${RULES[@]}" --allow-host "up.test:$UP" "${LITERALS[@]}" --allow-host "internal.test:$SECRET" \
		--allow-host "rebind.test:$SECRET" --allow-private 127.0.0.2/32 \
		--net-host up.test=127.0.0.2 --net-host internal.test=127.0.0.1 --resolver "127.0.0.1:$DNS" \
		--net-log "$log" --env "MOAT_T_UP=up.test:$UP" --env "MOAT_T_SECRET_PORT=$SECRET" \
		--env "MOAT_T_ABSTRACT=$ABSTRACT" --ro "$a:/tmp/attack" --time 60s -- /tmp/attack 2>&1) && RC=0 || RC=$?
	n=$((n + 1))
	if [ "$RC" != 0 ]; then
		t_fail "$name" "exit $RC (0 blocked, 1 escaped, 2 unexpected)" "$OUT"
		continue
	fi
	if printf '%s' "$OUT" | grep -q "no proxy port"; then
		t_fail "$name" "the sandbox had no proxy port: nothing was tested" "$OUT"
		continue
	fi
	if printf '%s\n' $direct net_pipeline net_original_url | grep -qx "$name"; then
		t_ok "$name: $OUT"
	elif grep -q '"decision":"deny"' "$log" 2>/dev/null; then
		t_ok "$name: $OUT (logged)"
		case "$name" in net_secret_*)
			t_match "$name: a secret.misuse alert naming the secret" '"alert":true.*"secret":"GH_TOKEN".*"type":"secret.misuse"' "$(cat "$log")"
			t_eq "$name: the value is in no log" "" "$(grep -l "$MOAT_T_GH_VALUE" "$log")" ;;
		esac
		if [ "$name" = net_log_flood ]; then
			# 2,000 refusals of 8 KiB paths wrote 17 MB before the
			# rate cap; now a burst, then one net.flood a second.
			size=$(wc -c <"$log")
			t_match "net_log_flood: the log stays small ($size bytes, under 2 MB)" '^(1?[0-9]{1,6})$' "$size"
			t_match "net_log_flood: the held-back events are counted in net.flood" '"type":"net.flood"' "$(cat "$log")"
		fi
	else
		t_fail "$name" "blocked, but no denial in the gateway's log" "$OUT" "$(cat "$log" 2>/dev/null)"
	fi
done
# The control for the net_rule_* attacks: the same rules serve a name below
# wild.test that no deny or approve names, on the same port, so their 403s
# come from the rules and not from a name that does not resolve.
OUT=$("${IN[@]}" "$MOAT" run --policy rules.yaml --allow-private 127.0.0.2/32 --resolver "127.0.0.1:$DNS" \
	--time 60s -- python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://other.wild.test:%s/" % sys.argv[1], timeout=20).read().decode())' "$UP" 2>&1)
t_match "the net_rule_* rules serve other.wild.test on the same port" "upstream-ok" "$OUT"
t_match "at least 40 egress attacks ran" '^([4-9][0-9]|[1-9][0-9]{2,})$' "$n"
t_eq "the internal service was never reached" "" "$(grep -l MOAT-SECRET "$MOAT_TDIR"/*.jsonl 2>/dev/null)"
