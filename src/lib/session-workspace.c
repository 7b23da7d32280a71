/* A session's persistent workspace (session.h): a folder of the runtime
 * directory's, BASE/workspaces/ID, bound read-write at /workspace. It is
 * made before the keeper (whose sandbox binds it) under a random name of
 * its own, ws-RANDOM, which it keeps: the session's policy names that
 * path, and a delegating session's nested runs bind it from there (a
 * rename once the keeper gave the session its id would leave them a path
 * that no longer exists). It outlives stop and rm, and goes with
 * rm --purge; the session's record holds its path. */
#include "session.h"

#include "sandbox-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define WS_LEAF "workspaces"
/* A purge goes no deeper than this (the tree is the sandbox's making). */
#define PURGE_MAX_DEPTH 256

/* As root, the sandbox's init opens a bind's source as the sandbox's
 * unprivileged uid: it must be able to pass through /run/moat and
 * /run/moat/workspaces (made 0700) to its workspace. They become 0711:
 * passable, not listable, writable by root alone (the other folders in
 * /run/moat stay 0700). Takes bfd (workspaces) and gives it back. */
static int open_to_init(int bfd, const char *base, moat_error *err)
{
	int parent = openat(bfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (parent < 0 || fstat(parent, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022) || fchmod(parent, 0711) < 0 ||
	    fchmod(bfd, 0711) < 0) {
		int e = errno;
		if (parent >= 0)
			close(parent);
		close(bfd);
		return moat_error_errno(err, e, "workspace %s: open it to the sandbox's init", base);
	}
	close(parent);
	return bfd;
}

int moat__session_workspace_new(char *ret_path, size_t len, char *ret_name, size_t name_len, moat_error *err)
{
	char base[PATH_MAX];
	_cleanup_close_ int bfd = moat__runtime_base_open(WS_LEAF, base, sizeof(base), err);
	if (bfd < 0)
		return bfd;
	if (geteuid() == 0 && (bfd = open_to_init(TAKE_FD(bfd), base, err)) < 0)
		return bfd;
	char rnd[25];
	if (moat__random_hex(12, rnd) < 0)
		return moat_error_errno(err, errno, "workspace: random name");
	snprintf(ret_name, name_len, "ws-%s", rnd);
	if (mkdirat(bfd, ret_name, 0700) < 0)
		return moat_error_errno(err, errno, "workspace %s/%s: make it", base, ret_name);
	_cleanup_close_ int fd = openat(bfd, ret_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* As root, the sandbox writes as an unprivileged uid of its own: the
	 * folder is that uid's, so that nothing in it is host root's. */
	if (fd < 0 || (geteuid() == 0 && fchown(fd, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_GID) < 0)) {
		int e = errno;
		(void)unlinkat(bfd, ret_name, AT_REMOVEDIR);
		return moat_error_errno(err, e, "workspace %s/%s: make it the sandbox's", base, ret_name);
	}
	if ((size_t)snprintf(ret_path, len, "%s/%s", base, ret_name) >= len) {
		(void)unlinkat(bfd, ret_name, AT_REMOVEDIR);
		return moat_error_set(err, ENAMETOOLONG, "workspace %s: too long", base);
	}
	return 0;
}

/* Removes what folder fd holds, never following a link; a folder the
 * sandbox made unwritable is made writable first. */
static int purge_in(int fd, int depth)
{
	if (depth > PURGE_MAX_DEPTH)
		return -ELOOP;
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int c = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c >= 0) {
				(void)fchmod(c, 0700);
				int q = purge_in(c, depth + 1);
				if (q < 0 && r == 0)
					r = q;
				close(c);
			}
			if (unlinkat(fd, e->d_name, AT_REMOVEDIR) < 0 && r == 0)
				r = -errno;
		} else if (unlinkat(fd, e->d_name, 0) < 0 && r == 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

static int purge_name(int bfd, const char *name)
{
	int fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	(void)fchmod(fd, 0700);
	int r = purge_in(fd, 0);
	close(fd);
	if (unlinkat(bfd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

int moat__session_workspace_purge(const char *name, moat_error *err)
{
	if (strncmp(name, "ws-", 3) != 0 || !moat__keeper_id_valid(name + 3))
		return moat_error_set(err, EINVAL, "workspace %s: not one of ours", name);
	char base[PATH_MAX];
	_cleanup_close_ int bfd = moat__runtime_base_open(WS_LEAF, base, sizeof(base), err);
	if (bfd < 0)
		return bfd;
	int r = purge_name(bfd, name);
	if (r < 0)
		return moat_error_errno(err, -r, "workspace %s/%s: remove it", base, name);
	return 0;
}
