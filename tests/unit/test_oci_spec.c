/* config.json (runtime-spec 1.x) into moat's OCI spec (oci-spec.c): what
 * is read, what is narrowed, and that every refusal names its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "oci-spec.h"

/* The shape `runc spec` writes, with moat's annotations added. */
#define BASE_HEAD \
	"{\"ociVersion\":\"1.0.2-dev\","\
	"\"process\":{\"terminal\":true,\"user\":{\"uid\":1000,\"gid\":100,\"additionalGids\":[100,100]},"\
	"\"args\":[\"sh\",\"-c\",\"echo hi\"],\"env\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm\"],\"cwd\":\"/home\","\
	"\"capabilities\":{\"bounding\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"\
	"\"effective\":[\"CAP_KILL\"],\"permitted\":[\"CAP_KILL\"],\"ambient\":[\"CAP_KILL\"]},"\
	"\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":512}],\"noNewPrivileges\":true,\"oomScoreAdj\":-7},"\
	"\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"box\","\
	"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"\
	"{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/data\",\"options\":[\"rbind\",\"ro\"]}],"\
	"\"annotations\":{\"dev.moat.policy\":\"agent\",\"dev.moat.audit\":\"/var/log/c1.jsonl\",\"other\":\"x\"},"\
	"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"\
	"{\"type\":\"mount\"},{\"type\":\"user\"}],"\
	"\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],"\
	"\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],"\
	"\"resources\":{\"memory\":{\"limit\":67108864},\"cpu\":{\"quota\":50000,\"period\":100000,\"shares\":512},"\
	"\"pids\":{\"limit\":32},\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},"\
	"\"maskedPaths\":[\"/proc/kcore\",\"/sys/firmware\"],\"readonlyPaths\":[\"/proc/sys\"],"\
	"\"sysctl\":{\"net.ipv4.ip_forward\":\"1\",\"kernel.shmmax\":\"4096\"},"\
	"\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"\
	"\"syscalls\":[{\"names\":[\"mkdir\",\"mkdirat\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13},"\
	"{\"names\":[\"personality\"],\"action\":\"SCMP_ACT_ERRNO\","\
	"\"args\":[{\"index\":0,\"value\":8,\"op\":\"SCMP_CMP_NE\"}]}]}"\
	"%s}%s}"

/* BASE_HEAD with extra text put into "linux" (in_linux) and at the top
 * level (top). */
static char *spec_with(const char *in_linux, const char *top)
{
	char *s = NULL;
	assert_true(asprintf(&s, BASE_HEAD, in_linux, top) > 0);
	return s;
}

static int parse(const char *json, moat_oci_spec **ret, moat_error *err)
{
	return moat_oci_spec_parse(json, strlen(json), "/bundles/c1", ret, err);
}

/* Parsing fails with MOAT_EINPUT and a message starting with field. */
static void expect_refused(const char *json, const char *field, const char *words)
{
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	int r = parse(json, &s, &err);
	if (r >= 0 || strncmp(err.msg, field, strlen(field)) != 0 || (words && !strstr(err.msg, words)))
		fail_msg("expected refusal at %s (%s), got r=%d: %s", field, words ? words : "", r, err.msg);
	assert_int_equal(err.code, MOAT_EINPUT);
	assert_null(s);
}

static void test_full(void **state)
{
	(void)state;
	char *j = spec_with("", "");
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	free(j);
	assert_string_equal(s->oci_version, "1.0.2-dev");
	assert_string_equal(s->root_path, "/bundles/c1/rootfs");
	assert_true(s->root_readonly);
	assert_true(s->terminal);
	assert_string_equal(s->args[0], "sh");
	assert_string_equal(s->args[2], "echo hi");
	assert_null(s->args[3]);
	assert_string_equal(s->env[1], "TERM=xterm");
	assert_string_equal(s->cwd, "/home");
	assert_int_equal(s->uid, 1000);
	assert_int_equal(s->gid, 100);
	assert_int_equal(s->n_additional_gids, 2);
	assert_int_equal(s->additional_gids[1], 100);
	assert_true(s->user_set);
	assert_int_equal(s->n_rlimits, 1);
	assert_int_equal(s->rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(s->rlimits[0].soft, 512);
	assert_int_equal(s->rlimits[0].hard, 1024);
	assert_true(s->no_new_privileges);
	assert_true(s->oom_score_adj_set);
	assert_int_equal(s->oom_score_adj, -7);
	assert_string_equal(s->hostname, "box");

	/* Asked for, recorded, and not one granted: moat's set is empty. */
	assert_int_equal(s->caps_effective, UINT64_C(1) << 5 /* CAP_KILL */);
	assert_true(s->caps_bounding & (UINT64_C(1) << 29 /* CAP_AUDIT_WRITE */));
	assert_int_equal(s->caps_granted, 0);

	assert_int_equal(s->n_mounts, 2);
	assert_string_equal(s->mounts[0].destination, "/proc");
	assert_false(s->mounts[0].bind);
	assert_true(s->mounts[1].bind);
	assert_true(s->mounts[1].readonly);
	assert_string_equal(s->mounts[1].source, "/srv/data");

	assert_int_equal(s->namespaces, (1u << MOAT_OCI_NS_PID) | (1u << MOAT_OCI_NS_NETWORK) | (1u << MOAT_OCI_NS_IPC) |
						(1u << MOAT_OCI_NS_UTS) | (1u << MOAT_OCI_NS_MOUNT) | (1u << MOAT_OCI_NS_USER));
	assert_int_equal(s->n_uid_mappings, 1);
	assert_int_equal(s->uid_mappings[0].host_id, 100000);
	assert_int_equal(s->gid_mappings[0].size, 65536);

	assert_int_equal(s->memory_bytes, 64u << 20);
	assert_int_equal(s->cpus_milli, 500);
	assert_int_equal(s->cpu_shares, 512);
	assert_int_equal(s->cpu_quota, 50000);
	assert_int_equal(s->cpu_period, 100000);
	assert_int_equal(s->pids, 32);

	assert_string_equal(s->masked_paths[1], "/sys/firmware");
	assert_string_equal(s->readonly_paths[0], "/proc/sys");
	assert_null(s->readonly_paths[1]);
	assert_int_equal(s->n_sysctls, 2);

	assert_non_null(s->seccomp);
	assert_int_equal(s->seccomp->default_action, MOAT_OCI_SCMP_ALLOW);
	assert_string_equal(s->seccomp->architectures[0], "SCMP_ARCH_X86_64");
	assert_int_equal(s->seccomp->n_rules, 2);
	assert_int_equal(s->seccomp->rules[0].action, MOAT_OCI_SCMP_ERRNO);
	assert_int_equal(s->seccomp->rules[0].errno_ret, 13);
	assert_string_equal(s->seccomp->rules[0].names[1], "mkdirat");
	assert_int_equal(s->seccomp->rules[1].errno_ret, EPERM);
	assert_int_equal(s->seccomp->rules[1].n_args, 1);
	assert_int_equal(s->seccomp->rules[1].args[0].op, MOAT_OCI_SCMP_CMP_NE);
	assert_int_equal(s->seccomp->rules[1].args[0].value, 8);

	assert_string_equal(s->policy, "agent");
	assert_string_equal(s->audit_path, "/var/log/c1.jsonl");
	moat_oci_spec_free(s);
}

static void test_narrow_limits(void **state)
{
	(void)state;
	char *j = spec_with("", "");
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	free(j);
	moat_limits l;
	moat_limits_default_code(&l); /* memory 256M, pids 64, cpu unlimited */
	moat_oci_spec_narrow_limits(s, &l);
	assert_int_equal(l.memory_bytes, 64u << 20);
	assert_int_equal(l.pids, 32);
	assert_int_equal(l.cpus_milli, 500);
	/* A spec asking for more than the policy gets the policy's. */
	s->memory_bytes = 1ull << 40;
	s->pids = MOAT_UNLIMITED;
	moat_limits_default_code(&l);
	moat_oci_spec_narrow_limits(s, &l);
	assert_int_equal(l.memory_bytes, 256u << 20);
	assert_int_equal(l.pids, 64);
	moat_oci_spec_free(s);
}

static void test_minimal(void **state)
{
	(void)state;
	const char *j = "{\"ociVersion\":\"1.1.0\",\"root\":{\"path\":\"/abs/root\"},"
			"\"process\":{\"args\":[\"/bin/true\"],\"cwd\":\"/\"},"
			"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			"{\"type\":\"uts\"},{\"type\":\"mount\"}]},\"unknownTopLevel\":{\"a\":1}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	assert_string_equal(s->root_path, "/abs/root");
	assert_false(s->root_readonly);
	assert_null(s->env[0]);
	assert_int_equal(s->uid, 0);
	assert_null(s->seccomp);
	assert_null(s->policy);
	assert_int_equal(s->memory_bytes, MOAT_UNLIMITED);
	assert_int_equal(s->pids, MOAT_UNLIMITED);
	assert_int_equal(s->cpus_milli, MOAT_UNLIMITED);
	assert_false(s->oom_score_adj_set);
	moat_oci_spec_free(s);
}

static void test_host_namespaces_refused(void **state)
{
	(void)state;
	static const char *const ns[] = {"pid", "network", "ipc", "uts", "mount"};
	char words[64];
	for (size_t i = 0; i < 5; i++) {
		/* Left out: the host's. */
		char list[256] = "";
		for (size_t k = 0; k < 5; k++)
			if (k != i) {
				strcat(list, list[0] ? "," : "");
				strcat(list, "{\"type\":\"");
				strcat(list, ns[k]);
				strcat(list, "\"}");
			}
		char *j = NULL;
		assert_true(asprintf(&j,
				     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],"
				     "\"cwd\":\"/\"},\"linux\":{\"namespaces\":[%s]}}",
				     list) > 0);
		snprintf(words, sizeof(words), "no \"%s\" entry", ns[i]);
		expect_refused(j, "linux.namespaces", words);
		free(j);
	}
	/* Joined by path: network, ipc and uts paths are recorded (the
	 * runtime then lets only another moat-oci container's through);
	 * pid, mount, user, cgroup paths and relative ones are refused. */
	const char *j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
			"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/7/ns/net\"},"
			"{\"type\":\"ipc\",\"path\":\"/proc/7/ns/ipc\"},{\"type\":\"uts\",\"path\":\"/proc/7/ns/uts\"},{\"type\":\"mount\"}]}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	assert_string_equal(s->ns_paths[MOAT_OCI_NS_NETWORK], "/proc/7/ns/net");
	assert_int_equal(s->ns_path_index[MOAT_OCI_NS_NETWORK], 1);
	assert_string_equal(s->ns_paths[MOAT_OCI_NS_UTS], "/proc/7/ns/uts");
	assert_null(s->ns_paths[MOAT_OCI_NS_PID]);
	moat_oci_spec_free(s);
	static const char *const never[] = {"pid", "mount", "user", "cgroup"};
	for (size_t i = 0; i < ELEMENTSOF(never); i++) {
		char *t = NULL;
		assert_true(asprintf(&t,
				     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],"
				     "\"cwd\":\"/\"},\"linux\":{\"namespaces\":[{\"type\":\"%s\",\"path\":\"/proc/7/ns/x\"}]}}",
				     never[i]) > 0);
		snprintf(words, sizeof(words), "joining the existing %s namespace", never[i]);
		expect_refused(t, "linux.namespaces[0].path", words);
		free(t);
	}
	j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
	    "\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"ns/net\"}]}}";
	expect_refused(j, "linux.namespaces[0].path", "not an absolute path");
	j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
	    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]}}";
	expect_refused(j, "linux.namespaces[1].type", "twice");
	j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
	    "\"linux\":{\"namespaces\":[{\"type\":\"bogus\"}]}}";
	expect_refused(j, "linux.namespaces[0].type", "bogus");
	/* No linux section at all is every host namespace. */
	j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"}}";
	expect_refused(j, "linux", "required");
}

/* A process section alone (as `exec --process FILE`) with body spliced in. */
static void expect_process_refused(const char *body, const char *field, const char *words)
{
	char *j = NULL;
	assert_true(asprintf(&j,
			     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{%s},"
			     "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			     "{\"type\":\"uts\"},{\"type\":\"mount\"}]}}",
			     body) > 0);
	expect_refused(j, field, words);
	free(j);
}

static void test_process_refused(void **state)
{
	(void)state;
	expect_process_refused("\"cwd\":\"/\"", "process.args", "required");
	expect_process_refused("\"args\":[],\"cwd\":\"/\"", "process.args", "required");
	expect_process_refused("\"args\":[\"\"],\"cwd\":\"/\"", "process.args[0]", "empty");
	expect_process_refused("\"args\":[\"x\",3],\"cwd\":\"/\"", "process.args[1]", "string");
	expect_process_refused("\"args\":[\"x\"]", "process.cwd", "required");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"rel\"", "process.cwd", "absolute");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/a/../b\"", "process.cwd", "absolute");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"env\":[\"NOEQUALS\"]", "process.env[0]", "NAME=VALUE");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"env\":[\"=v\"]", "process.env[0]", "NAME=VALUE");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"terminal\":1", "process.terminal", "true or false");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"user\":{\"uid\":-1}", "process.user.uid", "range");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"user\":{\"uid\":4294967295}", "process.user.uid",
			       "range");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"user\":{\"additionalGids\":[0,\"a\"]}",
			       "process.user.additionalGids[1]", "group id");
	/* The sandbox maps one group: another supplementary one is refused. */
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"user\":{\"uid\":1,\"gid\":2,\"additionalGids\":[2,3]}",
			       "process.user.additionalGids[1]", "not mapped");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"capabilities\":{\"effective\":[\"CAP_FLY\"]}",
			       "process.capabilities.effective[0]", "CAP_FLY");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_BOGUS\",\"soft\":1,"
			       "\"hard\":1}]",
			       "process.rlimits[0].type", "RLIMIT_BOGUS");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_CORE\",\"soft\":2,"
			       "\"hard\":1}]",
			       "process.rlimits[0]", "above hard");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_CORE\",\"soft\":1,"
			       "\"hard\":1},{\"type\":\"RLIMIT_CORE\",\"soft\":1,\"hard\":1}]",
			       "process.rlimits[1].type", "twice");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_CORE\",\"soft\":1}]",
			       "process.rlimits[0]", "required");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"oomScoreAdj\":1001", "process.oomScoreAdj", "range");
	expect_process_refused("\"args\":[\"x\"],\"cwd\":\"/\",\"oomScoreAdj\":\"5\"", "process.oomScoreAdj", "integer");
}

static void test_every_capability_is_dropped(void **state)
{
	(void)state;
	/* Every capability the kernel knows, in every set: parsed, none
	 * granted. */
	char list[4096] = "";
	for (unsigned c = 0; moat_oci_cap_to_string(c); c++) {
		strcat(list, c ? ",\"" : "\"");
		strcat(list, moat_oci_cap_to_string(c));
		strcat(list, "\"");
	}
	char *j = NULL;
	assert_true(asprintf(&j,
			     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],"
			     "\"cwd\":\"/\",\"capabilities\":{\"bounding\":[%s],\"effective\":[%s],\"permitted\":[%s],"
			     "\"inheritable\":[%s],\"ambient\":[%s]}},"
			     "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			     "{\"type\":\"uts\"},{\"type\":\"mount\"}]}}",
			     list, list, list, list, list) > 0);
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	free(j);
	assert_int_equal(s->caps_ambient, (UINT64_C(1) << 41) - 1);
	assert_int_equal(s->caps_granted, 0);
	assert_int_equal(moat_oci_cap_from_string("CAP_SYS_ADMIN"), 21);
	assert_int_equal(moat_oci_cap_from_string("SYS_ADMIN"), -1);
	moat_oci_spec_free(s);
}

/* A "linux" section with the five namespaces and extra text. */
static void expect_linux_refused(const char *extra, const char *field, const char *words)
{
	char *j = NULL;
	assert_true(asprintf(&j,
			     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],"
			     "\"cwd\":\"/\"},\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},"
			     "{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}]%s}}",
			     extra) > 0);
	expect_refused(j, field, words);
	free(j);
}

static void test_linux_refused(void **state)
{
	(void)state;
	static const struct {
		const char *in_linux, *field, *words;
	} cases[] = {
		{",\"sysctl\":{\"kernel.core_pattern\":\"|/tmp/x\"}", "linux.sysctl.kernel.core_pattern", "host"},
		{",\"sysctl\":{\"vm.overcommit_memory\":\"1\"}", "linux.sysctl.vm.overcommit_memory", "host"},
		{",\"sysctl\":{\"net/../../kernel/core_pattern\":\"x\"}", "linux.sysctl.net/", "not a sysctl name"},
		{",\"sysctl\":{\"net..ipv4\":\"x\"}", "linux.sysctl.net..ipv4", "not a sysctl name"},
		{",\"sysctl\":{\"net.ipv4.x\":1}", "linux.sysctl.net.ipv4.x", "string"},
		{",\"devices\":[{\"path\":\"/dev/sda\",\"type\":\"b\",\"major\":8,\"minor\":0}]", "linux.devices[0].path",
		 "/dev/sda"},
		{",\"devices\":[{\"path\":\"/dev/null\"},{\"path\":\"/dev/kmsg\"}]", "linux.devices[1].path", "/dev/kmsg"},
		{",\"maskedPaths\":[\"relative\"]", "linux.maskedPaths[0]", "absolute"},
		{",\"readonlyPaths\":[\"/proc/../etc\"]", "linux.readonlyPaths[0]", "absolute"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		expect_linux_refused(cases[i].in_linux, cases[i].field, cases[i].words);
	}
}

static void test_resources_and_mappings(void **state)
{
	(void)state;
	expect_linux_refused(",\"resources\":{\"memory\":{\"limit\":\"64m\"}}", "linux.resources.memory.limit",
			     "integer");
	expect_linux_refused(",\"resources\":{\"cpu\":{\"cpus\":\"0-1\\n/x\"}}", "linux.resources.cpu.cpus",
			     "not a list");
	expect_linux_refused(",\"resources\":{\"cpu\":{\"mems\":\"../0\"}}", "linux.resources.cpu.mems", "not a list");
	expect_linux_refused(",\"resources\":{\"cpu\":{\"quota\":1000,\"period\":10}}", "linux.resources.cpu.period",
			     "range");
	expect_linux_refused(",\"resources\":{\"pids\":[]}", "linux.resources.pids", "object");
	expect_linux_refused(",\"uidMappings\":[{\"containerID\":0,\"hostID\":4294967000,\"size\":65536}]",
			     "linux.uidMappings[0]", "past");
	expect_linux_refused(",\"gidMappings\":[{\"containerID\":0,\"hostID\":1}]", "linux.gidMappings[0].size",
			     "required");
	expect_linux_refused(",\"gidMappings\":[{\"containerID\":0,\"hostID\":1,\"size\":0}]",
			     "linux.gidMappings[0].size", "range");

	/* -1 and 0 are "not limited" as runc reads them. */
	const char *j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
			"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			"{\"type\":\"uts\"},{\"type\":\"mount\"}],\"resources\":{\"memory\":{\"limit\":-1},"
			"\"pids\":{\"limit\":0},\"cpu\":{\"quota\":-1}}}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	assert_int_equal(s->memory_bytes, MOAT_UNLIMITED);
	assert_int_equal(s->pids, MOAT_UNLIMITED);
	assert_int_equal(s->cpus_milli, MOAT_UNLIMITED);
	moat_oci_spec_free(s);

	/* A tiny quota rounds up to a thousandth of a CPU, never zero. */
	j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
	    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
	    "{\"type\":\"uts\"},{\"type\":\"mount\"}],\"resources\":{\"cpu\":{\"quota\":1,\"period\":1000000}}}}";
	assert_int_equal(parse(j, &s, &err), 0);
	assert_int_equal(s->cpus_milli, 1);
	moat_oci_spec_free(s);
}

static void test_seccomp(void **state)
{
	(void)state;
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}", "linux.seccomp.defaultAction",
			     "NOTIFY");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"listenerPath\":\"/run/l.sock\"}",
			     "linux.seccomp.listenerPath", "not supported");
	expect_linux_refused(",\"seccomp\":{}", "linux.seccomp.defaultAction", "required");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_SOMETIMES\"}", "linux.seccomp.defaultAction",
			     "unknown action");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"x86\"]}",
			     "linux.seccomp.architectures[0]", "SCMP_ARCH_");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[],"
			     "\"action\":\"SCMP_ACT_ERRNO\"}]}",
			     "linux.seccomp.syscalls[0].names", "at least one");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
			     "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]}",
			     "linux.seccomp.syscalls[0].args[0].index", "range");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
			     "\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1,\"op\":\"EQ\"}]}]}",
			     "linux.seccomp.syscalls[0].args[0].op", "unknown operator");
	expect_linux_refused(",\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
			     "\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":5000}]}",
			     "linux.seccomp.syscalls[0].errnoRet", "range");

	/* A mask of all ones is past int64: read exactly when jansson gives
	 * it as a real that holds it. */
	const char *j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
			"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			"{\"type\":\"uts\"},{\"type\":\"mount\"}],\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\","
			"\"defaultErrnoRet\":38,\"syscalls\":[{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\","
			"\"args\":[{\"index\":0,\"value\":2114060288,\"valueTwo\":0,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
			"{\"names\":[\"kill\"],\"action\":\"SCMP_ACT_KILL_THREAD\"}]}}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	assert_int_equal(s->seccomp->default_action, MOAT_OCI_SCMP_ERRNO);
	assert_int_equal(s->seccomp->default_errno_ret, 38);
	assert_int_equal(s->seccomp->rules[0].args[0].op, MOAT_OCI_SCMP_CMP_MASKED_EQ);
	assert_int_equal(s->seccomp->rules[0].args[0].value, 2114060288);
	assert_int_equal(s->seccomp->rules[1].action, MOAT_OCI_SCMP_KILL);
	moat_oci_spec_free(s);
}

static void test_top_level_refused(void **state)
{
	(void)state;
	char *j = spec_with("", ",\"hooks\":{\"prestart\":[{\"path\":\"/bin/sh\"}]}");
	expect_refused(j, "hooks.prestart", "no host program");
	free(j);
	j = spec_with("", ",\"hostname\":\"x\"");
	expect_refused(j, "line", "duplicate");
	free(j);
	expect_refused("{\"ociVersion\":\"2.0.0\"}", "ociVersion", "1.x");
	expect_refused("[1]", "expected a JSON object", NULL);
	expect_refused("{\"ociVersion\":\"1.0.0\"}", "root", "required");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"\"}}", "root.path", "empty");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}}", "process", "required");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"hostname\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
		       "hostname", "64");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"mounts\":[{\"destination\":\"data\",\"type\":\"bind\",\"source\":\"/x\"}]}",
		       "mounts[0].destination", "absolute");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"mounts\":[{\"destination\":\"/a/../../etc\",\"type\":\"bind\",\"source\":\"/x\"}]}",
		       "mounts[0].destination", "absolute");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"mounts\":[{\"destination\":\"/a\",\"options\":[\"rbind\"]}]}",
		       "mounts[0].source", "bind");
	expect_refused("{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
		       "\"mounts\":[{\"destination\":\"/a\",\"source\":\"x\"}]}",
		       "mounts[0].type", "required");
}

static void test_annotations(void **state)
{
	(void)state;
	static const struct {
		const char *top, *field, *words;
	} cases[] = {
		{",\"annotations\":{\"dev.moat.policy\":\"relative.yaml\"}", "annotations.dev.moat.policy", "profile"},
		{",\"annotations\":{\"dev.moat.policy\":\"nosuchprofile\"}", "annotations.dev.moat.policy", "profile"},
		{",\"annotations\":{\"dev.moat.audit\":\"log.jsonl\"}", "annotations.dev.moat.audit", "absolute"},
		{",\"annotations\":{\"a\":1}", "annotations.a", "string"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *j = NULL;
		assert_true(asprintf(&j,
				     "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],"
				     "\"cwd\":\"/\"},\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},"
				     "{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}]}%s}",
				     cases[i].top) > 0);
		expect_refused(j, cases[i].field, cases[i].words);
		free(j);
	}
	const char *j = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"x\"],\"cwd\":\"/\"},"
			"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
			"{\"type\":\"uts\"},{\"type\":\"mount\"}]},\"annotations\":{\"dev.moat.policy\":\"/etc/moat/web.yaml\"}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(parse(j, &s, &err), 0);
	assert_string_equal(s->policy, "/etc/moat/web.yaml");
	moat_oci_spec_free(s);
}

static void test_process_file(void **state)
{
	(void)state;
	const char *p = "{\"terminal\":false,\"args\":[\"ls\",\"-l\"],\"env\":[\"A=1\"],\"cwd\":\"/tmp\","
			"\"user\":{\"uid\":5,\"gid\":6}}";
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	assert_int_equal(moat_oci_process_parse(p, strlen(p), &s, &err), 0);
	assert_string_equal(s->args[1], "-l");
	assert_string_equal(s->cwd, "/tmp");
	assert_int_equal(s->uid, 5);
	assert_null(s->root_path);
	moat_oci_spec_free(s);
	p = "{\"args\":[\"ls\"]}";
	assert_true(moat_oci_process_parse(p, strlen(p), &s, &err) < 0);
	assert_string_equal(err.msg, "process.cwd: required");
	p = "{\"args\":";
	assert_true(moat_oci_process_parse(p, strlen(p), &s, &err) < 0);
	assert_non_null(strstr(err.msg, "process: line 1"));
}

static void test_names(void **state)
{
	(void)state;
	assert_true(moat_oci_sysctl_is_namespaced("net.ipv4.ip_forward"));
	assert_true(moat_oci_sysctl_is_namespaced("fs.mqueue.queues_max"));
	assert_true(moat_oci_sysctl_is_namespaced("kernel.shm_rmid_forced"));
	assert_false(moat_oci_sysctl_is_namespaced("kernel.shm"));
	assert_false(moat_oci_sysctl_is_namespaced("kernel.panic"));
	assert_false(moat_oci_sysctl_is_namespaced("netx.a"));
	assert_string_equal(moat_oci_ns_to_string(MOAT_OCI_NS_NETWORK), "network");
	assert_int_equal(moat_oci_ns_from_string("cgroup"), MOAT_OCI_NS_CGROUP);
	assert_int_equal(moat_oci_ns_from_string("net"), _MOAT_OCI_NS_INVALID);
	assert_string_equal(moat_oci_rlimit_to_string(RLIMIT_NOFILE), "RLIMIT_NOFILE");
	assert_string_equal(moat_oci_seccomp_action_to_string(MOAT_OCI_SCMP_LOG), "SCMP_ACT_LOG");
	assert_null(moat_oci_cap_to_string(41));
}

static void test_tmpfs_options(void **state)
{
	(void)state;
	moat_error err = {0};
	moat_tmpfs_mount t;
	char *o1[] = {"nosuid", "strictatime", "mode=755", "size=65536k", "noexec", "ro", NULL};
	moat_oci_mount m = {.destination = "/run", .type = "tmpfs", .options = o1};
	assert_int_equal(moat_oci_tmpfs_options(&m, UINT64_C(1) << 30, "mounts[3]", &t, &err), 0);
	assert_string_equal(t.dst, "/run");
	assert_int_equal(t.size, UINT64_C(65536) << 10);
	assert_int_equal(t.mode, 0755);
	assert_true(t.noexec);
	assert_true(t.readonly);
	free(t.dst);
	/* The size is capped, and the cap is the default; setuid and setgid
	 * bits are dropped from the mode. */
	char *o2[] = {"size=100g", "mode=6777", NULL};
	m.options = o2;
	assert_int_equal(moat_oci_tmpfs_options(&m, 1 << 20, "mounts[3]", &t, &err), 0);
	assert_int_equal(t.size, 1 << 20);
	assert_int_equal(t.mode, 0777);
	assert_false(t.noexec);
	free(t.dst);
	m.options = NULL;
	assert_int_equal(moat_oci_tmpfs_options(&m, 4096, "mounts[3]", &t, &err), 0);
	assert_int_equal(t.size, 4096);
	assert_int_equal(t.mode, 01777);
	free(t.dst);
	struct {
		const char *opt, *want;
	} bad[] = {
		{"suid", "mounts[3].options[0]: suid is refused"},
		{"dev", "nosuid and nodev"},
		{"size=50%", "is not a size"},
		{"size=0", "is not a size"},
		{"size=99999999999999999999", "is not a size"},
		{"mode=9", "octal mode"},
		{"mode=17777", "octal mode"},
		{"uid=0", "\"uid=0\" is not supported"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *o[] = {(char *)bad[i].opt, NULL};
		m.options = o;
		moat_error e = {0};
		assert_int_equal(moat_oci_tmpfs_options(&m, 4096, "mounts[3]", &t, &e), -MOAT_EINPUT);
		char buf[MOAT_ERROR_MAX + 64];
		const char *msg = moat_error_format(&e, buf, sizeof(buf));
		if (!strstr(msg, bad[i].want))
			fail_msg("%s: %s", bad[i].opt, msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_narrow_limits),
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_host_namespaces_refused),
		cmocka_unit_test(test_process_refused),
		cmocka_unit_test(test_every_capability_is_dropped),
		cmocka_unit_test(test_linux_refused),
		cmocka_unit_test(test_resources_and_mappings),
		cmocka_unit_test(test_seccomp),
		cmocka_unit_test(test_top_level_refused),
		cmocka_unit_test(test_annotations),
		cmocka_unit_test(test_process_file),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_tmpfs_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
