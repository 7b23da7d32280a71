/* Unit tests: the pure half of the host probe (verdicts, fixes, require). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "probe.h"

/* A host that has everything, as a starting point. */
static void full_host(moat_host *h)
{
	memset(h, 0, sizeof(*h));
	h->userns_works = true;
	h->max_user_namespaces = 1000;
	h->unprivileged_userns_clone = -1;
	h->apparmor_restrict_userns = -1;
	h->seccomp_filter = h->seccomp_errno = h->seccomp_user_notif = h->seccomp_log = true;
	h->landlock_abi = 7;
	snprintf(h->cgroup, sizeof(h->cgroup), "v2");
	h->cgroup_memory = h->cgroup_pids = h->cgroup_cpu = true;
	h->overlayfs = h->pidfd = h->openat2 = h->clone3 = h->clone_into_cgroup = true;
	h->transparent_egress = true;
}

static const moat_check *find(const moat_check *c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].name, name) == 0)
			return &c[i];
	fail_msg("no check named %s", name);
	static const moat_check none = {.name = "", .state = _MOAT_CHECK_INVALID};
	return &none;
}

static void test_full_host(void **state)
{
	(void)state;
	moat_host h;
	full_host(&h);
	moat_check c[MOAT_HOST_CHECKS_MAX];
	size_t n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(c[i].state, MOAT_CHECK_OK);
		assert_string_equal(c[i].fix, "");
	}
	assert_true(moat_host_code_profile_enforced(c, n));
}

static void test_transparent_missing(void **state)
{
	(void)state;
	moat_host h;
	moat_check c[MOAT_HOST_CHECKS_MAX];
	full_host(&h);
	h.transparent_egress = false;
	snprintf(h.transparent_error, sizeof(h.transparent_error), "transparent egress needs nf_tables, which this kernel lacks");
	size_t n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	const moat_check *t = find(c, n, "transparent egress");
	assert_int_equal(t->state, MOAT_CHECK_MISSING);
	assert_non_null(strstr(t->detail, "nf_tables"));
	assert_non_null(strstr(t->fix, "CONFIG_NFT_REDIR"));
	/* The code runner does not need it. */
	assert_true(moat_host_code_profile_enforced(c, n));
}

static void test_userns_fixes(void **state)
{
	(void)state;
	moat_host h;
	moat_check c[MOAT_HOST_CHECKS_MAX];
	full_host(&h);
	h.userns_works = false;
	h.userns_errno = EPERM;
	h.unprivileged_userns_clone = 0;
	size_t n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	const moat_check *u = find(c, n, "user namespaces");
	assert_int_equal(u->state, MOAT_CHECK_MISSING);
	assert_non_null(strstr(u->fix, "kernel.unprivileged_userns_clone=1"));
	assert_false(moat_host_code_profile_enforced(c, n));

	h.unprivileged_userns_clone = -1;
	h.apparmor_restrict_userns = 1;
	n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	assert_non_null(strstr(find(c, n, "user namespaces")->fix, "apparmor_restrict_unprivileged_userns=0"));

	h.max_user_namespaces = 0;
	n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	assert_non_null(strstr(find(c, n, "user namespaces")->fix, "user.max_user_namespaces"));
}

static void test_landlock_levels(void **state)
{
	(void)state;
	moat_host h;
	moat_check c[MOAT_HOST_CHECKS_MAX];
	full_host(&h);
	h.landlock_abi = 3;
	size_t n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	const moat_check *l = find(c, n, "landlock");
	assert_int_equal(l->state, MOAT_CHECK_PARTIAL);
	assert_non_null(strstr(l->fix, "TCP"));
	assert_false(moat_host_code_profile_enforced(c, n));

	h.landlock_abi = 0;
	h.landlock_errno = EOPNOTSUPP;
	n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	l = find(c, n, "landlock");
	assert_int_equal(l->state, MOAT_CHECK_MISSING);
	assert_non_null(strstr(l->fix, "lsm="));
}

static void test_cgroup_and_optional(void **state)
{
	(void)state;
	moat_host h;
	moat_check c[MOAT_HOST_CHECKS_MAX];
	full_host(&h);
	h.cgroup_memory = h.cgroup_pids = h.cgroup_cpu = false;
	size_t n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	const moat_check *g = find(c, n, "cgroup limits");
	assert_int_equal(g->state, MOAT_CHECK_MISSING);
	assert_non_null(strstr(g->fix, "Delegate=yes"));
	assert_false(moat_host_code_profile_enforced(c, n));

	/* Missing optional interfaces do not make the code profile partial. */
	full_host(&h);
	h.overlayfs = h.clone_into_cgroup = false;
	n = moat_host_checks(&h, c, MOAT_HOST_CHECKS_MAX);
	assert_int_equal(find(c, n, "overlayfs")->state, MOAT_CHECK_MISSING);
	assert_true(moat_host_code_profile_enforced(c, n));
}

static void test_require(void **state)
{
	(void)state;
	moat_host h;
	moat_error err = {0};
	full_host(&h);
	char *all[] = {"userns", "netns", "seccomp", "landlock", "landlock-net", "landlock-scope", "cgroup", NULL};
	assert_int_equal(moat_host_require(&h, all, &err), 0);
	assert_int_equal(moat_host_require(&h, NULL, &err), 0);

	char *bogus[] = {"seccomp", "selinux", NULL};
	assert_true(moat_host_require(&h, bogus, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "unknown layer 'selinux'"));

	h.landlock_abi = 5;
	char *scope[] = {"landlock", "landlock-net", "landlock-scope", NULL};
	assert_true(moat_host_require(&h, scope, &err) < 0);
	assert_non_null(strstr(err.msg, "requires landlock-scope"));
	assert_non_null(strstr(err.msg, "6.12"));

	full_host(&h);
	h.cgroup_pids = false;
	char *cg[] = {"cgroup", NULL};
	assert_true(moat_host_require(&h, cg, &err) < 0);
	assert_non_null(strstr(err.msg, "cgroup"));

	/* Root needs no user namespace of its own to get a network namespace. */
	full_host(&h);
	h.userns_works = false;
	h.is_root = true;
	char *ns[] = {"netns", NULL};
	assert_int_equal(moat_host_require(&h, ns, &err), 0);
	h.is_root = false;
	assert_true(moat_host_require(&h, ns, &err) < 0);
}

static void test_probe_runs(void **state)
{
	(void)state;
	/* The real probe on this machine: it must not crash, and must agree
	 * with the kernel on the one thing checked independently here. */
	moat_host h;
	moat_host_probe(&h);
	assert_true(h.landlock_abi >= 0 && h.landlock_abi < 100);
	assert_true(h.seccomp_filter == h.seccomp_errno || !h.seccomp_filter);
	assert_true(strcmp(h.cgroup, "v2") == 0 || strcmp(h.cgroup, "v1") == 0 || strcmp(h.cgroup, "hybrid") == 0 ||
		    strcmp(h.cgroup, "none") == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_host),
		cmocka_unit_test(test_transparent_missing),     cmocka_unit_test(test_userns_fixes),
		cmocka_unit_test(test_landlock_levels), cmocka_unit_test(test_cgroup_and_optional),
		cmocka_unit_test(test_require),       cmocka_unit_test(test_probe_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
