/* Unit tests: the approval queue, leases, their matching and expiry
 * (approval.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "approval.h"

static moat_ask net(const char *host, uint16_t port, const char *method, const char *path)
{
	moat_ask a;
	moat_error err = {0};
	assert_int_equal(moat__approval_ask_net(&a, host, port, method, path, &err), 0);
	return a;
}

static moat_ask ex(const char *exe, char *const *argv)
{
	moat_ask a;
	moat_error err = {0};
	assert_int_equal(moat__approval_ask_exec(&a, exe, argv, &err), 0);
	return a;
}

static moat_lease lease(moat_lease_kind k, moat_scope s, moat_ask what, uint64_t until)
{
	moat_lease l;
	memset(&l, 0, sizeof(l));
	snprintf(l.id, sizeof(l.id), "l00000001");
	l.kind = k;
	l.scope = s;
	l.what = what;
	l.until_ms = until;
	return l;
}

static void test_match_net_scopes(void **state)
{
	(void)state;
	moat_ask asked = net("mail.test", 8025, "POST", "/v1/mail/send?to=a");
	moat_lease ex_l = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_EXACT, asked, 0);
	moat_ask same = net("mail.test", 8025, "POST", "/v1/mail/send?to=a");
	moat_ask other_q = net("mail.test", 8025, "POST", "/v1/mail/send?to=b");
	moat_ask sibling = net("mail.test", 8025, "POST", "/v1/mail/draft");
	moat_ask get = net("mail.test", 8025, "GET", "/v1/mail/send?to=a");
	moat_ask port = net("mail.test", 8026, "POST", "/v1/mail/send?to=a");
	moat_ask host = net("other.test", 8025, "POST", "/v1/mail/send?to=a");
	moat_ask up = net("mail.test", 8025, "POST", "/v1/admin");
	moat_ask climb = net("mail.test", 8025, "POST", "/v1/mail/../admin");
	moat_ask enc = net("mail.test", 8025, "POST", "/v1/mail/%2e%2e/admin");
	moat_ask encs = net("mail.test", 8025, "POST", "/v1/mail/x%2F..%2Fadmin");
	moat_ask dot = net("mail.test", 8025, "POST", "/v1/mail/./send");

	assert_true(moat__lease_matches(&ex_l, &same, 5));
	assert_false(moat__lease_matches(&ex_l, &other_q, 5));
	assert_false(moat__lease_matches(&ex_l, &sibling, 5));
	assert_false(moat__lease_matches(&ex_l, &get, 5));
	assert_false(moat__lease_matches(&ex_l, &port, 5));
	assert_false(moat__lease_matches(&ex_l, &host, 5));

	moat_lease p = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_PATH, asked, 0);
	assert_true(moat__lease_matches(&p, &same, 5));
	assert_true(moat__lease_matches(&p, &other_q, 5));
	assert_true(moat__lease_matches(&p, &sibling, 5));
	assert_false(moat__lease_matches(&p, &get, 5));
	assert_false(moat__lease_matches(&p, &up, 5));
	assert_false(moat__lease_matches(&p, &climb, 5));
	assert_false(moat__lease_matches(&p, &enc, 5));
	assert_false(moat__lease_matches(&p, &encs, 5));
	assert_false(moat__lease_matches(&p, &dot, 5));
	assert_false(moat__lease_matches(&p, &port, 5));

	moat_lease h = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_HOST, asked, 0);
	assert_true(moat__lease_matches(&h, &get, 5));
	assert_true(moat__lease_matches(&h, &up, 5));
	assert_false(moat__lease_matches(&h, &port, 5));
	assert_false(moat__lease_matches(&h, &host, 5));
	/* Host names are compared whole, not as suffixes. */
	moat_ask sub = net("evil.mail.test", 8025, "GET", "/");
	assert_false(moat__lease_matches(&h, &sub, 5));
}

static void test_match_expiry_and_cut(void **state)
{
	(void)state;
	moat_ask a = net("mail.test", 80, "POST", "/send");
	moat_lease l = lease(MOAT_LEASE_FOR, MOAT_SCOPE_EXACT, a, 100);
	assert_true(moat__lease_matches(&l, &a, 99));
	assert_false(moat__lease_matches(&l, &a, 100));
	assert_false(moat__lease_matches(&l, &a, 1000));
	moat_lease once = lease(MOAT_LEASE_ONCE, MOAT_SCOPE_EXACT, a, 0);
	assert_false(moat__lease_matches(&once, &a, 1));

	/* A path over the cap is cut and marked; it matches no exact or path
	 * lease, even one granted for the same cut text. */
	static char longp[MOAT_APPROVAL_PATH_MAX + 100];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	moat_ask big = net("mail.test", 80, "POST", longp);
	assert_true(big.path_cut);
	moat_lease lb = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_EXACT, big, 0);
	assert_false(moat__lease_matches(&lb, &big, 1));
	moat_lease lh = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_HOST, big, 0);
	assert_true(moat__lease_matches(&lh, &big, 1));
	/* Over-long host or method: refused, never cut. */
	moat_ask x;
	moat_error err = {0};
	static char longh[MOAT_APPROVAL_HOST_MAX + 1];
	memset(longh, 'h', sizeof(longh) - 1);
	assert_int_equal(moat__approval_ask_net(&x, longh, 80, "GET", "/", &err), -E2BIG);
	assert_int_equal(moat__approval_ask_net(&x, "", 80, "GET", "/", &err), -EINVAL);
}

static void test_match_exec(void **state)
{
	(void)state;
	char *push[] = {"git", "push", "origin", "main", NULL};
	char *push2[] = {"git", "push", "origin", "dev", NULL};
	char *split[] = {"git", "push", "originmain", NULL};
	moat_ask a = ex("/usr/bin/git", push);
	moat_ask b = ex("/usr/bin/git", push2);
	moat_ask c = ex("/usr/bin/git", split);
	moat_ask d = ex("/usr/local/bin/git", push);
	moat_lease l = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_EXACT, a, 0);
	assert_true(moat__lease_matches(&l, &a, 1));
	assert_false(moat__lease_matches(&l, &b, 1));
	assert_false(moat__lease_matches(&l, &c, 1));
	assert_false(moat__lease_matches(&l, &d, 1));
	moat_lease p = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_PATH, a, 0);
	assert_true(moat__lease_matches(&p, &b, 1));
	assert_false(moat__lease_matches(&p, &d, 1));
	/* A network lease never covers a program, and the other way round. */
	moat_ask n = net("usr", 80, "GET", "/bin/git");
	assert_false(moat__lease_matches(&p, &n, 1));
	moat_error err = {0};
	assert_int_equal(moat__approval_scope_check(&a, MOAT_SCOPE_HOST, &err), -EINVAL);
	char buf[128];
	moat__approval_ask_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "/usr/bin/git push origin main");
	moat__approval_ask_format(&n, buf, sizeof(buf));
	assert_string_equal(buf, "GET http://usr:80/bin/git");
	n.tls = true; /* asked inside terminated TLS */
	moat__approval_ask_format(&n, buf, sizeof(buf));
	assert_string_equal(buf, "GET https://usr:80/bin/git");
	assert_int_equal(moat__approval_ask_exec(&a, "git", push, &err), -EINVAL);
}

static moat_ask tool(const char *server, const char *name, const char *args)
{
	moat_ask a;
	moat_error err = {0};
	assert_int_equal(moat__approval_ask_tool(&a, server, name, args, &err), 0);
	return a;
}

static void test_match_tool(void **state)
{
	(void)state;
	moat_ask a = tool("mail", "send", "{\"to\":\"a@b\"}");
	moat_ask b = tool("mail", "send", "{\"to\":\"c@d\"}");
	moat_ask c = tool("mail", "delete", "{\"to\":\"a@b\"}");
	moat_ask d = tool("other", "send", "{\"to\":\"a@b\"}");
	/* exact: the same tool of the same server with the same arguments */
	moat_lease l = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_EXACT, a, 0);
	assert_true(moat__lease_matches(&l, &a, 1));
	assert_false(moat__lease_matches(&l, &b, 1));
	assert_false(moat__lease_matches(&l, &c, 1));
	assert_false(moat__lease_matches(&l, &d, 1));
	/* path: the same tool with any arguments, never another tool */
	moat_lease p = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_PATH, a, 0);
	assert_true(moat__lease_matches(&p, &b, 1));
	assert_false(moat__lease_matches(&p, &c, 1));
	assert_false(moat__lease_matches(&p, &d, 1));
	/* a program of the server's name is no tool */
	char *argv[] = {"send", "{\"to\":\"a@b\"}", NULL};
	moat_ask e = ex("/mail", argv);
	moat_lease le = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_PATH, e, 0);
	assert_false(moat__lease_matches(&le, &a, 1));
	moat_error err = {0};
	assert_int_equal(moat__approval_scope_check(&a, MOAT_SCOPE_HOST, &err), -EINVAL);
	char buf[128];
	moat__approval_ask_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "tool mail send {\"to\":\"a@b\"}");
	/* arguments past the cap are cut: no exact lease covers them */
	char big[MOAT_APPROVAL_ARGS_MAX + 100];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	moat_ask f = tool("mail", "send", big);
	assert_true(f.argv_cut);
	moat_lease lf = lease(MOAT_LEASE_SESSION, MOAT_SCOPE_EXACT, f, 0);
	assert_false(moat__lease_matches(&lf, &f, 1));
	assert_int_equal(moat__approval_ask_tool(&f, "mail", "", "{}", &err), -EINVAL);
}

static void test_queue_once(void **state)
{
	(void)state;
	moat_approval_queue q;
	moat__approval_queue_init(&q);
	moat_error err = {0};
	moat_ask a = net("mail.test", 80, "POST", "/send");
	moat_approval *e;
	assert_int_equal(moat__approval_add(&q, &a, "a00000001", 1, 1000, 500, &e, &err), 0);
	assert_int_equal(e->expires_ms, 1500);
	assert_int_equal(moat__approval_add(&q, &a, "a00000002", 2, 1000, 500, NULL, &err), 0);
	assert_int_equal(moat__approval_add(&q, &a, "a00000002", 3, 1000, 500, NULL, &err), -EEXIST);
	assert_int_equal(moat__approval_add(&q, &a, "a00000003", 2, 1000, 500, NULL, &err), -EEXIST);
	assert_int_equal(moat__approval_add(&q, &a, "x00000003", 3, 1000, 500, NULL, &err), -EINVAL);
	assert_int_equal(moat__approval_pending(&q), 2);

	moat_decision d = {.allow = true, .kind = MOAT_LEASE_ONCE, .by = 1000, .note = "ok"};
	moat_lease *l;
	assert_int_equal(moat__approval_decide(&q, "a00000001", &d, 1100, &l, &err), 0);
	assert_null(l);
	/* Once: that one alone, the other identical one still waits. */
	assert_int_equal(moat__approval_find(&q, "a00000001")->state, MOAT_APPROVAL_ALLOWED);
	assert_int_equal(moat__approval_find(&q, "a00000002")->state, MOAT_APPROVAL_PENDING);
	assert_int_equal(q.n_leases, 0);
	assert_int_equal(moat__approval_decide(&q, "a00000001", &d, 1100, NULL, &err), -EALREADY);
	assert_int_equal(moat__approval_decide(&q, "a00000009", &d, 1100, NULL, &err), -ENOENT);
	d.scope = MOAT_SCOPE_HOST;
	assert_int_equal(moat__approval_decide(&q, "a00000002", &d, 1100, NULL, &err), -EINVAL);

	moat_approval got;
	assert_true(moat__approval_remove_ticket(&q, 1, &got));
	assert_int_equal(got.state, MOAT_APPROVAL_ALLOWED);
	assert_int_equal(got.by, 1000);
	assert_false(moat__approval_remove_ticket(&q, 1, NULL));

	moat_decision deny = {.allow = false, .by = 0, .note = "not to customers"};
	assert_int_equal(moat__approval_decide(&q, "a00000002", &deny, 1200, NULL, &err), 0);
	e = moat__approval_find(&q, "a00000002");
	assert_int_equal(e->state, MOAT_APPROVAL_DENIED);
	assert_string_equal(e->reason, "not to customers");
	moat__approval_queue_done(&q);
}

static int n_timeouts, n_expired;
static void on_to(void *ud, const moat_approval *a)
{
	(void)ud;
	(void)a;
	n_timeouts++;
}
static void on_exp(void *ud, const moat_lease *l)
{
	(void)ud;
	(void)l;
	n_expired++;
}

static void test_queue_lease_and_expiry(void **state)
{
	(void)state;
	moat_approval_queue q;
	moat__approval_queue_init(&q);
	moat_error err = {0};
	moat_ask a = net("mail.test", 80, "POST", "/v1/send");
	moat_ask b = net("mail.test", 80, "POST", "/v1/draft");
	moat_ask c = net("mail.test", 80, "DELETE", "/v1/send");
	assert_int_equal(moat__approval_add(&q, &a, "a00000001", 1, 0, 1000, NULL, &err), 0);
	assert_int_equal(moat__approval_add(&q, &b, "a00000002", 2, 0, 1000, NULL, &err), 0);
	assert_int_equal(moat__approval_add(&q, &c, "a00000003", 3, 0, 1000, NULL, &err), 0);
	assert_int_equal(moat__approval_next_deadline(&q), 1000);

	moat_decision d = {.allow = true, .kind = MOAT_LEASE_FOR, .scope = MOAT_SCOPE_PATH, .for_ms = 300, .by = 7,
			   .note = "release day", .lease_id = "l0000000a"};
	moat_decision bad = d;
	bad.for_ms = 0;
	assert_int_equal(moat__approval_decide(&q, "a00000001", &bad, 100, NULL, &err), -EINVAL);
	bad = d;
	bad.lease_id = "a0000000a";
	assert_int_equal(moat__approval_decide(&q, "a00000001", &bad, 100, NULL, &err), -EINVAL);
	moat_lease *l;
	assert_int_equal(moat__approval_decide(&q, "a00000001", &d, 100, &l, &err), 0);
	assert_non_null(l);
	assert_int_equal(l->until_ms, 400);
	/* The lease lets the other waiting POST under /v1/ through, naming
	 * itself; the DELETE still waits. */
	assert_string_equal(moat__approval_find(&q, "a00000002")->lease, "l0000000a");
	assert_int_equal(moat__approval_find(&q, "a00000002")->state, MOAT_APPROVAL_ALLOWED);
	assert_int_equal(moat__approval_find(&q, "a00000003")->state, MOAT_APPROVAL_PENDING);
	assert_int_equal(l->used, 2);
	assert_ptr_equal(moat__approval_lease_match(&q, &b, 399), l);
	assert_null(moat__approval_lease_match(&q, &b, 400));
	assert_null(moat__approval_lease_match(&q, &c, 200));
	assert_int_equal(moat__approval_next_deadline(&q), 400);

	n_timeouts = n_expired = 0;
	moat__approval_expire(&q, 399, on_to, on_exp, NULL);
	assert_int_equal(n_expired, 0);
	moat__approval_expire(&q, 400, on_to, on_exp, NULL);
	assert_int_equal(n_expired, 1);
	assert_int_equal(q.n_leases, 0);
	assert_int_equal(n_timeouts, 0);
	/* A pending one past its time cannot be decided, then times out. */
	moat_decision once = {.allow = true, .kind = MOAT_LEASE_ONCE};
	assert_int_equal(moat__approval_decide(&q, "a00000003", &once, 1000, NULL, &err), -EALREADY);
	moat__approval_expire(&q, 1000, on_to, on_exp, NULL);
	assert_int_equal(n_timeouts, 1);
	assert_int_equal(moat__approval_find(&q, "a00000003")->state, MOAT_APPROVAL_TIMED_OUT);
	assert_int_equal(moat__approval_next_deadline(&q), UINT64_MAX);
	moat__approval_queue_done(&q);
}

static void test_queue_revoke_and_caps(void **state)
{
	(void)state;
	moat_approval_queue q;
	moat__approval_queue_init(&q);
	moat_error err = {0};
	moat_ask a = net("mail.test", 80, "POST", "/send");
	assert_int_equal(moat__approval_add(&q, &a, "a00000001", 1, 0, 1000, NULL, &err), 0);
	moat_decision d = {.allow = true, .kind = MOAT_LEASE_SESSION, .scope = MOAT_SCOPE_EXACT, .lease_id = "l00000001"};
	assert_int_equal(moat__approval_decide(&q, "a00000001", &d, 1, NULL, &err), 0);
	assert_non_null(moat__approval_lease_match(&q, &a, UINT64_MAX - 1));
	moat_lease got;
	assert_int_equal(moat__approval_revoke(&q, "l00000001", &got, &err), 0);
	assert_int_equal(got.kind, MOAT_LEASE_SESSION);
	assert_null(moat__approval_lease_match(&q, &a, 2));
	assert_int_equal(moat__approval_revoke(&q, "l00000001", NULL, &err), -ENOENT);
	assert_true(moat__approval_remove_ticket(&q, 1, NULL));

	char id[16];
	for (unsigned i = 0; i < MOAT_APPROVAL_MAX_PENDING; i++) {
		snprintf(id, sizeof(id), "a%08x", i + 16);
		assert_int_equal(moat__approval_add(&q, &a, id, 100 + i, 0, 1000, NULL, &err), 0);
	}
	assert_int_equal(moat__approval_add(&q, &a, "affffffff", 99, 0, 1000, NULL, &err), -E2BIG);
	/* A huge timeout does not wrap. */
	assert_true(moat__approval_remove_ticket(&q, 100, NULL));
	moat_approval *e;
	assert_int_equal(moat__approval_add(&q, &a, "affffffff", 99, 10, UINT64_MAX, &e, &err), 0);
	assert_int_equal(e->expires_ms, UINT64_MAX);
	/* A note over its cap is refused, not cut. */
	char note[MOAT_APPROVAL_NOTE_MAX + 1];
	memset(note, 'n', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	moat_decision dn = {.allow = false, .note = note};
	assert_int_equal(moat__approval_decide(&q, "affffffff", &dn, 11, NULL, &err), -E2BIG);
	moat__approval_queue_done(&q);
}

static void test_rate(void **state)
{
	(void)state;
	moat_rate r = {.burst = 3, .every_ms = 1000};
	assert_true(moat__rate_take(&r, 100));
	assert_true(moat__rate_take(&r, 100));
	assert_true(moat__rate_take(&r, 100));
	assert_false(moat__rate_take(&r, 100));
	assert_false(moat__rate_take(&r, 1099));
	assert_true(moat__rate_take(&r, 1100));
	assert_false(moat__rate_take(&r, 1100));
	/* Refills up to the burst, never beyond. */
	assert_true(moat__rate_take(&r, 100000));
	assert_true(moat__rate_take(&r, 100000));
	assert_true(moat__rate_take(&r, 100000));
	assert_false(moat__rate_take(&r, 100000));
	/* A clock that goes back adds nothing. */
	assert_false(moat__rate_take(&r, 50));
}

static void test_ids(void **state)
{
	(void)state;
	assert_true(moat__approval_id_valid("a0123abcd", 'a'));
	assert_false(moat__approval_id_valid("a0123abcd", 'l'));
	assert_false(moat__approval_id_valid("a0123ABCD", 'a'));
	assert_false(moat__approval_id_valid("a0123abc", 'a'));
	assert_false(moat__approval_id_valid("a0123abcde", 'a'));
	assert_false(moat__approval_id_valid(NULL, 'a'));
	assert_int_equal(moat_scope_from_string("path"), MOAT_SCOPE_PATH);
	assert_int_equal(moat_scope_from_string("Path"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_net_scopes),     cmocka_unit_test(test_match_expiry_and_cut),
		cmocka_unit_test(test_match_exec), cmocka_unit_test(test_match_tool),           cmocka_unit_test(test_queue_once),
		cmocka_unit_test(test_queue_lease_and_expiry), cmocka_unit_test(test_queue_revoke_and_caps),
		cmocka_unit_test(test_ids),              cmocka_unit_test(test_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
