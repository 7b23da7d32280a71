/* User namespace: one mapped id, so the sandbox has exactly one user and no
 * root. Rootless, that user is the caller; as root, it is an unprivileged
 * host id, so nothing the sandbox does acts as host root. */
#include "sandbox-internal.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static int write_proc(pid_t pid, const char *file, const char *content, moat_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int r = moat__write_string(path, content);
	if (r < 0)
		return moat_error_set(err, r, "write %s of the sandbox", file);
	return 0;
}

bool moat__userns_host_root(void)
{
	if (geteuid() != 0)
		return false;
	_cleanup_free_ char *map = NULL;
	int r = moat__read_file_at(AT_FDCWD, "/proc/self/uid_map", 4096, &map);
	if (r == -EFBIG)
		return false; /* many lines: the initial namespace's map has one */
	if (r < 0)
		return true; /* no /proc: the initial namespace is the safe guess for root */
	unsigned inside, outside, count;
	return sscanf(map, "%u %u %u", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
	       count == 4294967295u;
}

int moat__userns_write_maps(pid_t pid, bool rootless, uid_t uid, gid_t gid, uid_t host_uid, gid_t host_gid,
			    moat_error *err)
{
	char map[64];
	int r;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)host_uid);
	r = write_proc(pid, "uid_map", map, err);
	if (r < 0)
		return r;
	/* An unprivileged writer must deny setgroups before it may write a
	 * gid_map (CVE-2014-8989: dropping groups could grant access through
	 * negative ACLs). As root we keep setgroups so the init can drop the
	 * host's supplementary groups. */
	if (rootless) {
		r = write_proc(pid, "setgroups", "deny", err);
		if (r < 0)
			return r;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)host_gid);
	return write_proc(pid, "gid_map", map, err);
}

int moat__userns_become_sandbox_user(bool rootless, uid_t uid, gid_t gid, moat_error *err)
{
	/* Keep the namespace capabilities across the id change: setup (mounts,
	 * hostname) still needs them; the command drops them all before exec. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "keep capabilities");
	if (!rootless && setgroups(0, NULL) < 0)
		return moat_error_set(err, errno, "drop supplementary groups");
	if (setresgid(gid, gid, gid) < 0)
		return moat_error_set(err, errno, "setresgid %u", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return moat_error_set(err, errno, "setresuid %u", (unsigned)uid);
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "reset keep-capabilities");
	/* The id change cleared the effective set; raise it again from the
	 * permitted set, which KEEPCAPS preserved. */
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2] = {0};
	if (syscall(SYS_capget, &hdr, data) < 0)
		return moat_error_set(err, errno, "capget");
	data[0].effective = data[0].permitted;
	data[1].effective = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return moat_error_set(err, errno, "capset");
	return 0;
}

/* No namespace is made inside a sandbox (seccomp refuses it too): zero
 * namespaces of every kind, and no fanotify (denied in every profile). The
 * code runner gets no inotify either; the agent a few instances for its
 * tools' file watchers, far below the host's defaults (128 instances per
 * user and a watch budget sized to memory). */
#define NS_NONE                                                                                            \
	{"max_user_namespaces", 0}, {"max_mnt_namespaces", 0}, {"max_pid_namespaces", 0},                   \
		{"max_net_namespaces", 0}, {"max_ipc_namespaces", 0}, {"max_uts_namespaces", 0},            \
		{"max_cgroup_namespaces", 0}, {"max_time_namespaces", 0}, {"max_fanotify_groups", 0},      \
		{"max_fanotify_marks", 0}
static const moat_userns_limit code_limits[] = {
	NS_NONE,
	{"max_inotify_instances", 0},
	{"max_inotify_watches", 0},
	{NULL, 0},
};
static const moat_userns_limit agent_limits[] = {
	NS_NONE,
	{"max_inotify_instances", 16},
	{"max_inotify_watches", 8192},
	{NULL, 0},
};

const moat_userns_limit *moat__userns_limits(const char *profile)
{
	return profile && strcmp(profile, "agent") == 0 ? agent_limits : code_limits;
}

int moat__userns_set_limits(int sys_user_fd, const char *profile, moat_error *err)
{
	/* /proc/sys/user shows the limits of the opener's user namespace,
	 * whichever procfs it is opened through; CAP_SYS_RESOURCE there lets
	 * us write them. Counts in this namespace are charged to its parents
	 * as well, so the limit caps what the sandbox can take from the
	 * caller. */
	for (const moat_userns_limit *l = moat__userns_limits(profile); l->name; l++) {
		char value[16];
		snprintf(value, sizeof(value), "%u", l->value);
		int r = moat__write_string_at(sys_user_fd, l->name, value);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return moat_error_set(err, r, "set /proc/sys/user/%s to %u in the sandbox's user namespace",
					      l->name, l->value);
	}
	return 0;
}
