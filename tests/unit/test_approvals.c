/* Unit tests: the keeper's side of approval gates (approvals.h): asking,
 * deciding through the control socket's requests, leases, timeouts, the
 * end of the sandbox, and requests that do not hold together. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "approvals.h"

static int wakes;
static void on_wake(void *ud)
{
	(void)ud;
	wakes++;
}

static moat_approvals *make(uint64_t timeout_ms)
{
	moat_approvals *ap = NULL;
	moat_error err = {0};
	moat_approvals_opts o = {.session = "s", .timeout_ms = timeout_ms};
	assert_int_equal(moat_approvals_new(&o, &ap, &err), 0);
	moat_approvals_set_wake(ap, on_wake, NULL);
	wakes = 0;
	return ap;
}

static moat_ask post(const char *path)
{
	moat_ask a;
	moat_error err = {0};
	assert_int_equal(moat__approval_ask_net(&a, "mail.test", 80, "POST", path, &err), 0);
	return a;
}

/* Runs one control request (JSON text); returns its status, the answer in
 * *ret (may be NULL), the error's message in msg. */
static int req(moat_approvals *ap, const char *text, json_t **ret, char *msg)
{
	json_t *r = json_loads(text, 0, NULL);
	assert_non_null(r);
	json_t *a = NULL;
	moat_error err = {0};
	int rc = moat_approvals_request(ap, 1000, r, &a, &err);
	json_decref(r);
	if (msg)
		strcpy(msg, err.msg);
	if (ret)
		*ret = a;
	else
		json_decref(a);
	return rc;
}

static void test_once_then_waits_again(void **state)
{
	(void)state;
	moat_approvals *ap = make(60000);
	moat_ask a = post("/send");
	moat_approvals_outcome o;
	moat_error err = {0};
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), 0);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);
	assert_true(moat__approval_id_valid(o.id, 'a'));
	char id[16];
	strcpy(id, o.id);
	json_t *ls;
	assert_int_equal(req(ap, "{\"op\":\"ls\"}", &ls, NULL), 0);
	assert_int_equal(json_array_size(json_object_get(ls, "approvals")), 1);
	json_t *e = json_array_get(json_object_get(ls, "approvals"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "id")), id);
	assert_string_equal(json_string_value(json_object_get(e, "what")), "POST http://mail.test:80/send");
	json_decref(ls);

	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);
	char text[256];
	snprintf(text, sizeof(text), "{\"op\":\"approve\",\"id\":\"%s\",\"note\":\"fine\"}", id);
	assert_int_equal(req(ap, text, NULL, NULL), 0);
	assert_int_equal(wakes, 1);
	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_ALLOWED);
	assert_string_equal(o.lease, "");
	/* Collected: nothing is held under the ticket any more. */
	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_DENIED);
	/* The same request again waits again. */
	assert_int_equal(moat_approvals_ask(ap, &a, 2, &o, &err), 0);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);
	assert_string_not_equal(o.id, id);
	moat_approvals_free(ap);
}

static void test_lease_revoke_deny(void **state)
{
	(void)state;
	moat_approvals *ap = make(60000);
	moat_ask a = post("/v1/send"), b = post("/v1/draft"), c = post("/v2/x");
	moat_approvals_outcome o;
	moat_error err = {0};
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), 0);
	char text[256], msg[MOAT_ERROR_MAX];
	snprintf(text, sizeof(text), "{\"op\":\"approve\",\"id\":\"%s\",\"kind\":\"session\",\"scope\":\"path\"}", o.id);
	json_t *ans;
	assert_int_equal(req(ap, text, &ans, NULL), 0);
	const char *lease = json_string_value(json_object_get(ans, "lease"));
	assert_true(moat__approval_id_valid(lease, 'l'));
	assert_true(json_is_null(json_object_get(ans, "until")));
	char lid[16];
	strcpy(lid, lease);
	json_decref(ans);
	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_ALLOWED);
	assert_string_equal(o.lease, lid);
	/* Covered: through at once, naming the lease; not covered: held. */
	assert_int_equal(moat_approvals_ask(ap, &b, 2, &o, &err), 0);
	assert_int_equal(o.state, MOAT_APPROVAL_ALLOWED);
	assert_string_equal(o.lease, lid);
	assert_int_equal(moat_approvals_ask(ap, &c, 3, &o, &err), 0);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);
	char cid[16];
	strcpy(cid, o.id);

	snprintf(text, sizeof(text), "{\"op\":\"revoke\",\"lease\":\"%s\"}", lid);
	assert_int_equal(req(ap, text, NULL, NULL), 0);
	assert_int_equal(req(ap, text, NULL, msg), -ENOENT);
	assert_int_equal(moat_approvals_ask(ap, &b, 4, &o, &err), 0);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);

	snprintf(text, sizeof(text), "{\"op\":\"deny\",\"id\":\"%s\",\"reason\":\"no\"}", cid);
	assert_int_equal(req(ap, text, NULL, NULL), 0);
	moat_approvals_poll(ap, 3, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_DENIED);
	assert_string_equal(o.reason, "no");
	assert_false(o.ended);
	assert_int_equal(req(ap, text, NULL, msg), -ENOENT);
	moat_approvals_free(ap);
}

static void test_timeout_withdraw_end(void **state)
{
	(void)state;
	moat_approvals *ap = make(1);
	moat_ask a = post("/send");
	moat_approvals_outcome o;
	moat_error err = {0};
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), 0);
	struct timespec ts = {0, 5 * 1000 * 1000};
	nanosleep(&ts, NULL);
	moat_approvals_tick(ap);
	assert_int_equal(wakes, 1);
	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_TIMED_OUT);
	assert_int_equal(o.timeout_ms, 1);
	moat_approvals_free(ap);

	ap = make(60000);
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), 0);
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), -EEXIST);
	moat_approvals_withdraw(ap, 1, "gone");
	json_t *ls;
	assert_int_equal(req(ap, "{\"op\":\"ls\"}", &ls, NULL), 0);
	assert_int_equal(json_array_size(json_object_get(ls, "approvals")), 0);
	json_decref(ls);
	assert_int_equal(moat_approvals_ask(ap, &a, 2, &o, &err), 0);
	moat_approvals_end(ap, "the session ended");
	moat_approvals_poll(ap, 2, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_DENIED);
	assert_true(o.ended);
	assert_string_equal(o.reason, "the session ended");
	/* Once ended, nothing more is held. */
	assert_int_equal(moat_approvals_ask(ap, &a, 3, &o, &err), -ESHUTDOWN);
	moat_approvals_free(ap);
}

/* A loop of requests that open and give up cannot flood the queue: a
 * burst, then ten a second. */
static void test_ask_rate(void **state)
{
	(void)state;
	moat_approvals *ap = make(60000);
	moat_ask a = post("/send");
	moat_approvals_outcome o;
	moat_error err = {0};
	uint64_t t = 1;
	for (; t <= 64; t++) {
		assert_int_equal(moat_approvals_ask(ap, &a, t, &o, &err), 0);
		moat_approvals_withdraw(ap, t, "gone");
	}
	assert_int_equal(moat_approvals_ask(ap, &a, t++, &o, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "requests asked for approval at once"));
	struct timespec ts = {0, 150 * 1000 * 1000};
	nanosleep(&ts, NULL);
	assert_int_equal(moat_approvals_ask(ap, &a, t++, &o, &err), 0);
	assert_int_equal(moat_approvals_ask(ap, &a, t++, &o, &err), -E2BIG);
	moat_approvals_free(ap);
}

static void test_bad_requests(void **state)
{
	(void)state;
	moat_approvals *ap = make(60000);
	moat_ask a = post("/send");
	moat_approvals_outcome o;
	moat_error err = {0};
	assert_int_equal(moat_approvals_ask(ap, &a, 1, &o, &err), 0);
	char msg[MOAT_ERROR_MAX], text[512];
	struct {
		const char *body;
		int code;
		const char *want;
	} cases[] = {
		{"{}", EINVAL, "approvals.op: missing"},
		{"{\"op\":3}", EINVAL, "approvals.op: not a string"},
		{"{\"op\":\"launch\"}", EINVAL, "approvals.op: unknown operation 'launch'"},
		{"{\"op\":\"ls\",\"x\":1}", EINVAL, "approvals.x: unknown field"},
		{"{\"op\":\"approve\"}", EINVAL, "approvals.id: missing"},
		{"{\"op\":\"approve\",\"id\":\"a00000000\"}", ENOENT, "a00000000: no such approval waits"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"kind\":\"forever\"}", EINVAL, "approvals.kind: not once, for or session"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"kind\":\"for\"}", EINVAL,
		 "approvals.for_ms: missing (a 'for' lease needs a duration)"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"kind\":\"for\",\"for_ms\":0}", EINVAL,
		 "approvals.for_ms: not a duration between 1 ms and a year"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"for_ms\":10}", EINVAL,
		 "approvals.for_ms: only a 'for' lease has a duration"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"scope\":\"world\"}", EINVAL, "approvals.scope: not exact, path or host"},
		{"{\"op\":\"approve\",\"id\":\"%s\",\"scope\":\"host\"}", EINVAL,
		 "scope: a once approval is for that one action; a scope needs --for or --session"},
		{"{\"op\":\"deny\",\"id\":\"%s\",\"reason\":7}", EINVAL, "approvals.reason: not a string"},
		{"{\"op\":\"revoke\"}", EINVAL, "approvals.lease: missing"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* %s in a case stands for the held id. */
		const char *at = strstr(cases[i].body, "%s");
		if (at)
			snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - cases[i].body), cases[i].body, o.id, at + 2);
		else
			snprintf(text, sizeof(text), "%s", cases[i].body);
		int rc = req(ap, text, NULL, msg);
		if (rc != -cases[i].code || strcmp(msg, cases[i].want) != 0)
			fail_msg("%s: got %d '%s', want %d '%s'", text, rc, msg, -cases[i].code, cases[i].want);
	}
	/* A note over its cap. */
	char note[MOAT_APPROVAL_NOTE_MAX + 8];
	memset(note, 'n', sizeof(note) - 1);
	note[sizeof(note) - 1] = '\0';
	snprintf(text, sizeof(text), "{\"op\":\"deny\",\"id\":\"%s\",\"reason\":\"%s\"}", o.id, note);
	assert_int_equal(req(ap, text, NULL, msg), -E2BIG);
	/* Nothing of the above decided it. */
	moat_approvals_poll(ap, 1, &o);
	assert_int_equal(o.state, MOAT_APPROVAL_PENDING);
	moat_approvals_free(ap);
	/* No queue at all: said so. */
	json_t *r = json_pack("{s:s}", "op", "ls");
	json_t *ans = NULL;
	assert_int_equal(moat_approvals_request(NULL, 0, r, &ans, &err), -ENOTSUP);
	json_decref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_then_waits_again),
		cmocka_unit_test(test_lease_revoke_deny),
		cmocka_unit_test(test_timeout_withdraw_end),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_ask_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
