/* Unit tests: host name normalisation and authority parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hostname.h"

static const char *norm(const char *in, size_t len)
{
	static moat_host h;
	moat_error err = { 0 };
	if (moat_host_normalize(in, len, &h, &err) < 0)
		return NULL;
	return h.name;
}

#define N(s) norm(s, strlen(s))

static void assert_refused(const char *in, size_t len, const char *why)
{
	moat_host h;
	moat_error err = { 0 };
	if (moat_host_normalize(in, len, &h, &err) >= 0)
		fail_msg("\"%s\" accepted as %s", in, h.name);
	assert_int_equal(err.code, MOAT_EINPUT);
	if (why && !strstr(err.msg, why))
		fail_msg("\"%s\": reason \"%s\" lacks \"%s\"", in, err.msg, why);
}
#define R(s, why) assert_refused(s, strlen(s), why)

static void test_plain(void **state)
{
	(void)state;
	assert_string_equal(N("example.com"), "example.com");
	assert_string_equal(N("API.GitHub.COM"), "api.github.com");
	assert_string_equal(N("api.github.com."), "api.github.com");
	assert_string_equal(N("a-b_c.example"), "a-b_c.example");
	assert_string_equal(N("localhost"), "localhost");
	assert_string_equal(N("123.example.com"), "123.example.com");
	assert_string_equal(N("%61pi.github.com"), "api.github.com");
	assert_string_equal(N("%41PI.github.com"), "api.github.com");
	R("", "empty");
	R(".", "empty label");
	R("..", "empty label");
	R("example..com", "empty label");
	R(".example.com", "empty label");
	R("example.com..", "empty label");
}

static void test_delimiters(void **state)
{
	(void)state;
	R("allowed.test@evil.test", "user info");
	R("evil.test#@allowed.test", "fragment");
	R("evil.test\\@allowed.test", "backslash");
	R("evil.test\\allowed.test", "backslash");
	R("evil.test/allowed.test", "path");
	R("evil.test?.allowed.test", "query");
	R("evil.test:443", "':'");
	R("evil test", "space");
	R("evil.test\t", "control");
	R("evil.test\r\nX-y", "control");
	R("evil.test\r\nX: y", NULL);
	R("*.example.com", "pattern");
	R("a[b].com", "bracket");
	R("evil.test%40allowed.test", "user info");
	R("evil.test%2fallowed.test", "path");
	R("evil.test%5callowed.test", "backslash");
	R("evil.test%23", "fragment");
	R("evil.test%", "percent-escape");
	R("evil.test%4", "percent-escape");
	R("evil.test%zz", "percent-escape");
	R("evil%252etest", "double encoding");
	R("evil.test%00.allowed.test", "NUL");
	assert_refused("evil.test\0.allowed.test", 23, "NUL");
	R("evil.test\xef\xbc\xa0" "allowed.test", "user info"); /* fullwidth @ */
	R("evil.test\xef\xbc\x8f" "x", NULL);                   /* fullwidth / */
}

static void test_lengths(void **state)
{
	(void)state;
	char buf[1200];
	memset(buf, 'a', 63);
	strcpy(buf + 63, ".com");
	assert_non_null(N(buf));
	memset(buf, 'a', 64);
	strcpy(buf + 64, ".com");
	R(buf, "label longer than 63");
	/* 253 bytes exactly: four labels of 62 and one of 1, with dots. */
	size_t o = 0;
	for (int i = 0; i < 4; i++) {
		memset(buf + o, 'b', 62);
		o += 62;
		buf[o++] = '.';
	}
	buf[o++] = 'c';
	buf[o] = '\0';
	assert_int_equal(strlen(buf), 253);
	assert_non_null(N(buf));
	buf[o++] = 'c';
	buf[o] = '\0';
	R(buf, "longer than 253");
	/* A trailing dot does not count. */
	buf[o - 1] = '.';
	assert_non_null(N(buf));
	memset(buf, 'a', sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	R(buf, "longer than 1024");
}

static void test_idn(void **state)
{
	(void)state;
	assert_string_equal(N("b\xc3\xbc" "cher.example"), "xn--bcher-kva.example");
	assert_string_equal(N("B\xc3\x9c" "CHER.example"), "xn--bcher-kva.example");
	assert_string_equal(N("b%C3%BCcher.example"), "xn--bcher-kva.example");
	assert_string_equal(N("xn--bcher-kva.example"), "xn--bcher-kva.example");
	assert_string_equal(N("XN--BCHER-KVA.example"), "xn--bcher-kva.example");
	/* Fullwidth letters and an ideographic full stop map onto ASCII. */
	assert_string_equal(N("\xef\xbd\x85\xef\xbd\x96\xef\xbd\x89\xef\xbd\x8c\xe3\x80\x82" "com"), "evil.com");
	/* Non-transitional processing: sharp s stays itself. */
	assert_string_equal(N("fa\xc3\x9f.de"), "xn--fa-hia.de");
	R("xn--a.example", "internationalised");
	R("\xff\xfe.example", "internationalised");
	R("b\xc3\xbc" "cher\xe2\x80\xae.example", "internationalised"); /* RTL override */
}

static void test_literals(void **state)
{
	(void)state;
	moat_host h;
	moat_error err = { 0 };
	assert_int_equal(moat_host_normalize("0x7f.1", 6, &h, &err), 0);
	assert_true(h.is_literal);
	assert_string_equal(h.name, "127.0.0.1");
	assert_int_equal(h.addr.family, AF_INET);
	assert_int_equal(moat_host_normalize("[2001:DB8::0:1]", 15, &h, &err), 0);
	assert_true(h.is_literal);
	assert_string_equal(h.name, "2001:db8::1");
	assert_int_equal(moat_host_normalize("example.com", 11, &h, &err), 0);
	assert_false(h.is_literal);
	R("1.2.3.4.5", "not a valid one");
	/* Not numeric ('g' is no hex digit), so a name like any other. */
	assert_int_equal(moat_host_normalize("a.b.c.0x1g", 10, &h, &err), 0);
	assert_false(h.is_literal);
	R("example.0x10000000000", "not a valid one");
	R("[fe80::1%25lo]", "zone id");
	R("[::1", "not a valid IPv6");
	R("[]", "not a valid IPv6");
}

static void test_authority(void **state)
{
	(void)state;
	moat_host h;
	uint16_t port;
	moat_error err = { 0 };
#define AUTH(s, dp) moat_authority_parse(s, strlen(s), dp, &h, &port, &err)
	assert_int_equal(AUTH("Example.com:443", 0), 0);
	assert_string_equal(h.name, "example.com");
	assert_int_equal(port, 443);
	assert_int_equal(AUTH("example.com", 80), 0);
	assert_int_equal(port, 80);
	assert_int_equal(AUTH("example.com:", 80), 0);
	assert_int_equal(port, 80);
	assert_int_equal(AUTH("[::1]:8080", 80), 0);
	assert_string_equal(h.name, "::1");
	assert_true(h.is_literal);
	assert_int_equal(port, 8080);
	assert_int_equal(AUTH("[2001:db8::1]", 443), 0);
	assert_int_equal(port, 443);
	assert_int_equal(AUTH("0x7f.1:22", 80), 0);
	assert_string_equal(h.name, "127.0.0.1");
	assert_int_equal(port, 22);
	assert_int_equal(AUTH("example.com:0080", 0), 0);
	assert_int_equal(port, 80);
	assert_true(AUTH("example.com", 0) < 0);
	assert_non_null(strstr(err.msg, "no port"));
	assert_true(AUTH("example.com:0", 80) < 0);
	assert_true(AUTH("example.com:65536", 80) < 0);
	assert_true(AUTH("example.com:123456", 80) < 0);
	assert_true(AUTH("example.com:-1", 80) < 0);
	assert_true(AUTH("example.com:+80", 80) < 0);
	assert_true(AUTH("example.com:80:80", 80) < 0);
	assert_true(AUTH("::1:80", 80) < 0);
	assert_non_null(strstr(err.msg, "brackets"));
	assert_true(AUTH("[::1]80", 80) < 0);
	assert_true(AUTH("[::1", 80) < 0);
	assert_true(AUTH("allowed.test@evil.test", 80) < 0);
	assert_non_null(strstr(err.msg, "user info"));
	assert_true(AUTH("allowed.test:443@evil.test:443", 80) < 0);
	assert_true(AUTH("user:pass@example.com", 80) < 0);
	assert_true(AUTH("evil.test#@allowed.test", 80) < 0);
	assert_true(AUTH("evil.test\\.allowed.test", 80) < 0);
	assert_true(AUTH("", 80) < 0);
	assert_true(AUTH(":80", 80) < 0);
#undef AUTH
}

static void test_wire_check(void **state)
{
	(void)state;
	moat_error err = {0};
	assert_int_equal(moat_host_wire_check("up.test", 7, &err), 0);
	assert_int_equal(moat_host_wire_check("UP.test.", 8, &err), 0);
	assert_int_equal(moat_host_wire_check("[::1]", 5, &err), 0);
	assert_int_equal(moat_host_wire_check("up%2etest", 9, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "percent-encoded"));
	assert_int_equal(moat_host_wire_check("b\xc3\xbc.test", 8, &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "punycode"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),    cmocka_unit_test(test_delimiters), cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_idn),      cmocka_unit_test(test_literals),   cmocka_unit_test(test_authority),
		cmocka_unit_test(test_wire_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
