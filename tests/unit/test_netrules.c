/* Unit tests: network rules, first match wins, path normalisation, reasons,
 * and the slot a live sandbox swaps its rules in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>

#include "netrules.h"

static moat_net_decision decide(const moat_netrules *r, const char *host, uint16_t port, const char *method,
				const char *path)
{
	moat_host h;
	moat_error err = { 0 };
	moat_net_decision d;
	if (moat_host_normalize(host, strlen(host), &h, &err) < 0)
		fail_msg("host %s: %s", host, err.msg);
	moat_net_request q = { .host = &h, .port = port, .method = method, .path = path };
	moat_netrules_decide(r, &q, &d);
	return d;
}

#define ASSERT_DECIDES(r, host, port, method, path, act_, rule_)                                          \
	do {                                                                                                   \
		moat_net_decision d_ = decide(r, host, port, method, path);                                        \
		if (d_.action != (act_) || d_.rule != (rule_))                                                    \
			fail_msg("%s:%u %s %s: %s by %d (%s), expected %s by %d", host, port, method ? method : "-", \
				 path ? path : "-", moat_net_action_to_string(d_.action), d_.rule, d_.reason,          \
				 moat_net_action_to_string(act_), rule_);                                              \
	} while (0)

static void add(moat_netrules_builder *b, const char *host, moat_net_action a, const char *const *methods,
		size_t n_methods, const char *const *paths, size_t n_paths, const uint16_t *ports, size_t n_ports)
{
	moat_error err = { 0 };
	moat_netrule_spec s = { .host = host, .action = a, .methods = methods, .n_methods = n_methods,
				.paths = paths, .n_paths = n_paths, .ports = ports, .n_ports = n_ports };
	if (moat_netrules_builder_add(b, &s, &err) < 0)
		fail_msg("rule %s: %s", host, err.msg);
}

static moat_netrules *sample(void)
{
	static const char *const get[] = { "GET", "head" };
	static const char *const post[] = { "POST" };
	static const char *const pub[] = { "/public/*", "/status" };
	static const uint16_t p8443[] = { 8443 };
	moat_error err = { 0 };
	moat_netrules *r = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	assert_non_null(b);
	add(b, "admin.example.test", MOAT_NET_DENY, NULL, 0, NULL, 0, NULL, 0);           /* 0 */
	add(b, "API.GitHub.com.", MOAT_NET_ALLOW, get, 2, NULL, 0, NULL, 0);              /* 1 */
	add(b, "*.example.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);              /* 2 */
	add(b, "api.sendgrid.test", MOAT_NET_APPROVE, post, 1, NULL, 0, NULL, 0);         /* 3 */
	add(b, "api.sendgrid.test", MOAT_NET_ALLOW, get, 2, NULL, 0, NULL, 0);            /* 4 */
	add(b, "files.test", MOAT_NET_ALLOW, NULL, 0, pub, 2, NULL, 0);                   /* 5 */
	add(b, "alt.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, p8443, 1);                   /* 6 */
	add(b, "203.0.113.7", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);                 /* 7 */
	add(b, "b\xc3\xbc" "cher.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);        /* 8 */
	assert_int_equal(moat_netrules_builder_allow_private(b, "10.0.0.0/8", &err), 0);
	assert_int_equal(moat_netrules_builder_finish(b, &r, &err), 0);
	assert_int_equal(moat_netrules_count(r), 9);
	return r;
}

static void test_first_match(void **state)
{
	(void)state;
	_cleanup_netrules_ moat_netrules *r = sample();
	/* The deny before the wildcard wins for its host only. */
	ASSERT_DECIDES(r, "admin.example.test", 443, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "ADMIN.example.test.", 443, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "www.example.test", 443, NULL, NULL, MOAT_NET_ALLOW, 2);
	ASSERT_DECIDES(r, "a.b.example.test", 80, "DELETE", "/x", MOAT_NET_ALLOW, 2);
	/* "*.example.test" does not cover example.test itself, nor look-alikes. */
	ASSERT_DECIDES(r, "example.test", 443, NULL, NULL, MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "evilexample.test", 443, NULL, NULL, MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "example.test.evil.test", 443, NULL, NULL, MOAT_NET_DENY, -1);
	/* approve before allow for the same host: POST waits, GET goes. */
	ASSERT_DECIDES(r, "api.sendgrid.test", 443, "POST", "/v3/mail", MOAT_NET_APPROVE, 3);
	ASSERT_DECIDES(r, "api.sendgrid.test", 443, "GET", "/v3/stats", MOAT_NET_ALLOW, 4);
	ASSERT_DECIDES(r, "api.sendgrid.test", 443, "PUT", "/v3/x", MOAT_NET_DENY, -1);
	/* Through a tunnel the method is unknown: the approve rule holds it. */
	ASSERT_DECIDES(r, "api.sendgrid.test", 443, NULL, NULL, MOAT_NET_APPROVE, 3);
	/* Normalised names and patterns meet. */
	ASSERT_DECIDES(r, "api.github.com", 443, "GET", "/", MOAT_NET_ALLOW, 1);
	ASSERT_DECIDES(r, "api.github.com", 443, "get", "/", MOAT_NET_ALLOW, 1);
	ASSERT_DECIDES(r, "api.github.com", 443, "HEAD", "/", MOAT_NET_ALLOW, 1);
	ASSERT_DECIDES(r, "xn--bcher-kva.test", 443, NULL, NULL, MOAT_NET_ALLOW, 8);
	ASSERT_DECIDES(r, "B\xc3\x9c" "CHER.test", 443, NULL, NULL, MOAT_NET_ALLOW, 8);
}

static bool reachable(const moat_netrules *r, const char *host, uint16_t port)
{
	moat_host h;
	moat_error err = { 0 };
	if (moat_host_normalize(host, strlen(host), &h, &err) < 0)
		fail_msg("host %s: %s", host, err.msg);
	return moat_netrules_host_reachable(r, &h, port);
}

/* A terminated tunnel is opened when some request inside could be allowed:
 * methods and paths are decided per request later. */
static void test_host_reachable(void **state)
{
	(void)state;
	_cleanup_netrules_ moat_netrules *r = sample();
	assert_true(reachable(r, "api.github.com", 443));       /* GET and HEAD only */
	assert_true(reachable(r, "files.test", 443));           /* some paths only */
	assert_true(reachable(r, "api.sendgrid.test", 443));    /* GET after the approve */
	assert_false(reachable(r, "admin.example.test", 443));  /* denied whole */
	assert_false(reachable(r, "alt.test", 443));            /* not this port */
	assert_true(reachable(r, "alt.test", 8443));
	assert_false(reachable(r, "unknown.test", 443));        /* nothing allows it */

	/* A deny for some paths leaves the allow after it. */
	static const char *const adm[] = { "/admin/*" };
	moat_error err = { 0 };
	moat_netrules *r2 = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	add(b, "api.test", MOAT_NET_DENY, NULL, 0, adm, 1, NULL, 0);
	add(b, "api.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);
	assert_int_equal(moat_netrules_builder_finish(b, &r2, &err), 0);
	assert_true(reachable(r2, "api.test", 443));
	moat_netrules_unref(r2);
}

static void test_ports_methods_paths(void **state)
{
	(void)state;
	_cleanup_netrules_ moat_netrules *r = sample();
	moat_net_decision d;
	/* Ports: 80 and 443 by default, else the listed ones only. */
	ASSERT_DECIDES(r, "www.example.test", 22, NULL, NULL, MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "alt.test", 8443, NULL, NULL, MOAT_NET_ALLOW, 6);
	ASSERT_DECIDES(r, "alt.test", 443, NULL, NULL, MOAT_NET_DENY, -1);
	d = decide(r, "alt.test", 443, NULL, NULL);
	assert_non_null(strstr(d.reason, "port 443 of alt.test is not allowed"));
	assert_non_null(strstr(d.reason, "8443"));

	/* Methods. */
	ASSERT_DECIDES(r, "api.github.com", 443, "POST", "/repos", MOAT_NET_DENY, -1);
	d = decide(r, "api.github.com", 443, "POST", "/repos");
	assert_non_null(strstr(d.reason, "POST api.github.com is not allowed"));
	assert_non_null(strstr(d.reason, "GET, HEAD"));
	/* A tunnel hides the method: a method-restricted allow cannot match. */
	ASSERT_DECIDES(r, "api.github.com", 443, NULL, NULL, MOAT_NET_DENY, -1);
	d = decide(r, "api.github.com", 443, NULL, NULL);
	assert_non_null(strstr(d.reason, "only for some methods or paths"));

	/* Paths: "/public/" and a star covers what is below; "/status" exactly. */
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/a.txt", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/a/b?x=../../admin", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/status", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/status/", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/status/x", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/publicity", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/../admin", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/%2e%2e/admin", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/public/.%2E/admin", MOAT_NET_DENY, -1);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "//public//a", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/x/../public/./a", MOAT_NET_ALLOW, 5);
	ASSERT_DECIDES(r, "files.test", 80, "GET", "/%70ublic/a", MOAT_NET_ALLOW, 5);
	d = decide(r, "files.test", 80, "GET", "/admin");
	assert_non_null(strstr(d.reason, "path /admin on files.test is outside"));
	/* Ambiguous paths are refused, with the reason. */
	d = decide(r, "files.test", 80, "GET", "/public/..;/admin");
	assert_int_equal(d.action, MOAT_NET_DENY);
	assert_non_null(strstr(d.reason, "dot segment"));
	d = decide(r, "files.test", 80, "GET", "/public/x%2F..%2F..%2Fadmin");
	assert_int_equal(d.action, MOAT_NET_DENY);
	assert_non_null(strstr(d.reason, "encoded slash"));
	d = decide(r, "files.test", 80, "GET", "/public\\..\\admin");
	assert_int_equal(d.action, MOAT_NET_DENY);
	d = decide(r, "files.test", 80, "GET", "/../public/a");
	assert_int_equal(d.action, MOAT_NET_DENY);
	assert_non_null(strstr(d.reason, "above the root"));
	/* A tunnel hides the path. */
	ASSERT_DECIDES(r, "files.test", 443, NULL, NULL, MOAT_NET_DENY, -1);
}

static void test_default_and_literals(void **state)
{
	(void)state;
	_cleanup_netrules_ moat_netrules *r = sample();
	moat_net_decision d = decide(r, "api.evil.test", 443, NULL, NULL);
	assert_int_equal(d.action, MOAT_NET_DENY);
	assert_int_equal(d.rule, -1);
	assert_string_equal(d.reason, "api.evil.test is not in this sandbox's network allowlist");
	/* A public address the rules do not name is denied like any host:
	 * literal addresses are no way around the allowlist. */
	d = decide(r, "8.8.8.8", 443, NULL, NULL);
	assert_int_equal(d.action, MOAT_NET_DENY);
	assert_string_equal(d.reason, "8.8.8.8 is not in this sandbox's network allowlist");
	ASSERT_DECIDES(r, "203.0.113.7", 443, NULL, NULL, MOAT_NET_ALLOW, 7);
	ASSERT_DECIDES(r, "3405803783", 443, NULL, NULL, MOAT_NET_ALLOW, 7);
	ASSERT_DECIDES(r, "[::ffff:203.0.113.7]", 443, NULL, NULL, MOAT_NET_DENY, -1);
	/* A wildcard never matches an address. */
	ASSERT_DECIDES(r, "127.0.0.1", 443, NULL, NULL, MOAT_NET_DENY, -1);

	size_t n;
	const moat_cidr *c = moat_netrules_allow_private(r, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].prefix, 8);
	struct sockaddr_in in = { .sin_family = AF_INET };
	const char *reason;
	inet_pton(AF_INET, "10.9.9.9", &in.sin_addr);
	assert_true(moat_netrules_addr_allowed(r, (struct sockaddr *)&in, &reason));
	inet_pton(AF_INET, "192.168.9.9", &in.sin_addr);
	assert_false(moat_netrules_addr_allowed(r, (struct sockaddr *)&in, &reason));

	/* Default allow and approve. */
	moat_error err = { 0 };
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	moat_netrules_builder_set_default(b, MOAT_NET_APPROVE);
	moat_netrules *r2 = NULL;
	assert_int_equal(moat_netrules_builder_finish(b, &r2, &err), 0);
	assert_int_equal(moat_netrules_default(r2), MOAT_NET_APPROVE);
	ASSERT_DECIDES(r2, "anything.test", 443, NULL, NULL, MOAT_NET_APPROVE, -1);
	moat_netrules_unref(r2);
	moat_netrules_builder_set_default(b, MOAT_NET_ALLOW);
	assert_int_equal(moat_netrules_builder_finish(b, &r2, &err), 0);
	ASSERT_DECIDES(r2, "anything.test", 443, NULL, NULL, MOAT_NET_ALLOW, -1);
	moat_netrules_unref(r2);

	/* "*" covers every host, literal addresses included (the SSRF guard
	 * still judges the address). */
	moat_netrule_spec any = { .host = "*", .action = MOAT_NET_ALLOW };
	assert_int_equal(moat_netrules_builder_add(b, &any, &err), 0);
	assert_int_equal(moat_netrules_builder_finish(b, &r2, &err), 0);
	ASSERT_DECIDES(r2, "anything.test", 443, NULL, NULL, MOAT_NET_ALLOW, 0);
	ASSERT_DECIDES(r2, "0x7f.1", 80, NULL, NULL, MOAT_NET_ALLOW, 0);
	ASSERT_DECIDES(r2, "anything.test", 22, NULL, NULL, MOAT_NET_DENY, -1);
	moat_netrules_unref(r2);

	/* No host: denied, never a crash. */
	moat_net_request q = { 0 };
	moat_netrules_decide(r, &q, &d);
	assert_int_equal(d.action, MOAT_NET_DENY);
}

static void test_bad_rules(void **state)
{
	(void)state;
	moat_error err = { 0 };
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	static const char *const bad_method[] = { "GE T" };
	static const char *const bad_path[] = { "public" };
	static const char *const bad_path2[] = { "/a/*/b" };
	static const char *const bad_path3[] = { "/a/../../b" };
	static const char *const bad_path4[] = { "/a?x=1" };
	static const uint16_t port0[] = { 0 };
	struct {
		moat_netrule_spec s;
		const char *why;
	} cases[] = {
		{ { .host = "*.com" }, "too much" },
		{ { .host = "*." }, "host name" },
		{ { .host = "a.*.com" }, "first label" },
		{ { .host = "**.example.com" }, "'**'" },
		{ { .host = "*.10.0.0.1" }, "IP address" },
		{ { .host = "" }, "without a host" },
		{ { .host = "evil.test@allowed.test" }, "user info" },
		{ { .host = "ok.test", .methods = bad_method, .n_methods = 1 }, "invalid method" },
		{ { .host = "ok.test", .paths = bad_path, .n_paths = 1 }, "must be" },
		{ { .host = "ok.test", .paths = bad_path2, .n_paths = 1 }, "must be" },
		{ { .host = "ok.test", .paths = bad_path3, .n_paths = 1 }, "above the root" },
		{ { .host = "ok.test", .paths = bad_path4, .n_paths = 1 }, "must be" },
		{ { .host = "ok.test", .ports = port0, .n_ports = 1 }, "port 0" },
		{ { .host = "ok.test", .action = _MOAT_NET_ACTION_MAX }, "invalid action" },
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		moat_error_clear(&err);
		if (moat_netrules_builder_add(b, &cases[i].s, &err) >= 0)
			fail_msg("rule %s accepted", cases[i].s.host);
		if (!strstr(err.msg, cases[i].why))
			fail_msg("rule %s: \"%s\" lacks \"%s\"", cases[i].s.host, err.msg, cases[i].why);
	}
	assert_true(moat_netrules_builder_allow_private(b, "0.0.0.0/0", &err) < 0);
	assert_non_null(strstr(err.msg, "allow_private"));
	assert_int_equal(moat_net_action_from_string("approve"), MOAT_NET_APPROVE);
	assert_int_equal(moat_net_action_from_string("maybe"), _MOAT_NET_ACTION_INVALID);
	assert_string_equal(moat_net_action_to_string(MOAT_NET_DENY), "deny");
}

static void test_path_normalize(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "/", "/" },
		{ "/a/b", "/a/b" },
		{ "/a/b/", "/a/b/" },
		{ "/a//b", "/a/b" },
		{ "//a", "/a" },
		{ "/a/./b", "/a/b" },
		{ "/a/../b", "/b" },
		{ "/a/b/..", "/a/" },
		{ "/a/b/.", "/a/b/" },
		{ "/a/%2e%2E/b", "/b" },
		{ "/%7Euser/%41", "/~user/A" },
		{ "/a%2fb", "/a%2Fb" },
		{ "/a%20b", "/a%20b" },
		{ "/a%3fb", "/a%3Fb" },
		{ "/a?b/../c", "/a" },
		{ "/a#frag", "/a" },
		{ "/a;v=1/b", "/a;v=1/b" },
		{ "/a/../b//c", "/b/c" },
		{ "/a//b/./c", "/a/b/c" },
		{ "/%25", "/%25" },
	};
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "start with" },
		{ "a/b", "start with" },
		{ "/..", "above the root" },
		{ "/a/../..", "above the root" },
		{ "/%2e%2e/x", "above the root" },
		{ "/a\\b", "backslash" },
		{ "/a%", "malformed" },
		{ "/a%4", "malformed" },
		{ "/a%g0", "malformed" },
		{ "/a%00b", "NUL" },
		{ "/a/..;/b", "dot segment" },
		{ "/a/.;x/b", "dot segment" },
		{ "/a/x%2f..%2fy", "encoded slash" },
		{ "/a/x%5C..", "encoded slash" },
		{ "/admin//../public/x", "after \"//\"" },
		{ "//../x", "after \"//\"" },
		{ "/a//b/../c", "after \"//\"" },
		{ "/a b", "control, space" },
		{ "/a\x01", "control, space" },
		{ "/a\xc3\xa9", "non-ASCII" },
	};
	char out[MOAT_NET_PATH_MAX];
	moat_error err = { 0 };
	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		if (moat_net_path_normalize(ok[i].in, out, sizeof(out), &err) < 0)
			fail_msg("%s: %s", ok[i].in, err.msg);
		if (strcmp(out, ok[i].out) != 0)
			fail_msg("%s: %s, expected %s", ok[i].in, out, ok[i].out);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		moat_error_clear(&err);
		if (moat_net_path_normalize(bad[i].in, out, sizeof(out), &err) >= 0)
			fail_msg("%s: accepted as %s", bad[i].in, out);
		if (!strstr(err.msg, bad[i].why))
			fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].in, err.msg, bad[i].why);
	}
	/* Long paths: at the cap refused, and a small output buffer refused. */
	char *big = malloc(MOAT_NET_PATH_MAX + 2);
	assert_non_null(big);
	big[0] = '/';
	memset(big + 1, 'a', MOAT_NET_PATH_MAX);
	big[MOAT_NET_PATH_MAX + 1] = '\0';
	assert_true(moat_net_path_normalize(big, out, sizeof(out), &err) < 0);
	big[100] = '\0';
	char small[16];
	assert_true(moat_net_path_normalize(big, small, sizeof(small), &err) < 0);
	free(big);
}

/* Readers take references while a writer keeps publishing new sets: run
 * under ASan and TSan-like load, no set may be used after it is freed. */
typedef struct slot_ctx {
	moat_netrules_slot slot;
	volatile int stop;
} slot_ctx;

static void *reader(void *arg)
{
	slot_ctx *c = arg;
	unsigned long n = 0;
	while (!c->stop) {
		moat_netrules *r = moat_netrules_slot_get(&c->slot);
		assert_non_null(r);
		assert_int_equal(moat_netrules_count(r), 9);
		moat_netrules_unref(r);
		n++;
	}
	return (void *)n;
}

static void test_slot(void **state)
{
	(void)state;
	slot_ctx c = { .stop = 0 };
	pthread_t t[2];
	moat_netrules_slot_init(&c.slot, sample());
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &c), 0);
	moat_netrules *held = moat_netrules_slot_get(&c.slot);
	for (int i = 0; i < 300; i++)
		moat_netrules_slot_publish(&c.slot, sample());
	c.stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* A reference taken before the swaps still reads the old set. */
	ASSERT_DECIDES(held, "www.example.test", 443, NULL, NULL, MOAT_NET_ALLOW, 2);
	moat_netrules *now = moat_netrules_slot_get(&c.slot);
	assert_ptr_not_equal(now, held);
	moat_netrules_unref(now);
	moat_netrules_unref(held);
	moat_netrules_slot_destroy(&c.slot);
}

/* Every rule kind (host only, methods, paths) and action, with and without
 * ports, against requests on the web ports, the rule's own port and
 * another: a rule without ports holds on every port when it denies or asks
 * for approval, and opens 80 and 443 only when it allows. */
static void test_port_matrix(void **state)
{
	(void)state;
	static const char *const post[] = { "POST" };
	static const char *const admin[] = { "/admin/*" };
	static const uint16_t p8000[] = { 8000 };
	static const uint16_t req_ports[] = { 80, 443, 8000, 22, 65535 };
	static const moat_net_action actions[] = { MOAT_NET_ALLOW, MOAT_NET_DENY, MOAT_NET_APPROVE };
	for (size_t a = 0; a < ELEMENTSOF(actions); a++)
		for (int kind = 0; kind < 3; kind++)
			for (int with_ports = 0; with_ports < 2; with_ports++)
				for (size_t p = 0; p < ELEMENTSOF(req_ports); p++) {
					moat_error err = { 0 };
					moat_netrules *raw = NULL;
					_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
					add(b, "h.test", actions[a], kind == 1 ? post : NULL, kind == 1 ? 1 : 0,
					    kind == 2 ? admin : NULL, kind == 2 ? 1 : 0, with_ports ? p8000 : NULL,
					    with_ports ? 1 : 0);
					/* The default is the opposite of an allow, so that a
					 * match always shows as rule 0. */
					moat_netrules_builder_set_default(b, actions[a] == MOAT_NET_ALLOW ? MOAT_NET_DENY
													  : MOAT_NET_ALLOW);
					assert_int_equal(moat_netrules_builder_finish(b, &raw, &err), 0);
					_cleanup_netrules_ moat_netrules *r = raw;
					uint16_t port = req_ports[p];
					bool covered = with_ports ? port == 8000
								  : (actions[a] != MOAT_NET_ALLOW || port == 80 || port == 443);
					assert_int_equal(moat_netrule_portless_is_any(actions[a]), actions[a] != MOAT_NET_ALLOW);
					if (covered)
						ASSERT_DECIDES(r, "h.test", port, "POST", "/admin/x", actions[a], 0);
					else
						ASSERT_DECIDES(r, "h.test", port, "POST", "/admin/x",
							       actions[a] == MOAT_NET_ALLOW ? MOAT_NET_DENY : MOAT_NET_ALLOW, -1);
					/* A request the rule's method or path does not name
					 * is never matched by it, whatever the port. */
					if (kind == 1)
						ASSERT_DECIDES(r, "h.test", port, "GET", "/admin/x",
							       actions[a] == MOAT_NET_ALLOW ? MOAT_NET_DENY : MOAT_NET_ALLOW, -1);
					if (kind == 2)
						ASSERT_DECIDES(r, "h.test", port, "POST", "/public",
							       actions[a] == MOAT_NET_ALLOW ? MOAT_NET_DENY : MOAT_NET_ALLOW, -1);
				}
}

/* The cases that were once let through: a deny, an approval and a path
 * deny without ports, each beside a broader allow on other ports. */
static void test_portless_beats_broader_allow(void **state)
{
	(void)state;
	static const uint16_t ports[] = { 443, 8000 };
	static const char *const admin[] = { "/admin/*" };
	moat_error err = { 0 };
	moat_netrules *raw = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	add(b, "secret.ex.test", MOAT_NET_DENY, NULL, 0, NULL, 0, NULL, 0);      /* 0 */
	add(b, "paths.ex.test", MOAT_NET_DENY, NULL, 0, admin, 1, NULL, 0);      /* 1 */
	add(b, "pay.ex.test", MOAT_NET_APPROVE, NULL, 0, NULL, 0, NULL, 0);      /* 2 */
	add(b, "*.ex.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, ports, 2);         /* 3 */
	assert_int_equal(moat_netrules_builder_finish(b, &raw, &err), 0);
	_cleanup_netrules_ moat_netrules *r = raw;
	ASSERT_DECIDES(r, "secret.ex.test", 8000, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "secret.ex.test", 443, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "paths.ex.test", 8000, "GET", "/admin/x", MOAT_NET_DENY, 1);
	ASSERT_DECIDES(r, "paths.ex.test", 8000, "GET", "/public/x", MOAT_NET_ALLOW, 3);
	ASSERT_DECIDES(r, "pay.ex.test", 8000, NULL, NULL, MOAT_NET_APPROVE, 2);
	ASSERT_DECIDES(r, "other.ex.test", 8000, NULL, NULL, MOAT_NET_ALLOW, 3);
	/* The glob covers what the normaliser accepts. */
	add(b, "*.internal.ex.test", MOAT_NET_DENY, NULL, 0, NULL, 0, NULL, 0);
	add(b, "*.ex.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);
	moat_netrules *raw2 = NULL;
	assert_int_equal(moat_netrules_builder_finish(b, &raw2, &err), 0);
	_cleanup_netrules_ moat_netrules *r2 = raw2;
	ASSERT_DECIDES(r2, "a_b.internal.ex.test", 443, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r2, "x-.internal.ex.test", 443, NULL, NULL, MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r2, "x-.other.ex.test", 443, NULL, NULL, MOAT_NET_ALLOW, 1);
}

/* An encoded slash is read both ways; where the readings lead to different
 * decisions the request is refused. */
static void test_encoded_slash_both_readings(void **state)
{
	(void)state;
	static const char *const admin[] = { "/admin/*" };
	static const char *const pub[] = { "/public/*" };
	moat_error err = { 0 };
	moat_netrules *raw = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	add(b, "d.test", MOAT_NET_DENY, NULL, 0, admin, 1, NULL, 0);  /* 0 */
	add(b, "d.test", MOAT_NET_ALLOW, NULL, 0, NULL, 0, NULL, 0);  /* 1 */
	add(b, "p.test", MOAT_NET_ALLOW, NULL, 0, pub, 1, NULL, 0);   /* 2 */
	assert_int_equal(moat_netrules_builder_finish(b, &raw, &err), 0);
	_cleanup_netrules_ moat_netrules *r = raw;
	ASSERT_DECIDES(r, "d.test", 80, "GET", "/admin%2Fsecret", MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "d.test", 80, "GET", "/admin%2fsecret", MOAT_NET_DENY, 0);
	ASSERT_DECIDES(r, "d.test", 80, "GET", "/admin%5Csecret", MOAT_NET_DENY, 0);
	moat_net_decision d = decide(r, "d.test", 80, "GET", "/admin%2Fsecret");
	assert_non_null(strstr(d.reason, "encoded slash"));
	/* Both readings allowed: served. */
	ASSERT_DECIDES(r, "d.test", 80, "GET", "/files/a%2Fb", MOAT_NET_ALLOW, 1);
	ASSERT_DECIDES(r, "p.test", 80, "GET", "/public/a%2Fb", MOAT_NET_ALLOW, 2);
	/* An allow-list path that only one reading reaches: refused. */
	d = decide(r, "p.test", 80, "GET", "/public%2Fx");
	assert_int_equal(d.action, MOAT_NET_DENY);
}

/* The reason for a request no rule allows names the allow rule that came
 * closest, never a deny rule it also missed: "outside the paths network rule
 * 0 allows" for a deny rule would send the agent the wrong way. */
static void test_miss_reason_names_an_allow(void **state)
{
	(void)state;
	static const char *const admin[] = { "/ok/admin/*" };
	static const char *const ok[] = { "/ok/*" };
	static const char *const get[] = { "GET" };
	static const char *const post[] = { "POST" };
	moat_error err = { 0 };
	_cleanup_netrules_ moat_netrules *r = NULL;
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	assert_non_null(b);
	add(b, "api.test", MOAT_NET_DENY, post, 1, admin, 1, NULL, 0); /* 0 */
	add(b, "api.test", MOAT_NET_ALLOW, get, 1, ok, 1, NULL, 0);    /* 1 */
	assert_int_equal(moat_netrules_builder_finish(b, &r, &err), 0);
	moat_net_decision d = decide(r, "api.test", 443, "GET", "/elsewhere");
	assert_int_equal(d.action, MOAT_NET_DENY);
	if (!strstr(d.reason, "network rule 1 allows (/ok/"))
		fail_msg("reason: %s", d.reason);
	d = decide(r, "api.test", 443, "PUT", "/ok/x");
	assert_int_equal(d.action, MOAT_NET_DENY);
	if (!strstr(d.reason, "network rule 1 allows only GET"))
		fail_msg("reason: %s", d.reason);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_match),
		cmocka_unit_test(test_host_reachable),   cmocka_unit_test(test_ports_methods_paths),
		cmocka_unit_test(test_default_and_literals), cmocka_unit_test(test_bad_rules),
		cmocka_unit_test(test_path_normalize), cmocka_unit_test(test_slot),
		cmocka_unit_test(test_port_matrix), cmocka_unit_test(test_portless_beats_broader_allow),
		cmocka_unit_test(test_encoded_slash_both_readings),
		cmocka_unit_test(test_miss_reason_names_an_allow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
