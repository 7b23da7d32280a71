/* Namespaces handed to moat-oci by path (oci-netns.c): which paths are the
 * kernel's own links, the names of the types, and that a file is opened as
 * a namespace of the entry's type or refused, naming the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci-netns.h"

static void test_proc_ns_link(void **state)
{
	(void)state;
	assert_true(moat__oci_proc_ns_link("/proc/1/ns/net"));
	assert_true(moat__oci_proc_ns_link("/proc/4242/ns/ipc"));
	assert_true(moat__oci_proc_ns_link("/proc/self/ns/uts"));
	/* Anything else is a path whose last link is not followed. */
	assert_false(moat__oci_proc_ns_link("/run/netns/cni-1234"));
	assert_false(moat__oci_proc_ns_link("/proc/1/ns/"));
	assert_false(moat__oci_proc_ns_link("/proc//ns/net"));
	assert_false(moat__oci_proc_ns_link("/proc/1/ns/net/x"));
	assert_false(moat__oci_proc_ns_link("/proc/1/ns/../../2/ns/net"));
	assert_false(moat__oci_proc_ns_link("/proc/1/task/1/ns/net"));
	assert_false(moat__oci_proc_ns_link("/proc/selfish/ns/net"));
	assert_false(moat__oci_proc_ns_link("/proc/12345678901/ns/net"));
	assert_false(moat__oci_proc_ns_link("/proc/1/ns/NET"));
	assert_false(moat__oci_proc_ns_link("proc/1/ns/net"));
	assert_false(moat__oci_proc_ns_link("/var/proc/1/ns/net"));
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(moat__oci_ns_type_name(CLONE_NEWNET), "net");
	assert_string_equal(moat__oci_ns_type_name(CLONE_NEWNS), "mnt");
	assert_string_equal(moat__oci_ns_type_name(CLONE_NEWUSER), "user");
	assert_string_equal(moat__oci_ns_type_name(CLONE_NEWPID), "pid");
	assert_string_equal(moat__oci_ns_type_name(CLONE_NEWCGROUP), "cgroup");
	assert_string_equal(moat__oci_ns_type_name(0), "unknown");
}

static void test_open(void **state)
{
	(void)state;
	moat_error err = {0};
	int fd = moat__oci_ns_open("/proc/self/ns/net", CLONE_NEWNET, "f", &err);
	assert_true(fd >= 0);
	/* The runtime's own network: never a container's. */
	assert_int_equal(moat__oci_netns_not_host(fd, "f", "p", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "network namespace"));
	/* With network.mode none, whatever the namespace, naming both
	 * ways in. */
	assert_int_equal(moat__oci_podnet_allowed(fd, MOAT_NET_NONE, "f", "p", &err), -MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "network.mode: pod"));
	assert_non_null(strstr(err.msg, "network.mode proxy or transparent"));
	/* pod (joined) and the gateway's modes (its upstream there) pass the
	 * mode; what is left is the privilege over it: this process's own
	 * namespace, with CAP_SYS_ADMIN as root, without it rootless. */
	moat_net_mode modes[] = {MOAT_NET_POD, MOAT_NET_PROXY, MOAT_NET_TRANSPARENT};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int r = moat__oci_podnet_allowed(fd, modes[i], "f", "p", &err);
		assert_true(r == 0 || r == -EPERM);
		if (r < 0)
			assert_non_null(strstr(err.msg, "needs CAP_SYS_ADMIN"));
	}
	close(fd);

	assert_int_equal(moat__oci_ns_open("/proc/self/ns/mnt", CLONE_NEWNET, "f", &err), -MOAT_EINPUT);
	assert_string_equal(err.msg, "f: /proc/self/ns/mnt is a namespace of type mnt, not net");
	assert_int_equal(moat__oci_ns_open("/proc/self/ns/user", CLONE_NEWNET, "f", &err), -MOAT_EINPUT);
	assert_string_equal(err.msg, "f: /proc/self/ns/user is a namespace of type user, not net");

	char dir[] = "/tmp/moat-netns-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char file[64], link[64];
	snprintf(file, sizeof(file), "%s/plain", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	int w = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(w >= 0);
	close(w);
	assert_int_equal(symlink("/proc/self/ns/net", link), 0);
	char want[160];
	assert_int_equal(moat__oci_ns_open(file, CLONE_NEWNET, "f", &err), -MOAT_EINPUT);
	snprintf(want, sizeof(want), "f: %s is not a namespace file", file);
	assert_string_equal(err.msg, want);
	/* A link to a namespace is not followed. */
	assert_int_equal(moat__oci_ns_open(link, CLONE_NEWNET, "f", &err), -MOAT_EINPUT);
	snprintf(want, sizeof(want), "f: %s is not a namespace file (a symbolic link, which is not followed)", link);
	assert_string_equal(err.msg, want);
	snprintf(want, sizeof(want), "%s/missing", dir);
	assert_int_equal(moat__oci_ns_open(want, CLONE_NEWNET, "f", &err), -ENOENT);
	unlink(link);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_ns_link),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
