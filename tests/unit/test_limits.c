/* Unit tests: the run's verdict from what the cgroup saw, and the result's
 * "enforced" report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>

#include "runlimits.h"
#include "sandbox-internal.h"

static void test_verdict(void **state)
{
	(void)state;
	const char *lim = NULL;
	/* Nothing happened: the command's own status stands. */
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_EXITED, false, false, true, 10, 1000, 0, false, &lim),
			 MOAT_STATUS_EXITED);
	assert_null(lim);
	/* An OOM kill decides, even when the command then exited itself. */
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_EXITED, true, true, true, 5000, 1000, 0, false, &lim),
			 MOAT_STATUS_OOM);
	assert_string_equal(lim, "memory");
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_SIGNALED, false, true, true, 0, 1000, 9, false, &lim),
			 MOAT_STATUS_PIDS_LIMIT);
	assert_string_equal(lim, "pids");
	/* The budget is spent at exactly the budget, not before. */
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_EXITED, false, false, true, 999, 1000, 0, false, &lim),
			 MOAT_STATUS_EXITED);
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_EXITED, false, false, true, 1000, 1000, 0, false, &lim),
			 MOAT_STATUS_CPU_LIMIT);
	assert_string_equal(lim, "cpu");
	/* An unknown CPU figure never gives cpu_limit. */
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_EXITED, false, false, false, 5000, 1000, 0, false, &lim),
			 MOAT_STATUS_EXITED);
	/* No budget, no cpu_limit. */
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_EXITED, false, false, true, 5000, MOAT_UNLIMITED, 0, false, &lim),
		MOAT_STATUS_EXITED);
	/* RLIMIT_CPU fallback: SIGXCPU is the budget, any other signal is not. */
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SIGNALED, false, false, false, 0, 1000, SIGXCPU, true, &lim),
		MOAT_STATUS_CPU_LIMIT);
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SIGNALED, false, false, false, 0, 1000, SIGKILL, true, &lim),
		MOAT_STATUS_SIGNALED);
	/* SIGXCPU caught: the hard limit's SIGKILL, with the budget spent. */
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SIGNALED, false, false, false, 2000, 1000, SIGKILL, true, &lim),
		MOAT_STATUS_CPU_LIMIT);
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SIGNALED, false, false, false, 999, 1000, SIGKILL, true, &lim),
		MOAT_STATUS_SIGNALED);
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SIGNALED, false, false, false, 0, 1000, SIGXCPU, false, &lim),
		MOAT_STATUS_SIGNALED);
	/* A reason the supervisor already acted on stands. */
	assert_int_equal(moat__limits_verdict(MOAT_STATUS_TIMEOUT, true, true, true, 5000, 1000, 0, false, &lim),
			 MOAT_STATUS_TIMEOUT);
	assert_int_equal(
		moat__limits_verdict(MOAT_STATUS_SETUP_ERROR, true, false, true, 0, 1000, 0, false, &lim),
		MOAT_STATUS_SETUP_ERROR);
}

static void test_enforced_json(void **state)
{
	(void)state;
	moat_result r;
	moat_result_init(&r);
	r.status = MOAT_STATUS_EXITED;
	moat_result_enforce(&r, MOAT_LIMIT_KIND_MEMORY, 1 << 20, MOAT_MECH_RLIMIT);
	moat_result_enforce(&r, MOAT_LIMIT_KIND_CPUS, 500, MOAT_MECH_NONE);
	moat_result_enforce(&r, _MOAT_LIMIT_KIND_MAX, 1, MOAT_MECH_CGROUP); /* ignored */
	snprintf(r.limits_note, sizeof(r.limits_note), "memory: RLIMIT_DATA per process");
	_cleanup_free_ char *s = moat_result_to_json(&r);
	assert_non_null(s);
	json_error_t e;
	json_t *o = json_loads(s, 0, &e);
	assert_non_null(o);
	json_t *en = json_object_get(o, "enforced");
	assert_int_equal(json_object_size(en), 2);
	json_t *m = json_object_get(en, "memory");
	assert_int_equal(json_integer_value(json_object_get(m, "limit")), 1 << 20);
	assert_string_equal(json_string_value(json_object_get(m, "by")), "rlimit");
	assert_string_equal(json_string_value(json_object_get(json_object_get(en, "cpus"), "by")), "none");
	assert_null(json_object_get(en, "pids")); /* not asked for, not listed */
	assert_string_equal(json_string_value(json_object_get(o, "limits_note")), "memory: RLIMIT_DATA per process");
	json_decref(o);
	assert_string_equal(moat_mechanism_to_string(MOAT_MECH_TMPFS), "tmpfs");
	assert_string_equal(moat_mechanism_to_string(_MOAT_MECH_MAX), "invalid");
	assert_string_equal(moat_limit_kind_to_string(MOAT_LIMIT_KIND_FSIZE), "fsize");
}

/* Which /out is capped (a tmpfs) and what the result says about it. */
static void test_out_capped(void **state)
{
	(void)state;
	moat_config *c = moat_config_new(); /* the code profile: disk 64M, inodes 4096 */
	assert_non_null(c);
	assert_false(moat__out_capped(c)); /* no --out */
	moat_result r;
	moat_result_init(&r);
	moat__out_enforced(c, &r);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_DISK].by, MOAT_MECH_NONE);
	assert_non_null(strstr(r.limits_note, "disk, inodes: not enforced without filesystem.out"));

	c->out_dir = strdup("/srv/out");
	assert_true(moat__out_capped(c));
	moat_result_init(&r);
	moat__out_enforced(c, &r);
	assert_true(r.enforced[MOAT_LIMIT_KIND_DISK].set);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_DISK].value, 64ull << 20);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_DISK].by, MOAT_MECH_TMPFS);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_INODES].value, 4096);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_INODES].by, MOAT_MECH_TMPFS);
	assert_string_equal(r.limits_note, "");

	/* One limit is enough; none leaves the folder bound and says nothing. */
	c->limits.disk_bytes = MOAT_UNLIMITED;
	assert_true(moat__out_capped(c));
	c->limits.disk_inodes = MOAT_UNLIMITED;
	assert_false(moat__out_capped(c));
	moat_result_init(&r);
	moat__out_enforced(c, &r);
	assert_false(r.enforced[MOAT_LIMIT_KIND_DISK].set);
	assert_string_equal(r.limits_note, "");

	/* A workspace is bound in place: listed, not enforced, and said. */
	c->limits.disk_bytes = 1 << 20;
	c->exec_workspace = true;
	assert_false(moat__out_capped(c));
	moat_result_init(&r);
	moat__out_enforced(c, &r);
	assert_int_equal(r.enforced[MOAT_LIMIT_KIND_DISK].by, MOAT_MECH_NONE);
	assert_non_null(strstr(r.limits_note, "bound in place"));
	c->exec_workspace = false;
	c->profile = strdup("agent");
	assert_false(moat__out_capped(c));
	moat_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict),
		cmocka_unit_test(test_enforced_json),
		cmocka_unit_test(test_out_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
