/* The keepers' runtime directories (keeper.h): where each keeper's control
 * socket lives, made without following links, and swept when a keeper was
 * killed before it could remove its own. */
#include "keeper.h"

#include "hostpath.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

/* A lock file still empty is a keeper between making it and writing its
 * pid into it: left alone for this long. */
#define SWEEP_YOUNG_S 60

int moat__keeper_base_path(uid_t euid, const char *xdg, char *ret, size_t len)
{
	int n;
	if (euid == 0)
		n = snprintf(ret, len, "/run/moat/sandboxes");
	else if (xdg && xdg[0] == '/')
		n = snprintf(ret, len, "%s/moat/sandboxes", xdg);
	else
		n = snprintf(ret, len, "/tmp/moat-%u/sandboxes", (unsigned)euid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Opens name in dirfd as a folder, making it first when missing, and
 * checks that it is ours and that no one else may write it (a folder
 * someone else made under /tmp before us is refused, not used). */
static int open_own_dir(int dirfd, const char *name, const char *shown, moat_error *err)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return moat_error_errno(err, errno, "runtime directory %s: make it", shown);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return moat_error_errno(err, errno, "runtime directory %s: open it (a link is not followed)", shown);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return moat_error_errno(err, e, "runtime directory %s", shown);
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return moat_error_set(err, EPERM,
				      "runtime directory %s: owned by uid %u with mode %03o; it must be ours and "
				      "writable by us alone",
				      shown, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	}
	return fd;
}

int moat__keeper_base_open(char *ret_path, size_t len, moat_error *err)
{
	return moat__runtime_base_open("sandboxes", ret_path, len, err);
}

int moat__runtime_base_open(const char *leaf, char *ret_path, size_t len, moat_error *err)
{
	char path[PATH_MAX];
	uid_t euid = geteuid();
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (moat__keeper_base_path(euid, xdg, path, sizeof(path)) < 0)
		return moat_error_set(err, ENAMETOOLONG, "runtime directory: XDG_RUNTIME_DIR is too long");
	/* BASE/sandboxes -> BASE/LEAF */
	char *slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) + 1 + strlen(leaf) >= sizeof(path))
		return moat_error_set(err, ENAMETOOLONG, "runtime directory: too long");
	strcpy(slash + 1, leaf);
	/* The system's own part (/run, $XDG_RUNTIME_DIR or /tmp) is resolved
	 * as every host path is (hostpath.h); the rest is ours and made here. */
	char top[PATH_MAX];
	const char *rest;
	if (euid == 0) {
		snprintf(top, sizeof(top), "/run");
		rest = "moat/sandboxes";
	} else if (xdg && xdg[0] == '/') {
		snprintf(top, sizeof(top), "%s", xdg);
		rest = "moat/sandboxes";
	} else {
		snprintf(top, sizeof(top), "/tmp");
		rest = NULL;
	}
	int fd = moat__hostpath_open("runtime directory", top, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	char own[32];
	const char *parts[2];
	if (rest) {
		parts[0] = "moat";
		parts[1] = leaf;
	} else {
		snprintf(own, sizeof(own), "moat-%u", (unsigned)euid);
		parts[0] = own;
		parts[1] = leaf;
	}
	char shown[PATH_MAX];
	snprintf(shown, sizeof(shown), "%s", top);
	for (size_t i = 0; i < 2; i++) {
		size_t l = strlen(shown);
		snprintf(shown + l, sizeof(shown) - l, "/%s", parts[i]);
		int next = open_own_dir(fd, parts[i], shown, err);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	if (ret_path)
		snprintf(ret_path, len, "%s", path);
	return fd;
}

int moat_keeper_socket_path(const char *id, char *ret, size_t len, moat_error *err)
{
	if (!moat__keeper_id_valid(id))
		return moat_error_set(err, EINVAL, "sandbox id: not one moat makes (%d lower-case hex digits)",
				      MOAT_KEEPER_ID_LEN - 1);
	char base[PATH_MAX];
	if (moat__keeper_base_path(geteuid(), getenv("XDG_RUNTIME_DIR"), base, sizeof(base)) < 0)
		return moat_error_set(err, ENAMETOOLONG, "runtime directory: XDG_RUNTIME_DIR is too long");
	int n = snprintf(ret, len, "%s/%s/ctl", base, id);
	if (n < 0 || (size_t)n >= len)
		return moat_error_set(err, ENAMETOOLONG, "sandbox %s: socket path too long", id);
	return 0;
}

int moat__keeper_rundir_make(moat_keeper_rundir *d, moat_error *err)
{
	char chosen[MOAT_KEEPER_ID_LEN];
	snprintf(chosen, sizeof(chosen), "%s", moat__keeper_id_valid(d->id) ? d->id : "");
	memset(d, 0, sizeof(*d));
	d->dir_fd = d->lock_fd = -1;
	char base[PATH_MAX];
	_cleanup_close_ int base_fd = moat__keeper_base_open(base, sizeof(base), err);
	if (base_fd < 0)
		return base_fd;
	(void)moat__keeper_sweep(base_fd);
	if (chosen[0])
		memcpy(d->id, chosen, sizeof(d->id));
	else if (moat__random_hex(MOAT_KEEPER_ID_BYTES, d->id) < 0)
		return moat_error_errno(err, errno, "sandbox id: read random bytes");
	if (mkdirat(base_fd, d->id, 0700) < 0)
		return moat_error_errno(err, errno, "runtime directory %s/%s: make it", base, d->id);
	int n = snprintf(d->path, sizeof(d->path), "%s/%s", base, d->id);
	int m = snprintf(d->socket, sizeof(d->socket), "%s/%s/ctl", base, d->id);
	if (n < 0 || m < 0 || (size_t)m >= sizeof(d->socket) || (size_t)m >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		(void)unlinkat(base_fd, d->id, AT_REMOVEDIR);
		return moat_error_set(err, ENAMETOOLONG, "runtime directory %s: too long for a socket's path", base);
	}
	d->dir_fd = openat(base_fd, d->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dir_fd < 0) {
		int e = errno;
		(void)unlinkat(base_fd, d->id, AT_REMOVEDIR);
		return moat_error_errno(err, e, "runtime directory %s: open it", d->path);
	}
	/* Taken before the pid is written: a sweep that finds the lock free
	 * and the pid written knows the keeper is gone. */
	d->lock_fd = openat(d->dir_fd, "lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		moat__keeper_rundir_remove(d);
		return moat_error_errno(err, e, "runtime directory %s: take its lock", d->path);
	}
	char pid[32];
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (moat__write_all(d->lock_fd, pid, strlen(pid)) < 0) {
		int e = errno;
		moat__keeper_rundir_remove(d);
		return moat_error_errno(err, e, "runtime directory %s: write the keeper's pid", d->path);
	}
	return 0;
}

void moat__keeper_rundir_remove(moat_keeper_rundir *d)
{
	if (d->dir_fd >= 0) {
		(void)unlinkat(d->dir_fd, "ctl", 0);
		(void)unlinkat(d->dir_fd, "lock", 0);
		/* The folder by its path: it is ours, made 0700 in a folder of
		 * ours that no one else may write. */
		(void)rmdir(d->path);
		close(d->dir_fd);
		d->dir_fd = -1;
	}
	if (d->lock_fd >= 0) {
		close(d->lock_fd);
		d->lock_fd = -1;
	}
}

/* Whether the keeper of the folder dfd is gone: its lock is free and it
 * had written its pid, or the lock file is old and empty. */
static bool keeper_gone(int dfd)
{
	_cleanup_close_ int lock = openat(dfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (lock < 0)
		return false;
	struct stat st;
	if (fstat(lock, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return false;
	if (flock(lock, LOCK_EX | LOCK_NB) < 0)
		return false;
	if (st.st_size > 0)
		return true;
	return time(NULL) > st.st_mtime + SWEEP_YOUNG_S;
}

unsigned moat__keeper_sweep(int base_fd)
{
	int dup = fcntl(base_fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return 0;
	DIR *dir = fdopendir(dup);
	if (!dir) {
		close(dup);
		return 0;
	}
	/* The duplicate shares base_fd's offset, which an earlier walk may
	 * have left at the end. */
	rewinddir(dir);
	unsigned removed = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!moat__keeper_id_valid(de->d_name))
			continue;
		_cleanup_close_ int dfd = openat(base_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid() || !keeper_gone(dfd))
			continue;
		/* Only what a keeper (or an MCP relay: its "mcp" mark) makes:
		 * anything else keeps the folder. */
		(void)unlinkat(dfd, "mcp", 0);
		(void)unlinkat(dfd, "ctl", 0);
		(void)unlinkat(dfd, "lock", 0);
		if (unlinkat(base_fd, de->d_name, AT_REMOVEDIR) == 0)
			removed++;
	}
	closedir(dir);
	return removed;
}
