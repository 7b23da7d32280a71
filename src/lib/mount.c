/* The sandbox's filesystem: a fresh tmpfs root, the host's /usr (and the
 * /bin, /lib* links or binds a Debian or Ubuntu host needs) bound read-only,
 * a generated minimal /etc, a fresh and masked /proc, a minimal /dev, a
 * size-limited /tmp, the user's binds and /out; then pivot_root into it and
 * make the root read-only.
 *
 * Every mount is made with the fd-based mount API (open_tree, fsopen,
 * fsmount, mount_setattr, move_mount) and every target is resolved relative
 * to the new root with RESOLVE_NO_SYMLINKS, one component at a time: a
 * symlink planted in a persistent bind by an earlier run cannot redirect a
 * mount onto the host (runc CVE-2021-30465). */
#include "baseroot.h"
#include "hostetc.h"
#include "sandbox-internal.h"
#include "syscalls.h"
#include "hostpath.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#define ROOTFS_STAGING "/tmp"

static int attr_set(int fd, uint64_t set, bool recursive)
{
	struct mount_attr attr = {.attr_set = set};
	return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof(attr));
}

/* Opens (creating as needed) the directory or file at path below rootfd,
 * refusing symlinks and anything that would leave the root. */
static int open_target(int rootfd, const char *path, bool is_dir, moat_error *err)
{
	_cleanup_close_ int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return moat_error_set(err, errno, "dup root");
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return moat_error_set(err, ENOMEM, "mount target");
	char *save = NULL;
	char *comp = strtok_r(copy, "/", &save);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = next == NULL;
		const uint64_t resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH | RESOLVE_NO_XDEV;
		int fd = moat__openat2(cur, comp, O_PATH | O_CLOEXEC | O_NOFOLLOW, 0, resolve & ~(uint64_t)RESOLVE_NO_XDEV);
		if (fd < 0 && errno == ENOENT) {
			if (last && !is_dir) {
				int f = openat(cur, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (f < 0)
					return moat_error_set(err, errno, "create mount point %s", path);
				close(f);
			} else if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
				return moat_error_set(err, errno, "create mount point %s", path);
			}
			fd = moat__openat2(cur, comp, O_PATH | O_CLOEXEC | O_NOFOLLOW, 0,
					   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH);
		}
		if (fd < 0) {
			if (errno == ELOOP)
				return moat_error_set(err, MOAT_EINPUT,
						      "mount point %s goes through a symbolic link; refusing to follow it",
						      path);
			return moat_error_set(err, errno, "open mount point %s", path);
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			close(fd);
			return moat_error_set(err, errno, "stat mount point %s", path);
		}
		if (S_ISLNK(st.st_mode)) {
			close(fd);
			return moat_error_set(err, MOAT_EINPUT,
					      "mount point %s goes through a symbolic link; refusing to follow it", path);
		}
		if (!last && !S_ISDIR(st.st_mode)) {
			close(fd);
			return moat_error_set(err, ENOTDIR, "mount point %s", path);
		}
		if (last && is_dir != S_ISDIR(st.st_mode)) {
			close(fd);
			return moat_error_set(err, is_dir ? ENOTDIR : EISDIR, "mount point %s", path);
		}
		close(cur);
		cur = fd;
		comp = next;
	}
	return TAKE_FD(cur);
}

/* Attaches the detached mount mfd at path below rootfd. */
static int attach_at(int rootfd, int mfd, const char *path, bool is_dir, moat_error *err)
{
	_cleanup_close_ int target = open_target(rootfd, path, is_dir, err);
	if (target < 0)
		return target;
	if (move_mount(mfd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "mount %s", path);
	return 0;
}

/* Host paths are opened (O_PATH) before the new root is staged over
 * ROOTFS_STAGING, so that a source below it (a folder in the host's /tmp)
 * is still the host's. */
typedef struct host_src {
	const char *path;
	int fd;
} host_src;

static host_src host_srcs[MOAT_MAX_HOST_SRCS];
static size_t n_host_srcs;

/* Host paths bound besides the base root (baseroot.h). */
static const char *const system_paths[] = {"/etc/ld.so.cache", "/etc/ssl/certs", "/etc/alternatives",
					   "/etc/ca-certificates", "/etc/mime.types", "/dev/null", "/dev/zero",
					   "/dev/full", "/dev/random", "/dev/urandom"};

static int resolve_one(const char *what, const char *path, moat_host_srcs *s, moat_error *err)
{
	if (s->n >= MOAT_MAX_HOST_SRCS)
		return moat_error_set(err, E2BIG, "more than %d host paths to bind", MOAT_MAX_HOST_SRCS);
	moat_host_src *h = &s->v[s->n++];
	*h = (moat_host_src){.path = path};
	_cleanup_close_ int fd = moat__hostpath_open(what, path, O_PATH, 0, err);
	if (fd < 0 && err->code == ENOENT) {
		moat_error_clear(err);
		return 0;
	}
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "%s %s", what ? what : "", path);
	char proc[64], real[MOAT_MAX_PATH];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, real, sizeof(real));
	if (n <= 0 || (size_t)n >= sizeof(real) || real[0] != '/')
		return moat_error_set(err, n < 0 ? errno : ENAMETOOLONG, "%s%s%s: find its real path",
				      what ? what : "", what ? " " : "", path);
	real[n] = '\0';
	h->real = strdup(real);
	if (!h->real)
		return moat_error_set(err, ENOMEM, "%s", path);
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	return 0;
}

int moat__rootfs_resolve_sources(const moat_config *c, moat_host_srcs *ret, moat_error *err)
{
	ret->n = 0;
	int r;
	/* A given root brings its own system folders. */
	for (size_t i = 0; !c->rootfs && i < ELEMENTSOF(moat__base_system_dirs); i++)
		if ((r = resolve_one(NULL, moat__base_system_dirs[i], ret, err)) < 0)
			return r;
	for (size_t i = 0; i < ELEMENTSOF(system_paths); i++)
		if ((r = resolve_one(NULL, system_paths[i], ret, err)) < 0)
			return r;
	if (c->rootfs && (r = resolve_one("root.path:", c->rootfs, ret, err)) < 0)
		return r;
	if (c->out_dir && !moat__out_capped(c) && (r = resolve_one("filesystem.out:", c->out_dir, ret, err)) < 0)
		return r;
	for (size_t i = 0; i < c->n_binds; i++) {
		const char *what = c->binds[i].flags & MOAT_BIND_RW ? "filesystem.read_write:" : "filesystem.read_only:";
		if ((r = resolve_one(what, c->binds[i].src, ret, err)) < 0)
			return r;
	}
	return 0;
}

void moat__rootfs_sources_free(moat_host_srcs *s)
{
	for (size_t i = 0; s && i < s->n; i++) {
		free(s->v[i].real);
		s->v[i].real = NULL;
	}
	if (s)
		s->n = 0;
}

/* In the init, after a host source could not be opened for want of
 * permission: the init runs as the sandbox's user (as root, host uid
 * MOAT_ROOT_HOST_UID), which has no capability over the host's files, so a
 * folder on the way that it may not search stops it. Names the first such
 * folder of real, with its mode and whether the sandbox's user owns it (an
 * owner this user namespace does not map shows as the overflow id, so
 * "another user" is all that can be said of it here). Allocates nothing:
 * the init is a copy of a process that may have threads. */
static int refuse_unreachable(const moat_host_src *h, int e, moat_error *err)
{
	char map[64] = "";
	unsigned inside = 0, outside = 0, count = 0;
	_cleanup_close_ int mfd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
	ssize_t mn = mfd >= 0 ? read(mfd, map, sizeof(map) - 1) : -1;
	map[mn > 0 ? mn : 0] = '\0';
	char who[64] = "the sandbox's user";
	if (sscanf(map, "%u %u %u", &inside, &outside, &count) == 3)
		snprintf(who, sizeof(who), "the sandbox's user (host uid %u)", outside);

	_cleanup_close_ int cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *p = h->real;
	size_t at = 0; /* real[0..at) names cur */
	while (cur >= 0 && p[at] == '/') {
		size_t start = at + 1, len = strcspn(p + start, "/");
		char name[NAME_MAX + 1];
		if (len == 0 || len > NAME_MAX)
			break;
		memcpy(name, p + start, len);
		name[len] = '\0';
		int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && (errno == EACCES || errno == EPERM)) {
			int denied = errno;
			struct stat st;
			if (fstat(cur, &st) < 0)
				break;
			return moat_error_set(err, denied, "%s: %s may not search %.*s (mode %04o, owned by %s)", h->path,
					      who, at ? (int)at : 1, at ? p : "/", (unsigned)(st.st_mode & 07777),
					      st.st_uid == geteuid() ? "that user" : "another user");
		}
		if (fd < 0)
			break;
		close(cur);
		cur = fd;
		at = start + len;
	}
	return moat_error_set(err, e, "%s (as %s): %s may not open it", h->path, h->real, who);
}

/* In the init: opens what the supervisor resolved, without following any
 * link at all, and only if it is still the inode the supervisor saw. */
static int preopen_host(const moat_host_src *h, moat_error *err)
{
	int fd = -ENOENT;
	if (h->real) {
		fd = moat__openat2(AT_FDCWD, h->real, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0,
				   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (fd < 0 && (errno == EACCES || errno == EPERM))
			return refuse_unreachable(h, errno, err);
		if (fd < 0)
			return moat_error_set(err, errno, "%s (as %s): changed while the sandbox was set up", h->path,
					      h->real);
		struct stat st;
		if (fstat(fd, &st) < 0 || st.st_dev != h->dev || st.st_ino != h->ino) {
			close(fd);
			return moat_error_set(err, MOAT_EINPUT, "%s: changed while the sandbox was set up", h->path);
		}
	}
	host_srcs[n_host_srcs++] = (host_src){.path = h->path, .fd = fd};
	return 0;
}

/* Opens a detached recursive clone of the host path. */
static int clone_host(const char *src, struct stat *st)
{
	for (size_t i = 0; i < n_host_srcs; i++) {
		if (strcmp(host_srcs[i].path, src) != 0)
			continue;
		if (host_srcs[i].fd < 0) {
			errno = -host_srcs[i].fd;
			return -1;
		}
		if (fstat(host_srcs[i].fd, st) < 0)
			return -1;
		return open_tree(host_srcs[i].fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	}
	/* Only what the supervisor resolved is ever bound. */
	errno = EINVAL;
	return -1;
}

/* Binds a host path at path inside, with the given mount attributes. */
static int bind_host(int rootfd, const char *src, const char *dst, uint64_t attrs, bool optional, moat_error *err)
{
	struct stat st;
	_cleanup_close_ int tree = clone_host(src, &st);
	if (tree < 0) {
		if (optional && errno == ENOENT)
			return 0;
		return moat_error_set(err, errno, "bind %s", src);
	}
	if (attr_set(tree, attrs, true) < 0)
		return moat_error_set(err, errno, "bind %s: set mount flags", src);
	int r = attach_at(rootfd, tree, dst, S_ISDIR(st.st_mode), err);
	if (r < 0)
		return moat_error_wrap(err, "bind %s to %s", src, dst);
	return 0;
}

/* Binds a host path the supervisor did not resolve ahead (an entry of the
 * host's /etc, the run's own cgroup folders), opened here the same careful
 * way (hostpath.c): no link that root does not own is followed, and only
 * the descriptor is bound. optional: a path that is not there (or not
 * readable) is left out. */
static int bind_host_open(int rootfd, const char *what, const char *src, const char *dst, uint64_t attrs,
			  bool optional, moat_error *err)
{
	int fd = moat__hostpath_open(what, src, O_PATH, 0, err);
	if (optional && (fd == -ENOENT || fd == -ENOTDIR || fd == -EACCES)) {
		moat_error_clear(err);
		return 0;
	}
	if (fd < 0)
		return fd;
	_cleanup_close_ int held = fd;
	struct stat st;
	if (fstat(held, &st) < 0)
		return moat_error_set(err, errno, "stat %s", src);
	_cleanup_close_ int tree =
		open_tree(held, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0)
		return moat_error_set(err, errno, "bind %s", src);
	if (attr_set(tree, attrs, true) < 0)
		return moat_error_set(err, errno, "bind %s: set mount flags", src);
	int r = attach_at(rootfd, tree, dst, S_ISDIR(st.st_mode), err);
	return r < 0 ? moat_error_wrap(err, "bind %s to %s", src, dst) : 0;
}

/* source: the name mountinfo shows for it (NULL or "": none). */
static int new_fs_src(const char *type, const char *source, const char *const *opts, uint64_t attrs,
		      moat_error *err)
{
	_cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return moat_error_set(err, errno, "new %s", type);
	if (source && source[0] && fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) < 0)
		return moat_error_set(err, errno, "%s source %s", type, source);
	for (; opts && *opts; opts += 2)
		if (fsconfig(fs, FSCONFIG_SET_STRING, opts[0], opts[1], 0) < 0)
			return moat_error_set(err, errno, "%s option %s=%s", type, opts[0], opts[1]);
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return moat_error_set(err, errno, "create %s", type);
	int m = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attrs);
	if (m < 0)
		return moat_error_set(err, errno, "mount %s", type);
	return m;
}

static int new_fs(const char *type, const char *const *opts, uint64_t attrs, moat_error *err)
{
	return new_fs_src(type, NULL, opts, attrs, err);
}

static int mount_tmpfs(int rootfd, const char *dst, const char *size, const char *inodes, const char *mode,
		       uint64_t attrs, moat_error *err)
{
	const char *opts[9] = {"mode", mode};
	size_t n = 2;
	if (size) {
		opts[n++] = "size";
		opts[n++] = size;
	}
	if (inodes) {
		opts[n++] = "nr_inodes";
		opts[n++] = inodes;
	}
	opts[n] = NULL;
	_cleanup_close_ int m = new_fs("tmpfs", opts, attrs, err);
	if (m < 0)
		return moat_error_wrap(err, "%s", dst);
	return attach_at(rootfd, m, dst, true, err);
}

/* /out as a tmpfs of its own, capped at limits.disk bytes and
 * limits.inodes entries (the kernel answers ENOSPC past either), owned by
 * the sandbox user. The supervisor gets a descriptor on it before it is
 * attached: that keeps the file system alive after the sandbox's mount
 * namespace is gone, and the copy-out to the host's --out folder reads it
 * from there once nothing of the run is left (outdir.c). Limits of 0 make
 * it read-only: tmpfs takes size=0 and nr_inodes=0 as "no limit". */
static int mount_out_tmpfs(int rootfd, const moat_init_args *a, moat_error *err)
{
	const moat_limits *l = &a->config->limits;
	char size[32], inodes[32], uid[16], gid[16];
	snprintf(uid, sizeof(uid), "%u", (unsigned)a->config->sandbox_uid);
	snprintf(gid, sizeof(gid), "%u", (unsigned)a->config->sandbox_gid);
	const char *opts[11] = {"mode", "0755", "uid", uid, "gid", gid};
	size_t n = 6;
	if (l->disk_bytes != MOAT_UNLIMITED && l->disk_bytes > 0) {
		snprintf(size, sizeof(size), "%llu", (unsigned long long)l->disk_bytes);
		opts[n++] = "size";
		opts[n++] = size;
	}
	if (l->disk_inodes != MOAT_UNLIMITED && l->disk_inodes > 0) {
		/* The root folder is one inode of the tmpfs: N entries fit. */
		snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)l->disk_inodes + 1);
		opts[n++] = "nr_inodes";
		opts[n++] = inodes;
	}
	opts[n] = NULL;
	uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (l->disk_bytes == 0 || l->disk_inodes == 0)
		attrs |= MOUNT_ATTR_RDONLY;
	_cleanup_close_ int m = new_fs("tmpfs", opts, attrs, err);
	if (m < 0)
		return moat_error_wrap(err, "/out");
	int r = moat__ctl_send_fd(a->ctl_fd, MOAT_CTL_FD_OUT_TMPFS, m);
	if (r < 0)
		return moat_error_set(err, -r, "pass /out to the supervisor");
	return attach_at(rootfd, m, "out", true, err);
}

/* /bin, /sbin and /lib*: symlinks on merged-/usr hosts, directories on
 * older ones. Mirror whichever the host has. */
static int link_or_bind_toplevel(int rootfd, const char *name, moat_error *err)
{
	char host[64];
	snprintf(host, sizeof(host), "/%s", name);
	struct stat st;
	if (lstat(host, &st) < 0)
		return errno == ENOENT ? 0 : moat_error_set(err, errno, "stat %s", host);
	if (S_ISLNK(st.st_mode)) {
		char target[256];
		ssize_t n = readlink(host, target, sizeof(target) - 1);
		if (n < 0)
			return moat_error_set(err, errno, "readlink %s", host);
		target[n] = '\0';
		if (symlinkat(target, rootfd, name) < 0)
			return moat_error_set(err, errno, "symlink %s", host);
		return 0;
	}
	if (S_ISDIR(st.st_mode))
		return bind_host(rootfd, host, host, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false, err);
	return 0;
}

/* Copies a small regular file of the host's /etc into the generated one
 * (read-only with the rest of the root). Returns 1 when done (or when there
 * is nothing the sandbox could read), 0 when the entry is not a small
 * regular file (the caller carries it otherwise). */
static int copy_host_etc_file(int rootfd, const char *path, moat_error *err)
{
	_cleanup_close_ int src = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	/* Missing, or unreadable to the sandbox's user: absent to it. */
	if (src < 0 && (errno == ENOENT || errno == EACCES || errno == ENOTDIR))
		return 1;
	if (src < 0)
		return 0; /* ELOOP: a symlink, carried as one */
	struct stat st;
	if (fstat(src, &st) < 0)
		return moat_error_set(err, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode) || st.st_size > MOAT_HOST_ETC_COPY_MAX)
		return 0;
	/* Its folder (/etc/ssl) may not exist yet. */
	const char *slash = strrchr(path + 5, '/');
	if (slash) {
		char dir[64];
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path - 1), path + 1);
		if (mkdirat(rootfd, dir, 0755) < 0 && errno != EEXIST)
			return moat_error_set(err, errno, "mkdir /%s", dir);
	}
	_cleanup_close_ int dst = openat(rootfd, path + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (dst < 0)
		return moat_error_set(err, errno, "create %s", path);
	for (off_t left = st.st_size; left > 0;) {
		ssize_t n = sendfile(dst, src, NULL, (size_t)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "copy %s", path);
		if (n == 0)
			break; /* it shrank meanwhile: what was there is copied */
		left -= n;
	}
	return 1;
}

/* Carries one entry of the host's /etc (hostetc.c), read-only: a small
 * file as a copy, a symlink as the same link (it resolves inside the
 * sandbox, e.g. os-release to /usr/lib/os-release), anything else as a
 * bind. */
static int carry_host_etc_entry(int rootfd, const char *path, bool copy, moat_error *err)
{
	if (moat__host_etc_secret(path))
		return 0;
	if (copy) {
		int r = copy_host_etc_file(rootfd, path, err);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : moat_error_set(err, errno, "stat %s", path);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return moat_error_set(err, errno, "readlink %s", path);
		target[n] = '\0';
		/* Only links directly in /etc: a deeper one would need its
		 * parents made first, and none of the list is one. */
		if (strchr(path + 5, '/'))
			return 0;
		if (symlinkat(target, rootfd, path + 1) < 0)
			return moat_error_set(err, errno, "symlink %s", path);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	return bind_host_open(rootfd, "host /etc entry", path, path + 1, ro, true, err);
}

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* What programs need from the host's /etc, never its secrets: the reviewed
 * list and families of hostetc.c. */
static int carry_host_etc(int rootfd, moat_error *err)
{
	for (size_t i = 0; i < moat__host_etc_n_paths; i++) {
		int r = carry_host_etc_entry(rootfd, moat__host_etc_paths[i], false, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < moat__host_etc_n_copied; i++) {
		int r = carry_host_etc_entry(rootfd, moat__host_etc_copied[i], true, err);
		if (r < 0)
			return r;
	}
	_cleanup_(closedirp) DIR *d = opendir("/etc");
	if (!d)
		return 0;
	struct dirent *e;
	size_t n = 0;
	while ((e = readdir(d)) && n < 32) {
		if (!moat__host_etc_family(e->d_name))
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/etc/%s", e->d_name);
		int r = carry_host_etc_entry(rootfd, path, false, err);
		if (r < 0)
			return r;
		n++;
	}
	return 0;
}

static int setup_etc(int rootfd, const moat_init_args *a, moat_error *err)
{
	if (mkdirat(rootfd, "etc", 0755) < 0)
		return moat_error_set(err, errno, "mkdir /etc");
	_cleanup_close_ int etc = openat(rootfd, "etc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etc < 0)
		return moat_error_set(err, errno, "open /etc");
	const char *hostname = a->config->hostname ? a->config->hostname : "moat";
	char hosts[256];
	snprintf(hosts, sizeof(hosts), "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", hostname);
	char passwd[512];
	snprintf(passwd, sizeof(passwd),
		 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		 "sandbox:x:%u:%u:sandbox:/tmp:/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 MOAT_SANDBOX_UID, MOAT_SANDBOX_GID);
	char group[256];
	snprintf(group, sizeof(group), "root:x:0:\nsandbox:x:%u:\nnogroup:x:65534:\n", MOAT_SANDBOX_GID);
	char hostfile[80];
	snprintf(hostfile, sizeof(hostfile), "%s\n", hostname);
	bool transparent = a->config->net == MOAT_NET_TRANSPARENT;
	const struct {
		const char *name, *content;
	} files[] = {
		{"passwd", passwd},
		{"group", group},
		{"hosts", hosts},
		{"hostname", hostfile},
		{"nsswitch.conf", transparent ? "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
					      : "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"},
		/* With transparent egress, names are the gateway's DNS stub's to
		 * answer (netnat.h); otherwise there is no DNS inside. */
		{"resolv.conf", transparent ? "nameserver 127.0.0.1\n" : "# no DNS inside a moat sandbox\n"},
	};
	/* O_PATH fds cannot be written through; reopen the directory. */
	_cleanup_close_ int etcw = openat(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (etcw < 0)
		return moat_error_set(err, errno, "open /etc");
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		int r = moat__write_file_at(etcw, files[i].name, files[i].content, 0644);
		if (r < 0)
			return moat_error_set(err, r, "write /etc/%s", files[i].name);
	}
	int cr = carry_host_etc(rootfd, err);
	if (cr < 0)
		return cr;
	/* The policy this sandbox runs under, for nested runs to narrow. */
	if (a->config->policy_yaml) {
		if (mkdirat(etcw, "moat", 0755) < 0)
			return moat_error_set(err, errno, "mkdir /etc/moat");
		_cleanup_close_ int md = openat(etcw, "moat", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (md < 0)
			return moat_error_set(err, errno, "open /etc/moat");
		int r = moat__write_file_at(md, "policy.yaml", a->config->policy_yaml, 0444);
		if (r < 0)
			return moat_error_set(err, r, "write %s", MOAT_POLICY_INSIDE);
	}
	struct stat st;
	char tz[256];
	if (lstat("/etc/localtime", &st) == 0 && S_ISLNK(st.st_mode)) {
		ssize_t n = readlink("/etc/localtime", tz, sizeof(tz) - 1);
		if (n > 0) {
			tz[n] = '\0';
			if (symlinkat(tz, etcw, "localtime") < 0)
				return moat_error_set(err, errno, "symlink /etc/localtime");
		}
	}
	return 0;
}

/* A fresh procfs for the new pid namespace, with the files that reveal or
 * change the host kernel masked (as runc and bubblewrap do): /proc/kcore,
 * kallsyms, keys, timer and scheduler debug files hidden behind /dev/null
 * or an empty read-only tmpfs; /proc/sys, sysrq-trigger, irq, bus and fs
 * read-only.
 *
 * With the exec gate on (exec.approve), all of /proc is read-only: the
 * kernel refuses to open any regular file for writing on a read-only
 * mount (EROFS, checked in do_dentry_open whatever the file's own
 * permission says), and /proc/PID/mem is a regular file. So no process of
 * the sandbox can write another's memory: not the argv of an execve the
 * gate has looked at and let go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE makes
 * the kernel read it again), nor the code of the program it runs. ptrace
 * and process_vm_writev are refused by the seccomp filter, and mount
 * calls that could make a writable /proc again too. */
static int setup_proc(int rootfd, const char *source, bool readonly, moat_isolation *iso, moat_error *err)
{
	const uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	_cleanup_close_ int m = new_fs_src("proc", source, NULL, attrs | (readonly ? MOUNT_ATTR_RDONLY : 0), err);
	if (m < 0)
		return moat_error_wrap(err, "/proc");
	int r = attach_at(rootfd, m, "proc", true, err);
	if (r < 0)
		return r;
	static const char *const mask_files[] = {"kcore", "kallsyms", "keys", "key-users", "latency_stats",
						 "timer_list", "timer_stats", "sched_debug", "kmsg", "kpagecount",
						 "kpageflags", "kpagecgroup", "config.gz", "vmallocinfo", "slabinfo",
						 "pagetypeinfo", "sysrq-trigger",
						 /* The host's kernel command line and boot
						  * id tell which machine, and which boot of
						  * it, the sandbox runs on. */
						 "cmdline", "sys/kernel/random/boot_id"};
	static const char *const mask_dirs[] = {"acpi", "scsi", "asound", "firmware", "driver", "tty/driver"};
	static const char *const ro_dirs[] = {"sys", "irq", "bus", "fs"};
	char path[64];
	for (size_t i = 0; i < ELEMENTSOF(mask_files); i++) {
		snprintf(path, sizeof(path), "proc/%s", mask_files[i]);
		struct stat st;
		if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		struct stat nst;
		_cleanup_close_ int null = clone_host("/dev/null", &nst);
		if (null < 0)
			return moat_error_set(err, errno, "mask /proc/%s", mask_files[i]);
		if (attr_set(null, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
			return moat_error_set(err, errno, "mask /proc/%s", mask_files[i]);
		r = attach_at(rootfd, null, path, false, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(mask_dirs); i++) {
		snprintf(path, sizeof(path), "proc/%s", mask_dirs[i]);
		struct stat st;
		if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		static const char *const opts[] = {"size", "0", "mode", "0555", NULL};
		_cleanup_close_ int t = new_fs("tmpfs", opts, MOUNT_ATTR_RDONLY | attrs, err);
		if (t < 0)
			return moat_error_wrap(err, "mask /%s", path);
		r = attach_at(rootfd, t, path, true, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(ro_dirs); i++) {
		snprintf(path, sizeof(path), "proc/%s", ro_dirs[i]);
		_cleanup_close_ int t = open_tree(rootfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (t < 0) {
			if (errno == ENOENT)
				continue;
			return moat_error_set(err, errno, "read-only /%s", path);
		}
		if (attr_set(t, MOUNT_ATTR_RDONLY | attrs, true) < 0)
			return moat_error_set(err, errno, "read-only /%s", path);
		r = attach_at(rootfd, t, path, true, err);
		if (r < 0)
			return r;
	}
	iso->proc_masked = true;
	return 0;
}

/* Every sandbox gets a devpts instance of its own, with or without -t:
 * programs open pseudo-terminals for themselves (os.openpty, pty.spawn,
 * script, expect, terminal emulators in test suites). A new instance holds
 * only the sandbox's own terminals, so nothing in it is the caller's or
 * another sandbox's; with -t the command's terminal comes from it too. */
static int setup_devpts(int rootfd, int dev, const char *source, moat_error *err)
{
	_cleanup_close_ int fs = fsopen("devpts", FSOPEN_CLOEXEC);
	if (fs < 0)
		return moat_error_set(err, errno, "new devpts");
	if ((source[0] && fsconfig(fs, FSCONFIG_SET_STRING, "source", source, 0) < 0) ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "newinstance", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "ptmxmode", "0666", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0620", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return moat_error_set(err, errno, "configure devpts");
	_cleanup_close_ int m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return moat_error_set(err, errno, "mount devpts");
	int r = attach_at(rootfd, m, "dev/pts", true, err);
	if (r < 0)
		return r;
	if (symlinkat("pts/ptmx", dev, "ptmx") < 0)
		return moat_error_set(err, errno, "symlink /dev/ptmx");
	return 0;
}

/* An OCI spec's /dev/shm, a tmpfs of its own (size capped by oci.c as
 * every tmpfs of a spec), and /dev/mqueue: the message queue file system
 * of the sandbox's own ipc namespace (mq_open reaches those queues with
 * or without it; the mount only shows them as files). Both nosuid, nodev
 * and noexec, made in /dev before it turns read-only. */
static int setup_dev_ipc(int rootfd, int dev, const moat_config *c, moat_error *err)
{
	const uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	if (c->dev_shm) {
		const moat_tmpfs_mount *t = c->dev_shm;
		char size[32], mode[16];
		snprintf(mode, sizeof(mode), "%04o", t->mode & 01777);
		snprintf(size, sizeof(size), "%llu", (unsigned long long)t->size);
		const char *opts[] = {"mode", mode, t->size ? "size" : NULL, size, NULL};
		if (mkdirat(dev, "shm", 0755) < 0)
			return moat_error_set(err, errno, "mkdir /dev/shm");
		_cleanup_close_ int m =
			new_fs_src("tmpfs", c->fs_source[MOAT_FS_SHM], opts, attrs | (t->readonly ? MOUNT_ATTR_RDONLY : 0), err);
		if (m < 0)
			return moat_error_wrap(err, "/dev/shm");
		int r = attach_at(rootfd, m, "dev/shm", true, err);
		if (r < 0)
			return r;
	} else if (symlinkat("/tmp", dev, "shm") < 0) {
		return moat_error_set(err, errno, "symlink /dev/shm");
	}
	if (c->dev_mqueue) {
		if (mkdirat(dev, "mqueue", 0755) < 0)
			return moat_error_set(err, errno, "mkdir /dev/mqueue");
		_cleanup_close_ int m = new_fs_src("mqueue", c->fs_source[MOAT_FS_MQUEUE], NULL, attrs, err);
		if (m < 0)
			return moat_error_wrap(err, "/dev/mqueue");
		int r = attach_at(rootfd, m, "dev/mqueue", true, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int setup_dev(int rootfd, const moat_config *c, moat_error *err)
{
	const char *opts[] = {"mode", "0755", "size", "64k", "nr_inodes", "64", NULL};
	_cleanup_close_ int dm = new_fs_src("tmpfs", c->fs_source[MOAT_FS_DEV], opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
	if (dm < 0)
		return moat_error_wrap(err, "dev");
	int r = attach_at(rootfd, dm, "dev", true, err);
	if (r < 0)
		return r;
	_cleanup_close_ int dev = openat(rootfd, "dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dev < 0)
		return moat_error_set(err, errno, "open /dev");
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom"};
	char host[32], inside[32];
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		snprintf(inside, sizeof(inside), "dev/%s", nodes[i]);
		r = bind_host(rootfd, host, inside, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, err);
		if (r < 0)
			return r;
	}
	static const char *const links[][2] = {
		{"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"},
	};
	for (size_t i = 0; i < ELEMENTSOF(links); i++)
		if (symlinkat(links[i][1], dev, links[i][0]) < 0)
			return moat_error_set(err, errno, "symlink /dev/%s", links[i][0]);
	r = setup_devpts(rootfd, dev, c->fs_source[MOAT_FS_DEVPTS], err);
	if (r < 0)
		return r;
	r = setup_dev_ipc(rootfd, dev, c, err);
	if (r < 0)
		return r;
	/* Nothing may be added to /dev once it is built. */
	if (attr_set(dev, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
		return moat_error_set(err, errno, "make /dev read-only");
	return 0;
}

/* The run's own cgroup, read-only, where runtimes look for their limits:
 * the JVM sizes its heap from memory.max (or memory.limit_in_bytes), Go
 * and Node read their CPU and memory limits there. Only the run's own
 * directories are bound, never a hierarchy's root: nothing above the run's
 * subtree (the host's cgroups, other sandboxes') is visible, and nothing is
 * writable (a read-only bind: limits cannot be raised, no process moved).
 * With the cgroup namespace, /proc/self/cgroup and mountinfo name these
 * directories relative to the namespace's root, which is how runtimes match
 * a mount to their own cgroup. */
static int bind_cgroup(int rootfd, const moat_cgroup_mount *m, const char *dst, moat_error *err)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	/* The supervisor made this directory a moment ago, below a mount
	 * point read from mountinfo (which names no link). cgroupfs has no
	 * symlinks and nothing of any sandbox can write above it, so one
	 * lookup that follows no link at all is as safe as the component walk
	 * of hostpath.c, at a sixth of the system calls (each of a run's
	 * four to five cgroup mounts is on every run's start). */
	_cleanup_close_ int fd = moat__openat2(AT_FDCWD, m->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
					       RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return moat_error_set(err, errno, "the run's cgroup %s", m->dir);
	_cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0)
		return moat_error_set(err, errno, "bind the run's cgroup %s", m->dir);
	if (attr_set(tree, ro, false) < 0)
		return moat_error_set(err, errno, "bind the run's cgroup %s: set mount flags", m->dir);
	int r = attach_at(rootfd, tree, dst, true, err);
	return r < 0 ? moat_error_wrap(err, "bind the run's cgroup %s to /%s", m->dir, dst) : 0;
}

int moat__rootfs_cgroup(int rootfd, const moat_cgroup_mount *mounts, size_t n_mounts, moat_error *err)
{
	for (size_t i = 0; i < n_mounts; i++) {
		const moat_cgroup_mount *m = &mounts[i];
		char dst[64];
		if (m->version == 2)
			snprintf(dst, sizeof(dst), "sys/fs/cgroup");
		else
			snprintf(dst, sizeof(dst), "sys/fs/cgroup/%s", m->name);
		int r = bind_cgroup(rootfd, m, dst, err);
		if (r < 0)
			return r;
		/* "cpu,cpuacct" is also found as cpu and cpuacct. */
		if (m->version == 2 || !strchr(m->name, ','))
			continue;
		_cleanup_close_ int dir = openat(rootfd, "sys/fs/cgroup", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0)
			return moat_error_set(err, errno, "open /sys/fs/cgroup");
		char names[sizeof(m->name)];
		snprintf(names, sizeof(names), "%s", m->name);
		char *save = NULL;
		for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save))
			if (symlinkat(m->name, dir, n) < 0 && errno != EEXIST)
				return moat_error_set(err, errno, "symlink /sys/fs/cgroup/%s", n);
	}
	return 0;
}

/* Deeper targets after shallower ones, so a bind inside another bind lands
 * on top of it; otherwise the user's order. */
static int bind_depth_cmp(const void *x, const void *y)
{
	const moat_bind *const *a = x, *const *b = y;
	size_t da = 0, db = 0;
	for (const char *p = (*a)->dst; *p; p++)
		da += *p == '/';
	for (const char *p = (*b)->dst; *p; p++)
		db += *p == '/';
	if (da != db)
		return da < db ? -1 : 1;
	return *a < *b ? -1 : (*a > *b);
}

static int setup_binds(int rootfd, const moat_config *c, moat_error *err)
{
	if (c->n_binds == 0)
		return 0;
	_cleanup_free_ const moat_bind **order = calloc(c->n_binds, sizeof(*order));
	if (!order)
		return moat_error_set(err, ENOMEM, "binds");
	for (size_t i = 0; i < c->n_binds; i++)
		order[i] = &c->binds[i];
	qsort(order, c->n_binds, sizeof(*order), bind_depth_cmp);
	for (size_t i = 0; i < c->n_binds; i++) {
		const moat_bind *b = order[i];
		uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (!(b->flags & MOAT_BIND_RW))
			attrs |= MOUNT_ATTR_RDONLY;
		if (b->flags & MOAT_BIND_NOEXEC)
			attrs |= MOUNT_ATTR_NOEXEC;
		int r = bind_host(rootfd, b->src, b->dst + 1, attrs, b->flags & MOAT_BIND_OPTIONAL, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The base root: a small tmpfs with the host's /usr bound, then each
 * top-level system folder as the host has it (a link into /usr, or a
 * bind), and a generated /etc. */
static int stage_base_root(const moat_init_args *a, int *ret_rootfd, moat_error *err)
{
	static const char *const root_opts[] = {"mode", "0755", "size", "4m", "nr_inodes", "4096", NULL};
	_cleanup_close_ int rootm = new_fs("tmpfs", root_opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	if (rootm < 0)
		return moat_error_wrap(err, "root");
	if (move_mount(rootm, "", AT_FDCWD, ROOTFS_STAGING, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "attach new root");
	_cleanup_close_ int rootfd = open(ROOTFS_STAGING, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return moat_error_set(err, errno, "open new root");

	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	int r = bind_host(rootfd, "/usr", "usr", ro, false, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(moat__base_system_dirs); i++) {
		if (strcmp(moat__base_system_dirs[i], "/usr") == 0)
			continue;
		r = link_or_bind_toplevel(rootfd, moat__base_system_dirs[i] + 1, err);
		if (r < 0)
			return r;
	}
	r = setup_etc(rootfd, a, err);
	if (r < 0)
		return r;
	*ret_rootfd = TAKE_FD(rootfd);
	return 0;
}

/* A root given by the caller (an OCI bundle's): its folder, as the
 * supervisor resolved it, bound recursively with nosuid and nodev. Its
 * content is the image's and may hold planted links: every mount point
 * below it is then opened with open_target, which refuses to follow any
 * link (runc CVE-2021-30465). */
static int stage_given_root(const char *path, int *ret_rootfd, moat_error *err)
{
	struct stat st;
	_cleanup_close_ int tree = clone_host(path, &st);
	if (tree < 0)
		return moat_error_set(err, errno, "root.path: %s", path);
	if (!S_ISDIR(st.st_mode))
		return moat_error_set(err, MOAT_EINPUT, "root.path: %s is not a folder", path);
	if (attr_set(tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true) < 0)
		return moat_error_set(err, errno, "root.path: %s: set mount flags", path);
	if (move_mount(tree, "", AT_FDCWD, ROOTFS_STAGING, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "attach new root");
	int rootfd = open(ROOTFS_STAGING, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return moat_error_set(err, errno, "open new root");
	*ret_rootfd = rootfd;
	return 0;
}

/* The tmpfs mounts a front asked for (an OCI spec's, such as containerd's
 * /run), before the binds so that a bind below one lands on it. Always
 * nosuid and nodev, with the size the front capped. */
static int setup_tmpfs_mounts(int rootfd, const moat_config *c, moat_error *err)
{
	for (size_t i = 0; i < c->n_tmpfs; i++) {
		const moat_tmpfs_mount *t = &c->tmpfs[i];
		char size[32], mode[16];
		snprintf(mode, sizeof(mode), "%04o", t->mode & 07777);
		snprintf(size, sizeof(size), "%llu", (unsigned long long)t->size);
		const char *opts[] = {"mode", mode, t->size ? "size" : NULL, size, NULL};
		uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (t->noexec ? MOUNT_ATTR_NOEXEC : 0) |
				 (t->readonly ? MOUNT_ATTR_RDONLY : 0);
		_cleanup_close_ int m = new_fs("tmpfs", opts, attrs, err);
		if (m < 0)
			return moat_error_wrap(err, "tmpfs at %s", t->dst);
		int r = attach_at(rootfd, m, t->dst[1] ? t->dst + 1 : ".", true, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* An existing path inside the root, opened without following any link
 * (the image's links must not send a mask or a remount elsewhere);
 * -1 with errno ENOENT when it is not there. */
static int open_inside(int rootfd, const char *path)
{
	int fd = moat__openat2(rootfd, path[1] ? path + 1 : ".", O_PATH | O_CLOEXEC | O_NOFOLLOW, 0,
			       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	struct stat st;
	/* O_NOFOLLOW opens a link that is the last component itself. */
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(fd);
		errno = ELOOP;
		return -1;
	}
	return fd;
}

/* Paths a front asked to hide or make read-only (an OCI spec's
 * maskedPaths and readonlyPaths), over everything else: /dev/null over a
 * file, an empty read-only tmpfs over a folder; a read-only recursive
 * clone of a path over itself. A path that is not there is left alone (as
 * runc does); one that goes through a link is refused. */
static int setup_masks(int rootfd, const moat_config *c, moat_error *err)
{
	const uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	for (char **p = c->masked_paths; p && *p; p++) {
		_cleanup_close_ int fd = open_inside(rootfd, *p);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 && errno == ELOOP)
			return moat_error_set(err, MOAT_EINPUT, "linux.maskedPaths: %s goes through a symbolic link; refused",
					      *p);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "linux.maskedPaths: %s", *p);
		_cleanup_close_ int m = -1;
		if (S_ISDIR(st.st_mode)) {
			static const char *const opts[] = {"size", "0", "mode", "0555", NULL};
			m = new_fs("tmpfs", opts, MOUNT_ATTR_RDONLY | attrs, err);
			if (m < 0)
				return moat_error_wrap(err, "linux.maskedPaths: %s", *p);
		} else {
			struct stat nst;
			/* A device node: not nodev, or it could not be opened. */
			m = clone_host("/dev/null", &nst);
			if (m < 0 || attr_set(m, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false) < 0)
				return moat_error_set(err, errno, "linux.maskedPaths: %s", *p);
		}
		if (move_mount(m, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return moat_error_set(err, errno, "linux.maskedPaths: mount over %s", *p);
	}
	for (char **p = c->readonly_paths; p && *p; p++) {
		_cleanup_close_ int fd = open_inside(rootfd, *p);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 && errno == ELOOP)
			return moat_error_set(err, MOAT_EINPUT,
					      "linux.readonlyPaths: %s goes through a symbolic link; refused", *p);
		if (fd < 0)
			return moat_error_set(err, errno, "linux.readonlyPaths: %s", *p);
		_cleanup_close_ int t =
			open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		if (t < 0 || attr_set(t, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true) < 0)
			return moat_error_set(err, errno, "linux.readonlyPaths: %s", *p);
		if (move_mount(t, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return moat_error_set(err, errno, "linux.readonlyPaths: mount over %s", *p);
	}
	return 0;
}

int moat__rootfs_setup(const moat_init_args *a, moat_isolation *iso, moat_error *err)
{
	const moat_config *c = a->config;
	int r;

	/* Nothing we mount may propagate back to the host, and host mount
	 * events should still reach our copies (unmounts of bound media). */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return moat_error_set(err, errno, "make mounts private");

	for (size_t i = 0; a->host_srcs && i < a->host_srcs->n; i++) {
		r = preopen_host(&a->host_srcs->v[i], err);
		if (r < 0)
			return r;
	}

	_cleanup_close_ int rootfd = -1;
	if (c->rootfs)
		r = stage_given_root(c->rootfs, &rootfd, err);
	else
		r = stage_base_root(a, &rootfd, err);
	if (r < 0)
		return r;
	r = setup_proc(rootfd, c->fs_source[MOAT_FS_PROC], c->n_exec_approve > 0, iso, err);
	if (r < 0)
		return r;
	r = setup_dev(rootfd, c, err);
	if (r < 0)
		return r;
	/* A given root's /sys is the image's folder: moat shows a tmpfs of
	 * its own there instead (the run's cgroup below it), read-only once
	 * that is bound. */
	if (c->rootfs) {
		r = mount_tmpfs(rootfd, "sys", "64k", "64", "0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
				err);
		if (r < 0)
			return r;
	}
	r = moat__rootfs_cgroup(rootfd, a->cgroup_mounts, a->n_cgroup_mounts, err);
	if (r < 0)
		return r;
	if (c->rootfs) {
		_cleanup_close_ int sys = open_target(rootfd, "sys", true, err);
		if (sys < 0)
			return sys;
		if (attr_set(sys, MOUNT_ATTR_RDONLY, false) < 0)
			return moat_error_set(err, errno, "make /sys read-only");
	}

	char size[32], inodes[32];
	const char *sizep = NULL, *inodesp = NULL;
	if (c->limits.tmp_bytes != MOAT_UNLIMITED) {
		snprintf(size, sizeof(size), "%llu", (unsigned long long)c->limits.tmp_bytes);
		/* One inode per KiB of /tmp, at least 1024: an inode flood ends
		 * on the tmpfs's own limit instead of eating kernel memory. */
		uint64_t n = c->limits.tmp_bytes / 1024;
		snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)(n < 1024 ? 1024 : n));
		sizep = size;
		inodesp = inodes;
	}
	r = mount_tmpfs(rootfd, "tmp", sizep, inodesp, "1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	if (r < 0)
		return r;

	if (c->out_dir && moat__out_capped(c)) {
		r = mount_out_tmpfs(rootfd, a, err);
		if (r < 0)
			return r;
	} else if (c->out_dir) {
		r = bind_host(rootfd, c->out_dir, "out", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false, err);
		if (r < 0)
			return moat_error_wrap(err, "filesystem.out");
	}
	r = setup_tmpfs_mounts(rootfd, c, err);
	if (r < 0)
		return r;
	r = setup_binds(rootfd, c, err);
	if (r < 0)
		return r;
	r = setup_masks(rootfd, c, err);
	if (r < 0)
		return r;

	/* No handle on a host path survives into the sandbox's lifetime: the
	 * init holds none once the root is built. */
	for (size_t i = 0; i < n_host_srcs; i++)
		if (host_srcs[i].fd >= 0)
			close(host_srcs[i].fd);
	n_host_srcs = 0;

	/* Enter the new root and drop the host's tree entirely. */
	if (fchdir(rootfd) < 0)
		return moat_error_set(err, errno, "enter new root");
	if (moat__pivot_root(".", ".") < 0)
		return moat_error_set(err, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return moat_error_set(err, errno, "detach the host's root");
	if (chdir("/") < 0)
		return moat_error_set(err, errno, "chdir /");
	/* The root itself becomes read-only; /tmp, /out and --rw binds are
	 * separate mounts and stay writable. */
	if (c->rootfs && c->rootfs_writable)
		return 0;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(AT_FDCWD, "/", 0, &attr, sizeof(attr)) < 0)
		return moat_error_set(err, errno, "make the root read-only");
	iso->rootfs_readonly = true;
	return 0;
}
