/* Namespaces handed to moat-oci by path (oci-netns.h). */
#include "oci-netns.h"
#include "syscalls.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

const char *moat__oci_ns_type_name(int type)
{
	switch (type) {
	case CLONE_NEWNET:
		return "net";
	case CLONE_NEWNS:
		return "mnt";
	case CLONE_NEWUSER:
		return "user";
	case CLONE_NEWPID:
		return "pid";
	case CLONE_NEWIPC:
		return "ipc";
	case CLONE_NEWUTS:
		return "uts";
	case CLONE_NEWCGROUP:
		return "cgroup";
	case CLONE_NEWTIME:
		return "time";
	default:
		return "unknown";
	}
}

bool moat__oci_proc_ns_link(const char *path)
{
	static const char pre[] = "/proc/";
	if (strncmp(path, pre, sizeof(pre) - 1) != 0)
		return false;
	const char *p = path + sizeof(pre) - 1;
	const char *digits = p;
	if (strncmp(p, "self/", 5) == 0)
		p += 4;
	else
		while (*p >= '0' && *p <= '9')
			p++;
	if (p == digits || p - digits > 10 || strncmp(p, "/ns/", 4) != 0)
		return false;
	p += 4;
	if (!*p)
		return false;
	for (; *p; p++)
		if (*p < 'a' || *p > 'z')
			return false;
	return true;
}

int moat__oci_ns_open(const char *path, int type, const char *field, moat_error *err)
{
	/* The kernel's /proc/N/ns links are followed (that is what they are
	 * for); any other path is taken as it is: a link planted or swapped
	 * in for a pod's namespace file is not a namespace file. */
	int flags = O_PATH | O_CLOEXEC | (moat__oci_proc_ns_link(path) ? 0 : O_NOFOLLOW);
	_cleanup_close_ int pfd = open(path, flags);
	if (pfd < 0)
		return moat_error_set(err, errno, "%s: %.256s", field, path);
	struct statfs sfs;
	struct stat st;
	if (fstatfs(pfd, &sfs) < 0 || fstat(pfd, &st) < 0)
		return moat_error_set(err, errno, "%s: %.256s", field, path);
	if (sfs.f_type != NSFS_MAGIC)
		return moat_error_set(err, MOAT_EINPUT, "%s: %.256s is not a namespace file%s", field, path,
				      S_ISLNK(st.st_mode) ? " (a symbolic link, which is not followed)" : "");
	/* Reopened through the descriptor, not the path: what is read is
	 * the file just checked. O_PATH cannot be asked for its type. */
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "%s: %.256s", field, path);
	int got = ioctl(fd, NS_GET_NSTYPE);
	if (got != type) {
		int e = errno;
		close(fd);
		if (got < 0)
			return moat_error_set(err, e, "%s: %.256s: namespace type", field, path);
		return moat_error_set(err, MOAT_EINPUT, "%s: %.256s is a namespace of type %s, not %s", field, path,
				      moat__oci_ns_type_name(got), moat__oci_ns_type_name(type));
	}
	return fd;
}

static bool same_ns(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int moat__oci_netns_not_host(int fd, const char *field, const char *path, moat_error *err)
{
	/* /proc/1 may be out of reach of a rootless runtime (EACCES): then
	 * its own network, the one it was started in, is what it compares
	 * with; a path it cannot open is refused by the open anyway. */
	if (same_ns(fd, "/proc/1/ns/net"))
		return moat_error_set(err, MOAT_EINPUT,
				      "%s: %.256s is the host's network namespace (init's); a container never joins "
				      "it (hostNetwork is refused)",
				      field, path);
	if (same_ns(fd, "/proc/self/ns/net"))
		return moat_error_set(err, MOAT_EINPUT,
				      "%s: %.256s is the runtime's own network namespace (its caller's, the host's); a "
				      "container never joins it (hostNetwork is refused)",
				      field, path);
	return 0;
}

bool moat__oci_ns_owned_by(int fd, const struct stat *userns)
{
	_cleanup_close_ int owner = ioctl(fd, NS_GET_USERNS);
	struct stat st;
	return owner >= 0 && fstat(owner, &st) == 0 && st.st_dev == userns->st_dev && st.st_ino == userns->st_ino;
}

static bool have_cap_sys_admin(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return (d[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32))) != 0;
}

int moat__oci_podnet_allowed(int fd, moat_net_mode mode, const char *field, const char *path, moat_error *err)
{
	/* network.mode: pod joins it; a mode with a gateway (proxy,
	 * transparent) keeps the sandbox's own namespace and puts only the
	 * gateway's upstream side there. none has no use for it. */
	if (mode != MOAT_NET_POD && !moat_net_uses_gateway(mode))
		return moat_error_set(err, MOAT_EINPUT,
				      "%s: %.256s is not the network namespace of a moat-oci container under this --root "
				      "(a Kubernetes pod's, made by its CNI plugin, or another's); a policy with "
				      "network.mode none has no use for it: an egress policy (network.mode proxy or "
				      "transparent) puts moat's gateway in front of the pod's network, network.mode: pod "
				      "joins it without the gateway (opt in: network: {mode: proxy} or {mode: pod} in the "
				      "policy the dev.moat.policy annotation names)",
				      field, path);
	struct stat self;
	if (stat("/proc/self/ns/user", &self) < 0)
		return moat_error_set(err, errno, "%s: /proc/self/ns/user", field);
	/* The runtime enters the namespace before the sandbox's user
	 * namespace is made (sandbox.c, clone_joined): it needs the
	 * privilege to, and the sandbox's user, in a user namespace below
	 * the runtime's, then has none over it. */
	if (!moat__oci_ns_owned_by(fd, &self) || !have_cap_sys_admin())
		return moat_error_set(err, EPERM,
				      "%s: %.256s: joining a pod's network namespace needs CAP_SYS_ADMIN in the user "
				      "namespace that owns it, and this runtime has none there (rootless, moat-oci joins "
				      "only a pod network namespace made in its own user namespace by a runtime that is "
				      "root there, as rootless containerd's is)",
				      field, path);
	return 0;
}

/* In the child: the write of one key, its errno or 0. */
static int podnet_sysctl_one(const char *kv)
{
	const char *eq = strchr(kv, '=');
	char path[256];
	size_t n = eq ? (size_t)(eq - kv) : 0;
	if (n == 0 || n >= sizeof(path))
		return EINVAL;
	/* The key has no slash or ".." of its own (oci-spec.c); the open
	 * stays beneath /proc/sys, which resolves net through this
	 * process's network namespace: the pod's. */
	for (size_t i = 0; i < n; i++)
		path[i] = kv[i] == '.' ? '/' : kv[i];
	path[n] = '\0';
	int sys = open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sys < 0)
		return errno;
	int fd = moat__openat2(sys, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0,
			       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	int e = fd < 0 ? errno : 0;
	close(sys);
	if (fd < 0)
		return e;
	size_t len = strlen(eq + 1);
	ssize_t w = write(fd, eq + 1, len);
	e = w == (ssize_t)len ? 0 : w < 0 ? errno : EIO;
	close(fd);
	return e;
}

int moat__oci_podnet_sysctls(int fd, char **sysctls, moat_error *err)
{
	if (!sysctls)
		return 0;
	for (size_t i = 0; sysctls[i]; i++) {
		const char *kv = sysctls[i];
		if (strncmp(kv, "net.", 4) != 0)
			continue;
		/* A child enters the pod's namespace; the runtime stays in
		 * its own. Its exit status is the write's errno. */
		pid_t pid = fork();
		if (pid < 0)
			return moat_error_set(err, errno, "linux.sysctl: fork");
		if (pid == 0)
			_exit(setns(fd, CLONE_NEWNET) < 0 ? (errno & 0xff) : podnet_sysctl_one(kv) & 0xff);
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		int e = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
		const char *eq = strchr(kv, '=');
		int n = eq ? (int)(eq - kv) : (int)strlen(kv);
		if (e)
			return moat_error_set(err, e, "linux.sysctl.%.*s: write %.64s in the pod's network namespace", n,
					      kv, eq ? eq + 1 : "");
	}
	/* All written: the init gets the others only. */
	size_t out = 0;
	for (size_t i = 0; sysctls[i]; i++) {
		if (strncmp(sysctls[i], "net.", 4) == 0)
			free(sysctls[i]);
		else
			sysctls[out++] = sysctls[i];
	}
	sysctls[out] = NULL;
	return 0;
}
