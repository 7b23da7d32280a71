/* Namespaced sysctls a front asked for (an OCI spec's linux.sysctl,
 * "key=value"), written by the sandbox's init in the sandbox's own
 * namespaces: the kernel resolves /proc/sys/net through the writer's
 * network namespace and the ipc and mqueue keys through its ipc
 * namespace, so only the sandbox's copies change. The front admits only
 * keys the kernel scopes so (oci-spec.c); the write itself is held to
 * /proc/sys, no link followed, and needs the namespace's capabilities,
 * which the init has and the command never does. */
#include "sandbox-internal.h"
#include "syscalls.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int moat__sysctl_write(const moat_config *c, moat_error *err)
{
	if (!c->sysctls || !c->sysctls[0])
		return 0;
	_cleanup_close_ int sys = open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sys < 0)
		return moat_error_set(err, errno, "linux.sysctl: open /proc/sys");
	for (char **kv = c->sysctls; *kv; kv++) {
		const char *eq = strchr(*kv, '=');
		char path[MOAT_MAX_PATH];
		size_t n = eq ? (size_t)(eq - *kv) : 0;
		if (n == 0 || n >= sizeof(path))
			return moat_error_set(err, EINVAL, "linux.sysctl: bad entry");
		/* Dots become slashes; the key has no slash or ".." of its
		 * own (oci-spec.c), and the open stays beneath /proc/sys. */
		for (size_t i = 0; i < n; i++)
			path[i] = (*kv)[i] == '.' ? '/' : (*kv)[i];
		path[n] = '\0';
		_cleanup_close_ int fd = moat__openat2(sys, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0,
						       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (fd < 0)
			return moat_error_set(err, errno, "linux.sysctl.%.*s", (int)n, *kv);
		const char *v = eq + 1;
		/* ping_group_range names groups, which the kernel checks are
		 * mapped in the writer's user namespace; the sandbox maps one
		 * group, so the range becomes its intersection with that one
		 * (podman asks "0 0" for the container's primary group). */
		char range[32];
		unsigned lo, hi;
		char extra;
		if (strcmp(path, "net/ipv4/ping_group_range") == 0 && sscanf(v, "%u %u %c", &lo, &hi, &extra) == 2) {
			unsigned g = (unsigned)c->sandbox_gid;
			/* None: a new network namespace starts with no group
			 * ("1 0"), and no other range could be written. */
			if (lo > g || g > hi)
				continue;
			snprintf(range, sizeof(range), "%u %u", g, g);
			v = range;
		}
		size_t len = strlen(v);
		if (write(fd, v, len) != (ssize_t)len)
			return moat_error_set(err, errno ? errno : EIO, "linux.sysctl.%.*s: write %.64s", (int)n, *kv, v);
	}
	return 0;
}
