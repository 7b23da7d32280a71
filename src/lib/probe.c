/* Host probes for `moat doctor` and for `require:`. The probes are the only
 * part with side effects (a forked child tries unshare, small reads of /proc
 * and /sys); turning their results into verdicts and fixes is pure. */
#include "probe.h"

#include "landlock.h"
#include "netnat.h"
#include "sandbox-internal.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* A sysctl as a number, or -1 when it does not exist or cannot be read. */
static long read_sysctl(const char *path)
{
	_cleanup_free_ char *s = NULL;
	if (moat__read_file_at(AT_FDCWD, path, 64, &s) < 0)
		return -1;
	char *end;
	long v = strtol(s, &end, 10);
	return end == s ? -1 : v;
}

/* Tries unshare(CLONE_NEWUSER) in a child, so the caller stays as it was. */
static bool probe_userns(int *ret_errno)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		*ret_errno = errno;
		return false;
	}
	pid_t pid = fork();
	if (pid < 0) {
		*ret_errno = errno;
		close(p[0]);
		close(p[1]);
		return false;
	}
	if (pid == 0) {
		int e = unshare(CLONE_NEWUSER) < 0 ? errno : 0;
		(void)!write(p[1], &e, sizeof(e));
		_exit(0);
	}
	close(p[1]);
	int e = EIO;
	if (read(p[0], &e, sizeof(e)) != (ssize_t)sizeof(e))
		e = EIO;
	close(p[0]);
	waitpid(pid, NULL, 0);
	*ret_errno = e;
	return e == 0;
}

static bool seccomp_action(uint32_t action)
{
	return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

static bool fs_type_is(const char *path, unsigned long magic)
{
	struct statfs sf;
	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == magic;
}

static bool filesystem_listed(const char *name)
{
	_cleanup_free_ char *s = NULL;
	if (moat__read_file_at(AT_FDCWD, "/proc/filesystems", 65536, &s) < 0)
		return false;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
		char *tab = strrchr(line, '\t');
		if (strcmp(tab ? tab + 1 : line, name) == 0)
			return true;
	}
	return false;
}

/* The caller's own cgroup v2 directory (from /proc/self/cgroup "0::/x"). */
static void own_v2_cgroup(const char *mnt, char *buf, size_t len)
{
	_cleanup_free_ char *s = NULL;
	snprintf(buf, len, "%s", mnt);
	/* Whole: cgroup v1 lists a line per hierarchy, of nested paths. */
	if (moat__read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &s) < 0)
		return;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(buf, len, "%s%s", mnt, strcmp(line + 3, "/") == 0 ? "" : line + 3);
			return;
		}
}

static void probe_cgroup(moat_host *h)
{
	snprintf(h->cgroup, sizeof(h->cgroup), "none");
	bool v2root = fs_type_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC);
	bool unified = fs_type_is("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC);
	bool v1 = fs_type_is("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC) ||
		  fs_type_is("/sys/fs/cgroup/pids", CGROUP_SUPER_MAGIC);
	if (v2root)
		snprintf(h->cgroup, sizeof(h->cgroup), "v2");
	else if (v1 && unified)
		snprintf(h->cgroup, sizeof(h->cgroup), "hybrid");
	else if (v1)
		snprintf(h->cgroup, sizeof(h->cgroup), "v1");

	/* v2: the controllers enabled for our own cgroup's children and whether
	 * we may create one there (delegation). */
	const char *mnt = v2root ? "/sys/fs/cgroup" : unified ? "/sys/fs/cgroup/unified" : NULL;
	if (mnt) {
		char dir[512];
		own_v2_cgroup(mnt, dir, sizeof(dir));
		_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		_cleanup_free_ char *ctl = NULL;
		if (fd >= 0 && faccessat(fd, ".", W_OK, AT_EACCESS) == 0 &&
		    moat__read_file_at(fd, "cgroup.controllers", 1024, &ctl) >= 0) {
			h->cgroup_memory = strstr(ctl, "memory") != NULL;
			h->cgroup_pids = strstr(ctl, "pids") != NULL;
			h->cgroup_cpu = strstr(ctl, "cpu") != NULL;
			if (h->cgroup_memory || h->cgroup_pids)
				snprintf(h->cgroup_where, sizeof(h->cgroup_where), "v2 %.80s", dir);
		}
	}
	if (v1 && !(h->cgroup_memory && h->cgroup_pids)) {
		h->cgroup_memory = access("/sys/fs/cgroup/memory", W_OK) == 0;
		h->cgroup_pids = access("/sys/fs/cgroup/pids", W_OK) == 0;
		h->cgroup_cpu = access("/sys/fs/cgroup/cpu", W_OK) == 0;
		if (h->cgroup_memory || h->cgroup_pids)
			snprintf(h->cgroup_where, sizeof(h->cgroup_where), "v1 /sys/fs/cgroup/{memory,pids,cpu}");
	}
}

static bool probe_clone_into_cgroup(void)
{
	/* With an fd that cannot exist, a kernel that knows the flag fails with
	 * EBADF on the fd; one that does not fails with EINVAL on the flag. No
	 * process is created either way. */
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
			set_tid_size, cgroup;
	} args = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = 0x3ffffff0};
	long r = syscall(SYS_clone3, &args, sizeof(args));
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		return true;
	}
	return errno == EBADF;
}

/* Sets transparent egress up in a throwaway network namespace (with a user
 * namespace of its own when not root), in a child that then exits: the
 * same netlink calls a run's init makes. */
static void probe_transparent(moat_host *h)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(h->transparent_error, sizeof(h->transparent_error), "pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		moat_error err = {0};
		int flags = CLONE_NEWNET | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
		if (unshare(flags) < 0)
			moat_error_set(&err, errno, "unshare a network namespace");
		else if (moat__net_loopback_up(&err) >= 0)
			(void)moat__netnat_rules(&err);
		if (err.msg[0])
			(void)!write(p[1], err.msg, strlen(err.msg));
		_exit(err.msg[0] ? 1 : 0);
	}
	close(p[1]);
	if (pid < 0) {
		snprintf(h->transparent_error, sizeof(h->transparent_error), "fork: %s", strerror(errno));
		close(p[0]);
		return;
	}
	char msg[sizeof(h->transparent_error)] = "";
	ssize_t n = read(p[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = 0;
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	h->transparent_egress = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!h->transparent_egress)
		snprintf(h->transparent_error, sizeof(h->transparent_error), "%s", msg[0] ? msg : "the probe failed");
}

void moat_host_probe(moat_host *h)
{
	memset(h, 0, sizeof(*h));
	h->is_root = geteuid() == 0;
	h->userns_works = probe_userns(&h->userns_errno);
	h->max_user_namespaces = read_sysctl("/proc/sys/user/max_user_namespaces");
	h->unprivileged_userns_clone = (int)read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
	h->apparmor_restrict_userns = (int)read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");

	h->seccomp_filter = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 && seccomp_action(SECCOMP_RET_ERRNO);
	h->seccomp_errno = seccomp_action(SECCOMP_RET_ERRNO);
	h->seccomp_user_notif = seccomp_action(SECCOMP_RET_USER_NOTIF);
	h->seccomp_log = seccomp_action(SECCOMP_RET_LOG);
	h->seccomp_kill_process = seccomp_action(SECCOMP_RET_KILL_PROCESS);

	h->landlock_abi = moat__landlock_abi();
	if (h->landlock_abi <= 0)
		h->landlock_errno = errno;

	probe_cgroup(h);

	h->overlayfs = filesystem_listed("overlay");
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	h->pidfd = fd >= 0;
	if (fd >= 0)
		close(fd);
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	fd = (int)syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));
	h->openat2 = fd >= 0;
	if (fd >= 0)
		close(fd);
	h->clone3 = !(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
	h->clone_into_cgroup = h->clone3 && probe_clone_into_cgroup();
	probe_transparent(h);
}

const char *moat_check_state_to_string(moat_check_state s)
{
	static const char *const names[_MOAT_CHECK_MAX] = {"ok", "partial", "missing"};
	return s >= 0 && s < _MOAT_CHECK_MAX ? names[s] : "invalid";
}

static moat_check *add(moat_check *ret, size_t max, size_t *n, const char *name, bool needed)
{
	if (*n >= max)
		return NULL;
	moat_check *c = &ret[(*n)++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->needed_by_code = needed;
	return c;
}

static void check_userns(const moat_host *h, moat_check *c)
{
	if (h->userns_works) {
		c->state = MOAT_CHECK_OK;
		snprintf(c->detail, sizeof(c->detail), "this user can create user namespaces (user.max_user_namespaces=%ld)",
			 h->max_user_namespaces);
		return;
	}
	c->state = MOAT_CHECK_MISSING;
	snprintf(c->detail, sizeof(c->detail), "unshare(CLONE_NEWUSER) fails: %s", strerror(h->userns_errno));
	if (h->max_user_namespaces == 0)
		snprintf(c->fix, sizeof(c->fix), "sysctl -w user.max_user_namespaces=15000");
	else if (h->unprivileged_userns_clone == 0)
		snprintf(c->fix, sizeof(c->fix), "sysctl -w kernel.unprivileged_userns_clone=1");
	else if (h->apparmor_restrict_userns == 1)
		snprintf(c->fix, sizeof(c->fix),
			 "give moat an AppArmor profile with 'userns,' or sysctl -w "
			 "kernel.apparmor_restrict_unprivileged_userns=0");
	else
		snprintf(c->fix, sizeof(c->fix), "a kernel with CONFIG_USER_NS=y; inside a container, allow unshare in "
						 "its seccomp profile");
}

size_t moat_host_checks(const moat_host *h, moat_check *ret, size_t max)
{
	size_t n = 0;
	moat_check *c;

	if ((c = add(ret, max, &n, "user namespaces", true)))
		check_userns(h, c);

	if ((c = add(ret, max, &n, "seccomp", true))) {
		c->state = h->seccomp_filter && h->seccomp_errno ? MOAT_CHECK_OK : MOAT_CHECK_MISSING;
		snprintf(c->detail, sizeof(c->detail), "filter mode%s; actions:%s%s%s%s",
			 h->seccomp_filter ? "" : " unavailable", h->seccomp_errno ? " errno" : "",
			 h->seccomp_user_notif ? " user_notif" : "", h->seccomp_log ? " log" : "",
			 h->seccomp_kill_process ? " kill_process" : "");
		if (c->state != MOAT_CHECK_OK)
			snprintf(c->fix, sizeof(c->fix), "a kernel with CONFIG_SECCOMP_FILTER=y");
	}

	if ((c = add(ret, max, &n, "landlock", true))) {
		if (h->landlock_abi <= 0) {
			c->state = MOAT_CHECK_MISSING;
			snprintf(c->detail, sizeof(c->detail), "not available: %s",
				 h->landlock_errno == EOPNOTSUPP ? "built but not enabled at boot" : "not in this kernel");
			snprintf(c->fix, sizeof(c->fix), "%s",
				 h->landlock_errno == EOPNOTSUPP
					 ? "add landlock to the lsm= boot parameter (e.g. lsm=landlock,lockdown,yama,apparmor)"
					 : "Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK=y");
		} else {
			c->state = h->landlock_abi >= 6 ? MOAT_CHECK_OK : MOAT_CHECK_PARTIAL;
			snprintf(c->detail, sizeof(c->detail), "ABI %d: filesystem%s%s%s%s", h->landlock_abi,
				 h->landlock_abi >= 3 ? ", truncate" : "", h->landlock_abi >= 4 ? ", TCP" : "",
				 h->landlock_abi >= 5 ? ", device ioctl" : "",
				 h->landlock_abi >= 6 ? ", signal and abstract socket scoping" : "");
			if (h->landlock_abi < 6)
				snprintf(c->fix, sizeof(c->fix),
					 "Linux 6.12 or later for ABI 6 (%s)",
					 h->landlock_abi < 4 ? "TCP rules and scoping are not enforced here"
							     : "scoping of signals and abstract sockets is not enforced here");
		}
	}

	if ((c = add(ret, max, &n, "cgroup limits", true))) {
		bool all = h->cgroup_memory && h->cgroup_pids;
		c->state = all ? (h->cgroup_cpu ? MOAT_CHECK_OK : MOAT_CHECK_PARTIAL)
			       : (h->cgroup_memory || h->cgroup_pids) ? MOAT_CHECK_PARTIAL
								       : MOAT_CHECK_MISSING;
		snprintf(c->detail, sizeof(c->detail), "%s hierarchy; usable here: memory %s, pids %s, cpu %s%s%s",
			 h->cgroup, h->cgroup_memory ? "yes" : "no", h->cgroup_pids ? "yes" : "no",
			 h->cgroup_cpu ? "yes" : "no", h->cgroup_where[0] ? " at " : "", h->cgroup_where);
		if (c->state != MOAT_CHECK_OK) {
			if (!h->is_root && strcmp(h->cgroup, "v2") == 0)
				snprintf(c->fix, sizeof(c->fix),
					 "delegate a cgroup to this user: systemd-run --user --scope -p "
					 "Delegate=yes moat ... (or run as root)");
			else if (!h->is_root)
				snprintf(c->fix, sizeof(c->fix),
					 "boot with systemd.unified_cgroup_hierarchy=1 and delegate a cgroup v2 "
					 "subtree to this user, or run moat as root (without it, memory and pids "
					 "limits have no cgroup behind them)");
			else
				snprintf(c->fix, sizeof(c->fix), "mount the memory, pids and cpu controllers "
								 "(cgroup v2: enable them in cgroup.subtree_control)");
		}
	}

	if ((c = add(ret, max, &n, "overlayfs", false))) {
		c->state = h->overlayfs ? MOAT_CHECK_OK : MOAT_CHECK_MISSING;
		snprintf(c->detail, sizeof(c->detail), "%s", h->overlayfs ? "available" : "not listed in /proc/filesystems");
		if (!h->overlayfs)
			snprintf(c->fix, sizeof(c->fix), "modprobe overlay (needed for persistent session workspaces)");
	}
	if ((c = add(ret, max, &n, "transparent egress", false))) {
		c->state = h->transparent_egress ? MOAT_CHECK_OK : MOAT_CHECK_MISSING;
		snprintf(c->detail, sizeof(c->detail), "%s",
			 h->transparent_egress ? "nf_tables NAT and redirect in a sandbox's namespace (--net transparent)"
					       : h->transparent_error);
		if (!h->transparent_egress)
			snprintf(c->fix, sizeof(c->fix),
				 "Linux 5.2 or later with nf_tables, NAT, redirect and conntrack "
				 "(CONFIG_NF_TABLES, CONFIG_NFT_NAT, CONFIG_NFT_REDIR, CONFIG_NF_CONNTRACK)");
	}
	static const struct {
		const char *name;
		size_t off;
		const char *what, *fix;
	} ifaces[] = {
		{"pidfd", offsetof(moat_host, pidfd), "race-free process handles", "Linux 5.3 or later"},
		{"openat2", offsetof(moat_host, openat2), "RESOLVE_BENEATH path walks", "Linux 5.6 or later"},
		{"clone3", offsetof(moat_host, clone3), "clone3 for the sandbox spawn", "Linux 5.3 or later"},
		{"CLONE_INTO_CGROUP", offsetof(moat_host, clone_into_cgroup),
		 "the kernel can start a process inside a cgroup v2 (used when the limits are on v2)",
		 "Linux 5.7 or later"},
	};
	for (size_t i = 0; i < ELEMENTSOF(ifaces); i++) {
		if (!(c = add(ret, max, &n, ifaces[i].name, false)))
			break;
		bool have = *(const bool *)((const char *)h + ifaces[i].off);
		c->state = have ? MOAT_CHECK_OK : MOAT_CHECK_MISSING;
		snprintf(c->detail, sizeof(c->detail), "%s: %s", ifaces[i].what, have ? "yes" : "no");
		if (!have)
			snprintf(c->fix, sizeof(c->fix), "%s", ifaces[i].fix);
	}
	return n;
}

bool moat_host_code_profile_enforced(const moat_check *checks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (checks[i].needed_by_code && checks[i].state != MOAT_CHECK_OK)
			return false;
	return true;
}

static const char *const layer_names[] = {"userns", "netns", "seccomp", "landlock", "landlock-net", "landlock-scope",
					  "cgroup"};

bool moat_layer_name_known(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(layer_names); i++)
		if (moat__streq(name, layer_names[i]))
			return true;
	return false;
}

int moat_host_require(const moat_host *h, char *const *required, moat_error *err)
{
	for (char *const *r = required; r && *r; r++) {
		const char *why = NULL, *fix = "";
		moat_check c = {0};
		if (!moat_layer_name_known(*r))
			return moat_error_set(err, MOAT_EINPUT, "require: unknown layer '%s' (known: userns, netns, seccomp, "
								"landlock, landlock-net, landlock-scope, cgroup)", *r);
		/* Network namespaces come with the user namespace (or root). */
		if ((strcmp(*r, "userns") == 0 || strcmp(*r, "netns") == 0) && !h->userns_works && !h->is_root) {
			check_userns(h, &c);
			why = c.detail;
			fix = c.fix;
		} else if (strcmp(*r, "seccomp") == 0 && !(h->seccomp_filter && h->seccomp_errno)) {
			why = "the kernel has no seccomp filter mode";
			fix = "a kernel with CONFIG_SECCOMP_FILTER=y";
		} else if (strcmp(*r, "landlock") == 0 && h->landlock_abi < 1) {
			why = "Landlock is not available";
			fix = "Linux 5.13+ with landlock in lsm=";
		} else if (strcmp(*r, "landlock-net") == 0 && h->landlock_abi < 4) {
			why = "Landlock TCP rules need ABI 4";
			fix = "Linux 6.7 or later";
		} else if (strcmp(*r, "landlock-scope") == 0 && h->landlock_abi < 6) {
			why = "Landlock scoping needs ABI 6";
			fix = "Linux 6.12 or later";
		} else if (strcmp(*r, "cgroup") == 0 && !(h->cgroup_memory && h->cgroup_pids)) {
			why = "no writable cgroup with the memory and pids controllers";
			fix = h->is_root ? "mount the memory and pids controllers" : "delegate a cgroup v2 subtree or run as root";
		}
		if (why)
			return moat_error_set(err, MOAT_EINPUT, "the policy requires %s, which this host cannot enforce: %s (fix: %s)",
					      *r, why, fix);
	}
	return 0;
}
