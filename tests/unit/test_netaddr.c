/* Unit tests: address literals, classification and the SSRF guard, driven
 * by the table of bypass forms that docs/network.md lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "hostname.h"
#include "netaddr.h"

/* One host as a client could write it in a URL, what the gateway reads it
 * as, and how the guard classifies it. canon NULL: the host is refused
 * before any address is looked at. */
typedef struct bypass {
	const char *host;
	const char *canon;
	moat_addr_class cls;
} bypass;

static const bypass bypasses[] = {
	/* loopback, every IPv4 spelling */
	{ "127.0.0.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "127.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "127.0.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "2130706433", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0x7f000001", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0x7f.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0X7F.0X0.0X0.0X1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0177.0.0.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0177.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "017700000001", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "127.000.000.001", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "0x7f.0.0.01", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "127.0.0.1.", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "127.255.255.254", "127.255.255.254", MOAT_ADDR_LOOPBACK },
	{ "%31%32%37.0.0.1", "127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", "127.0.0.1", MOAT_ADDR_LOOPBACK }, /* fullwidth digits */
	{ "127\xe3\x80\x82" "0\xe3\x80\x82" "0\xe3\x80\x82" "1", "127.0.0.1", MOAT_ADDR_LOOPBACK }, /* ideographic full stops */
	/* unspecified */
	{ "0", "0.0.0.0", MOAT_ADDR_UNSPECIFIED },
	{ "0.0.0.0", "0.0.0.0", MOAT_ADDR_UNSPECIFIED },
	{ "0x", "0.0.0.0", MOAT_ADDR_UNSPECIFIED },
	{ "[::]", "::", MOAT_ADDR_UNSPECIFIED },
	/* IPv6 loopback and IPv4 loopback wrapped in IPv6 */
	{ "[::1]", "::1", MOAT_ADDR_LOOPBACK },
	{ "[0:0:0:0:0:0:0:1]", "::1", MOAT_ADDR_LOOPBACK },
	{ "[::ffff:127.0.0.1]", "::ffff:127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "[::ffff:7f00:1]", "::ffff:127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "[::127.0.0.1]", "::127.0.0.1", MOAT_ADDR_LOOPBACK },
	{ "[::ffff:0:127.0.0.1]", "::ffff:0:7f00:1", MOAT_ADDR_LOOPBACK },
	{ "[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1", MOAT_ADDR_LOOPBACK },
	{ "[2002:7f00:1::]", "2002:7f00:1::", MOAT_ADDR_LOOPBACK },
	{ "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "2001:0:4136:e378:8000:63bf:80ff:fffe", MOAT_ADDR_LOOPBACK },
	/* cloud metadata */
	{ "169.254.169.254", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "2852039166", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "0xa9fea9fe", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "0251.0376.0251.0376", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "0xa9.0xfe.0xa9.0xfe", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "169.254.43518", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "169.16689662", "169.254.169.254", MOAT_ADDR_METADATA },
	{ "[::ffff:169.254.169.254]", "::ffff:169.254.169.254", MOAT_ADDR_METADATA },
	{ "[::ffff:a9fe:a9fe]", "::ffff:169.254.169.254", MOAT_ADDR_METADATA },
	{ "[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe", MOAT_ADDR_METADATA },
	{ "[64:ff9b:1::a9fe:a9fe]", "64:ff9b:1::a9fe:a9fe", MOAT_ADDR_METADATA },
	{ "[2002:a9fe:a9fe::]", "2002:a9fe:a9fe::", MOAT_ADDR_METADATA },
	{ "[fd00:ec2::254]", "fd00:ec2::254", MOAT_ADDR_METADATA },
	{ "169.254.170.2", "169.254.170.2", MOAT_ADDR_METADATA },
	{ "100.100.100.200", "100.100.100.200", MOAT_ADDR_METADATA },
	{ "168.63.129.16", "168.63.129.16", MOAT_ADDR_METADATA },       /* Azure WireServer, public space */
	{ "[::ffff:168.63.129.16]", "::ffff:168.63.129.16", MOAT_ADDR_METADATA },
	{ "[64:ff9b::a83f:8110]", "64:ff9b::a83f:8110", MOAT_ADDR_METADATA },
	{ "[2002:a83f:8110::]", "2002:a83f:8110::", MOAT_ADDR_METADATA },
	{ "2822734096", "168.63.129.16", MOAT_ADDR_METADATA },
	{ "169.254.169.253", "169.254.169.253", MOAT_ADDR_METADATA },   /* AWS Route 53 Resolver */
	{ "169.254.169.123", "169.254.169.123", MOAT_ADDR_METADATA },   /* AWS Time Sync */
	{ "169.254.170.23", "169.254.170.23", MOAT_ADDR_METADATA },     /* EKS Pod Identity Agent */
	{ "169.254.42.42", "169.254.42.42", MOAT_ADDR_METADATA },       /* Scaleway */
	{ "169.254.0.23", "169.254.0.23", MOAT_ADDR_METADATA },         /* Tencent Cloud */
	{ "192.0.0.192", "192.0.0.192", MOAT_ADDR_METADATA },           /* Oracle Cloud Classic */
	{ "[fd00:ec2::253]", "fd00:ec2::253", MOAT_ADDR_METADATA },
	{ "[fd00:ec2::123]", "fd00:ec2::123", MOAT_ADDR_METADATA },
	{ "[fd00:ec2::23]", "fd00:ec2::23", MOAT_ADDR_METADATA },
	{ "[fd00:ec2::1:2]", "fd00:ec2::1:2", MOAT_ADDR_METADATA },     /* anything in AWS's fd00:ec2::/32 */
	{ "[fd20:ce::254]", "fd20:ce::254", MOAT_ADDR_METADATA },       /* GCP, IPv6-only instances */
	{ "[fd00:42::42]", "fd00:42::42", MOAT_ADDR_METADATA },         /* Scaleway */
	{ "[fe80::a9fe:a9fe]", "fe80::a9fe:a9fe", MOAT_ADDR_METADATA },   /* OpenStack */
	/* private networks */
	{ "10.0.0.1", "10.0.0.1", MOAT_ADDR_PRIVATE },
	{ "012.1", "10.0.0.1", MOAT_ADDR_PRIVATE },
	{ "167772161", "10.0.0.1", MOAT_ADDR_PRIVATE },
	{ "172.16.0.1", "172.16.0.1", MOAT_ADDR_PRIVATE },
	{ "172.31.255.255", "172.31.255.255", MOAT_ADDR_PRIVATE },
	{ "192.168.1.1", "192.168.1.1", MOAT_ADDR_PRIVATE },
	{ "0xc0a80101", "192.168.1.1", MOAT_ADDR_PRIVATE },
	{ "[::ffff:10.0.0.1]", "::ffff:10.0.0.1", MOAT_ADDR_PRIVATE },
	{ "[2002:c0a8:101::1]", "2002:c0a8:101::1", MOAT_ADDR_PRIVATE },
	{ "[fc00::1]", "fc00::1", MOAT_ADDR_PRIVATE },
	{ "[fd12:3456:789a::1]", "fd12:3456:789a::1", MOAT_ADDR_PRIVATE },
	{ "100.64.0.1", "100.64.0.1", MOAT_ADDR_CGNAT },
	{ "100.127.255.255", "100.127.255.255", MOAT_ADDR_CGNAT },
	/* link-local, multicast, broadcast, reserved */
	{ "169.254.1.1", "169.254.1.1", MOAT_ADDR_LINK_LOCAL },
	{ "[fe80::1]", "fe80::1", MOAT_ADDR_LINK_LOCAL },
	{ "[febf::1]", "febf::1", MOAT_ADDR_LINK_LOCAL },
	{ "[fec0::1]", "fec0::1", MOAT_ADDR_RESERVED },
	{ "224.0.0.1", "224.0.0.1", MOAT_ADDR_MULTICAST },
	{ "239.255.255.250", "239.255.255.250", MOAT_ADDR_MULTICAST },
	{ "[ff02::1]", "ff02::1", MOAT_ADDR_MULTICAST },
	{ "255.255.255.255", "255.255.255.255", MOAT_ADDR_BROADCAST },
	{ "4294967295", "255.255.255.255", MOAT_ADDR_BROADCAST },
	{ "240.0.0.1", "240.0.0.1", MOAT_ADDR_RESERVED },
	{ "192.88.99.1", "192.88.99.1", MOAT_ADDR_RESERVED },
	{ "[100::1]", "100::1", MOAT_ADDR_RESERVED },
	{ "[::8.8.8.8]", "::8.8.8.8", MOAT_ADDR_RESERVED },
	{ "[::ffff:0:808:808]", "::ffff:0:808:808", MOAT_ADDR_RESERVED },
	{ "[4000::1]", "4000::1", MOAT_ADDR_RESERVED },
	{ "198.18.0.1", "198.18.0.1", MOAT_ADDR_BENCHMARK },
	{ "198.19.255.255", "198.19.255.255", MOAT_ADDR_BENCHMARK },
	{ "[2001:2::1]", "2001:2::1", MOAT_ADDR_BENCHMARK },
	{ "192.0.2.1", "192.0.2.1", MOAT_ADDR_DOCUMENTATION },
	{ "198.51.100.1", "198.51.100.1", MOAT_ADDR_DOCUMENTATION },
	{ "203.0.113.1", "203.0.113.1", MOAT_ADDR_DOCUMENTATION },
	{ "[2001:db8::1]", "2001:db8::1", MOAT_ADDR_DOCUMENTATION },
	{ "[3fff::1]", "3fff::1", MOAT_ADDR_DOCUMENTATION },
	{ "192.0.0.1", "192.0.0.1", MOAT_ADDR_IETF },
	{ "192.0.0.170", "192.0.0.170", MOAT_ADDR_IETF },
	{ "[2001:10::1]", "2001:10::1", MOAT_ADDR_IETF },
	/* public addresses: the guard lets them through (the allowlist still
	 * has to name them) */
	{ "8.8.8.8", "8.8.8.8", MOAT_ADDR_PUBLIC },
	{ "134744072", "8.8.8.8", MOAT_ADDR_PUBLIC },
	{ "172.32.0.1", "172.32.0.1", MOAT_ADDR_PUBLIC },
	{ "100.128.0.1", "100.128.0.1", MOAT_ADDR_PUBLIC },
	{ "[2606:4700::1111]", "2606:4700::1111", MOAT_ADDR_PUBLIC },
	{ "[::ffff:8.8.8.8]", "::ffff:8.8.8.8", MOAT_ADDR_PUBLIC },
	{ "[2002:808:808::]", "2002:808:808::", MOAT_ADDR_PUBLIC },
	{ "[64:ff9b::808:808]", "64:ff9b::808:808", MOAT_ADDR_PUBLIC },
	/* refused before any address is read */
	{ "1.2.3.4.5", NULL, 0 },
	{ "256.0.0.1", NULL, 0 },
	{ "127.0.0.256", NULL, 0 },
	{ "4294967296", NULL, 0 },
	{ "0x100000000", NULL, 0 },
	{ "08.0.0.1", NULL, 0 },
	{ "0x7g.1", NULL, 0 },
	{ "127..0.1", NULL, 0 },
	{ "127.0.0.1..", NULL, 0 },
	{ "evil.127", NULL, 0 },
	{ "[fe80::1%25eth0]", NULL, 0 },
	{ "[fe80::1%eth0]", NULL, 0 },
	{ "[127.0.0.1]", NULL, 0 },
	{ "::1", "::1", MOAT_ADDR_LOOPBACK },
	{ "127.0.0.1%00.allowed.test", NULL, 0 },
	{ "127.0.0.1%2f", NULL, 0 },
	{ "127.0.0.1\\@allowed.test", NULL, 0 },
	{ "127.0.0.1#@allowed.test", NULL, 0 },
	{ "allowed.test@127.0.0.1", NULL, 0 },
	{ "127.0.0.1 ", NULL, 0 },
	{ "%2531%2532%2537.0.0.1", NULL, 0 },
	{ "127.0.0.1\xef\xbc\xa0" "allowed.test", NULL, 0 }, /* fullwidth '@' maps to '@' */
};

static void test_bypass_table(void **state)
{
	(void)state;
	size_t refused = 0, special = 0;
	for (size_t i = 0; i < ELEMENTSOF(bypasses); i++) {
		const bypass *b = &bypasses[i];
		moat_error err = { 0 };
		moat_host h;
		int r = moat_host_normalize(b->host, strlen(b->host), &h, &err);
		if (!b->canon) {
			if (r >= 0)
				fail_msg("%s: expected refusal, read as %s", b->host, h.name);
			assert_true(err.msg[0] != '\0');
			refused++;
			continue;
		}
		if (r < 0)
			fail_msg("%s: refused: %s", b->host, err.msg);
		if (!h.is_literal)
			fail_msg("%s: not recognised as an address (%s)", b->host, h.name);
		if (strcmp(h.name, b->canon) != 0)
			fail_msg("%s: read as %s, expected %s", b->host, h.name, b->canon);
		const char *reason = NULL;
		moat_addr_class c = moat_addr_classify_addr(&h.addr, &reason);
		if (c != b->cls)
			fail_msg("%s: class %s, expected %s", b->host, moat_addr_class_to_string(c),
				 moat_addr_class_to_string(b->cls));
		assert_non_null(reason);
		bool allowed = moat_addr_allowed_addr(&h.addr, NULL, 0, &reason);
		if (allowed != (b->cls == MOAT_ADDR_PUBLIC))
			fail_msg("%s: guard said %s", b->host, allowed ? "allowed" : "refused");
		if (!allowed)
			special++;
	}
	/* The attack suite counts on at least 40 forms that must be refused. */
	assert_true(refused + special >= 40);
}

static void test_ipv4_forms(void **state)
{
	(void)state;
	uint32_t v;
	assert_int_equal(moat_ipv4_parse_any("1.2.3", 5, &v), 0);
	assert_int_equal(v, 0x01020003);
	assert_int_equal(moat_ipv4_parse_any("1.0x10000", 9, &v), 0);
	assert_int_equal(v, 0x01010000);
	assert_true(moat_ipv4_parse_any("1.0x1000000", 11, &v) < 0);
	assert_true(moat_ipv4_parse_any("1.2.65536", 9, &v) < 0);
	assert_true(moat_ipv4_parse_any("", 0, &v) < 0);
	assert_true(moat_ipv4_parse_any(".1", 2, &v) < 0);
	assert_true(moat_ipv4_parse_any("1.", 2, &v) == 0);
	assert_true(moat_ipv4_parse_any("1.2.3.4.", 8, &v) == 0);
	assert_true(moat_ipv4_parse_any("1.2.3.4..", 9, &v) < 0);
	assert_true(moat_ipv4_parse_any("-1", 2, &v) < 0);
	assert_true(moat_ipv4_parse_any("+1", 2, &v) < 0);
	assert_true(moat_ipv4_parse_any("99999999999999999999", 20, &v) < 0);
	assert_true(moat_ipv4_looks_numeric("a.b.0x1f", 8));
	assert_true(moat_ipv4_looks_numeric("example.123.", 12));
	assert_false(moat_ipv4_looks_numeric("123.example", 11));
	assert_false(moat_ipv4_looks_numeric("1e100", 5));
	assert_false(moat_ipv4_looks_numeric("0xg", 3));
}

static moat_addr A(const char *s)
{
	moat_addr a;
	assert_int_equal(moat_addr_parse(s, strlen(s), &a), 0);
	return a;
}

static void test_embedded(void **state)
{
	(void)state;
	moat_addr a = A("2001:0:4136:e378:8000:63bf:3fff:fdd2"), e[2];
	char buf[MOAT_ADDR_STRLEN];
	/* RFC 4380's example: server 65.54.227.120, client 192.0.2.45. */
	assert_int_equal(moat_addr_embedded_ipv4(&a, e), 2);
	assert_string_equal(moat_addr_format(&e[0], buf, sizeof(buf)), "65.54.227.120");
	assert_string_equal(moat_addr_format(&e[1], buf, sizeof(buf)), "192.0.2.45");
	assert_int_equal(moat_addr_classify_addr(&a, NULL), MOAT_ADDR_DOCUMENTATION);
	a = A("2002:0a00:0001::");
	assert_int_equal(moat_addr_embedded_ipv4(&a, e), 1);
	assert_string_equal(moat_addr_format(&e[0], buf, sizeof(buf)), "10.0.0.1");
	/* The /48 layout of the local-use NAT64 prefix skips the u octet. */
	a = A("64:ff9b:1:7f00:0:100::");
	assert_int_equal(moat_addr_embedded_ipv4(&a, e), 2);
	assert_string_equal(moat_addr_format(&e[1], buf, sizeof(buf)), "127.0.0.1");
	assert_int_not_equal(moat_addr_classify_addr(&a, NULL), MOAT_ADDR_PUBLIC);
	assert_false(moat_addr_allowed_addr(&a, NULL, 0, NULL));
	/* Local-use NAT64 leads to the operator's own translator: refused
	 * whatever it carries. */
	a = A("64:ff9b:1:808:8:8:808:808");
	assert_int_equal(moat_addr_classify_addr(&a, NULL), MOAT_ADDR_PRIVATE);
	assert_false(moat_addr_allowed_addr(&a, NULL, 0, NULL));
	a = A("2606:4700::1111");
	assert_int_equal(moat_addr_embedded_ipv4(&a, e), 0);
}

static void test_sockaddr(void **state)
{
	(void)state;
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr_un_like {
		sa_family_t f;
		char p[8];
	} un = { .f = AF_UNIX };
	const char *reason;
	inet_pton(AF_INET, "169.254.169.254", &in.sin_addr);
	assert_int_equal(moat_addr_classify((struct sockaddr *)&in, &reason), MOAT_ADDR_METADATA);
	assert_false(moat_addr_allowed((struct sockaddr *)&in, NULL, 0, &reason));
	assert_non_null(strstr(reason, "metadata"));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
	assert_int_equal(moat_addr_classify((struct sockaddr *)&in6, NULL), MOAT_ADDR_LOOPBACK);
	inet_pton(AF_INET, "93.184.216.34", &in.sin_addr);
	assert_true(moat_addr_allowed((struct sockaddr *)&in, NULL, 0, NULL));
	assert_int_equal(moat_addr_classify((struct sockaddr *)&un, NULL), MOAT_ADDR_INVALID_FORM);
	assert_false(moat_addr_allowed((struct sockaddr *)&un, NULL, 0, NULL));

	struct sockaddr_storage ss;
	socklen_t sl;
	moat_addr a = A("2001:db8::5"), b;
	moat_addr_to_sockaddr(&a, 443, &ss, &sl);
	assert_int_equal(sl, sizeof(struct sockaddr_in6));
	assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 443);
	assert_int_equal(moat_addr_from_sockaddr((struct sockaddr *)&ss, &b), 0);
	assert_true(moat_addr_equal(&a, &b));
}

static void test_cidr(void **state)
{
	(void)state;
	moat_error err = { 0 };
	moat_cidr c;
	char buf[64];
	assert_int_equal(moat_cidr_parse("10.0.0.0/8", &c, &err), 0);
	assert_string_equal(moat_cidr_format(&c, buf, sizeof(buf)), "10.0.0.0/8");
	moat_addr a = A("10.200.1.1");
	assert_true(moat_cidr_contains(&c, &a));
	a = A("11.0.0.1");
	assert_false(moat_cidr_contains(&c, &a));
	a = A("::ffff:10.0.0.1");
	assert_false(moat_cidr_contains(&c, &a));
	assert_int_equal(moat_cidr_parse("192.168.1.7", &c, &err), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(moat_cidr_parse("fd00::/8", &c, &err), 0);
	a = A("fd12::1");
	assert_true(moat_cidr_contains(&c, &a));
	assert_int_equal(moat_cidr_parse("[fd00::1]", &c, &err), 0);
	assert_int_equal(c.prefix, 128);
	assert_true(moat_cidr_parse("0.0.0.0/0", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "every address"));
	assert_true(moat_cidr_parse("::/0", &c, &err) < 0);
	assert_true(moat_cidr_parse("10.1.2.3/8", &c, &err) < 0);
	assert_non_null(strstr(err.msg, "host bits"));
	assert_true(moat_cidr_parse("10.0.0.0/33", &c, &err) < 0);
	assert_true(moat_cidr_parse("10.0.0.0/", &c, &err) < 0);
	assert_true(moat_cidr_parse("10.0.0.0/8x", &c, &err) < 0);
	assert_true(moat_cidr_parse("0x0a.0.0.0/8", &c, &err) < 0);
	assert_true(moat_cidr_parse("10.1/16", &c, &err) < 0);
	assert_true(moat_cidr_parse("", &c, &err) < 0);
	assert_true(moat_cidr_parse("fe80::1%eth0/128", &c, &err) < 0);
	assert_true(moat_cidr_parse("fd00::/129", &c, &err) < 0);
}

static void test_allow_private(void **state)
{
	(void)state;
	moat_error err = { 0 };
	moat_cidr allow[2];
	const char *reason;
	assert_int_equal(moat_cidr_parse("10.0.0.0/8", &allow[0], &err), 0);
	assert_int_equal(moat_cidr_parse("fd00::/8", &allow[1], &err), 0);

	moat_addr a = A("10.1.2.3");
	assert_true(moat_addr_allowed_addr(&a, allow, 2, &reason));
	assert_non_null(strstr(reason, "allow_private"));
	a = A("::ffff:10.1.2.3");
	assert_true(moat_addr_allowed_addr(&a, allow, 2, NULL));
	a = A("2002:a01:203::");
	assert_true(moat_addr_allowed_addr(&a, allow, 2, NULL));
	a = A("fd00::1");
	assert_true(moat_addr_allowed_addr(&a, allow, 2, NULL));
	/* Opening one range opens nothing else. */
	a = A("192.168.0.1");
	assert_false(moat_addr_allowed_addr(&a, allow, 2, NULL));
	a = A("169.254.169.254");
	assert_false(moat_addr_allowed_addr(&a, allow, 2, NULL));
	/* A metadata address is opened only by naming it exactly. */
	a = A("fd00:ec2::254");
	assert_false(moat_addr_allowed_addr(&a, allow, 2, NULL));
	static const char *const cloud[] = { "fd00:ec2::23", "fd00:ec2::1:2", "fd00:42::42", "fd20:ce::254" };
	moat_cidr ll;
	assert_int_equal(moat_cidr_parse("fe80::/10", &ll, &err), 0);
	a = A("fe80::a9fe:a9fe");
	assert_false(moat_addr_allowed_addr(&a, &ll, 1, NULL));
	a = A("fe80::1");
	assert_true(moat_addr_allowed_addr(&a, &ll, 1, NULL));
	for (size_t i = 0; i < ELEMENTSOF(cloud); i++) {
		a = A(cloud[i]);
		if (moat_addr_allowed_addr(&a, allow, 2, NULL))
			fail_msg("%s opened by a wide private range", cloud[i]);
	}
	moat_cidr wire;
	assert_int_equal(moat_cidr_parse("168.63.129.16/32", &wire, &err), 0);
	a = A("168.63.129.16");
	assert_false(moat_addr_allowed_addr(&a, NULL, 0, NULL));
	assert_true(moat_addr_allowed_addr(&a, &wire, 1, NULL));
	assert_int_equal(moat_cidr_parse("168.63.0.0/16", &wire, &err), 0);
	assert_false(moat_addr_allowed_addr(&a, &wire, 1, NULL));
	assert_int_equal(moat_cidr_parse("169.254.0.0/16", &wire, &err), 0);
	a = A("169.254.170.23");
	assert_false(moat_addr_allowed_addr(&a, &wire, 1, NULL));
	moat_cidr imds;
	assert_int_equal(moat_cidr_parse("169.254.169.254/32", &imds, &err), 0);
	a = A("169.254.169.254");
	assert_true(moat_addr_allowed_addr(&a, &imds, 1, NULL));
	a = A("::ffff:169.254.169.254");
	assert_true(moat_addr_allowed_addr(&a, &imds, 1, NULL));
	assert_int_equal(moat_cidr_parse("169.254.0.0/16", &imds, &err), 0);
	a = A("169.254.169.254");
	assert_false(moat_addr_allowed_addr(&a, &imds, 1, NULL));
	a = A("169.254.1.1");
	assert_true(moat_addr_allowed_addr(&a, &imds, 1, NULL));
	a = A("127.0.0.1");
	assert_false(moat_addr_allowed_addr(&a, allow, 2, NULL));
	/* A Teredo address whose server is private but whose client is
	 * loopback stays refused: every carried address must be covered. */
	a = A("2001:0:a00:1::80ff:fffe");
	assert_int_equal(moat_addr_classify_addr(&a, NULL), MOAT_ADDR_PRIVATE);
	assert_false(moat_addr_allowed_addr(&a, allow, 2, NULL));
}

static void test_class_names(void **state)
{
	(void)state;
	for (int i = 0; i < _MOAT_ADDR_CLASS_MAX; i++)
		assert_non_null(moat_addr_class_to_string((moat_addr_class)i));
	assert_string_equal(moat_addr_class_to_string(_MOAT_ADDR_CLASS_INVALID), "invalid");
	assert_string_equal(moat_addr_class_to_string(MOAT_ADDR_METADATA), "cloud metadata");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bypass_table), cmocka_unit_test(test_ipv4_forms),
		cmocka_unit_test(test_embedded),     cmocka_unit_test(test_sockaddr),
		cmocka_unit_test(test_cidr),         cmocka_unit_test(test_allow_private),
		cmocka_unit_test(test_class_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
