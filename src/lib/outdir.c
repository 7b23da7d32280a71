/* Output directory hygiene. What a run leaves in /out is read by the host
 * afterwards, often by root and by tools that follow links. So once the run
 * is over (every process of it is gone, nothing can race us) we walk the
 * tree without ever following a link and remove what could hurt a reader:
 * symbolic links that are absolute or climb with "..", FIFOs (a reader would
 * block), sockets and device nodes; and we clear setuid and setgid bits. */
#include "sandbox-internal.h"
#include "syscalls.h"
#include "hostpath.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* Deeper than this, a folder is not walked but removed whole (each level
 * of the walk holds a descriptor). The removal itself holds two. */
#define OUT_MAX_DEPTH 128
/* Past this many entries the walk stops and the run is a setup error: the
 * host is told its output was not checked, never handed it silently. */
#define OUT_MAX_ENTRIES 1000000

typedef struct walk {
	unsigned removed;
	unsigned fixed;
	unsigned long entries;
	unsigned long moves; /* names given to entries moved up by remove_tree */
	/* The capped /out's tmpfs: a folder too deep is left where it is
	 * and never copied out (copy_dir stops at the same depth), since
	 * the tmpfs is dropped after the copy. */
	bool skip_deep;
} walk;

static const uint64_t beneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

static bool link_is_safe(const char *target)
{
	if (target[0] == '/' || target[0] == '\0')
		return false;
	/* Any ".." component could climb out, directly or through another
	 * link; relative links that only descend stay inside. */
	const char *p = target;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

/* Opens the folder name below dirfd for reading. A folder the run left
 * without permissions (mode 000, in a rootless run the caller owns it) is
 * given them back first: an unreadable folder would stay unchecked. */
static int open_subdir(int dirfd, const char *name)
{
	int fd = moat__openat2(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath);
	if (fd >= 0 || errno != EACCES)
		return fd;
	_cleanup_close_ int p = moat__openat2(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath);
	if (p < 0)
		return -1;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	if (chmod(proc, 0700) < 0)
		return -1;
	return moat__openat2(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath);
}

static int count_entry(walk *w, moat_error *err)
{
	if (++w->entries > OUT_MAX_ENTRIES)
		return moat_error_set(err, MOAT_EINPUT,
				      "output directory holds more than %d entries; it was not checked, do not use it",
				      OUT_MAX_ENTRIES);
	return 0;
}

/* Removes the folder name below dirfd and all it holds, however deep,
 * with two descriptors: a folder found inside has its entries moved up
 * into the top one, then is removed empty. No link is ever followed
 * (unlinkat and renameat act on names, not on what links point to). */
static int remove_tree(int dirfd, const char *name, walk *w, moat_error *err)
{
	_cleanup_close_ int top = open_subdir(dirfd, name);
	if (top < 0)
		return moat_error_set(err, errno, "remove a folder too deep to check in the output directory");
	for (;;) {
		/* Each pass reads the folder from its start again (a dup
		 * shares the offset the last pass left at the end). */
		if (lseek(top, 0, SEEK_SET) < 0)
			return moat_error_set(err, errno, "read output directory");
		int dupfd = fcntl(top, F_DUPFD_CLOEXEC, 3);
		DIR *d = dupfd < 0 ? NULL : fdopendir(dupfd);
		if (!d) {
			if (dupfd >= 0)
				close(dupfd);
			return moat_error_set(err, errno, "read output directory");
		}
		bool any = false;
		int r = 0;
		struct dirent *de;
		while (r == 0 && (de = readdir(d))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			any = true;
			if ((r = count_entry(w, err)) < 0)
				break;
			if (unlinkat(top, de->d_name, 0) == 0 || unlinkat(top, de->d_name, AT_REMOVEDIR) == 0)
				continue;
			_cleanup_close_ int sub = open_subdir(top, de->d_name);
			if (sub < 0) {
				r = moat_error_set(err, errno, "remove a folder too deep to check in the output directory");
				break;
			}
			/* Entries can only be moved out of a writable folder. */
			(void)fchmod(sub, 0700);
			int sdup = fcntl(sub, F_DUPFD_CLOEXEC, 3);
			DIR *sd = sdup < 0 ? NULL : fdopendir(sdup);
			if (!sd) {
				if (sdup >= 0)
					close(sdup);
				r = moat_error_set(err, errno, "read output directory");
				break;
			}
			struct dirent *se;
			while ((se = readdir(sd))) {
				if (strcmp(se->d_name, ".") == 0 || strcmp(se->d_name, "..") == 0)
					continue;
				char up[64];
				int e;
				do {
					snprintf(up, sizeof(up), ".moat-removed-%lu", w->moves++);
					e = renameat2(sub, se->d_name, top, up, RENAME_NOREPLACE) < 0 ? errno : 0;
				} while (e == EEXIST);
				/* An entry that cannot move would be met again
				 * on every pass: stop, the run fails closed. */
				if (e != 0) {
					r = moat_error_set(err, e, "remove a folder too deep to check in the output directory");
					break;
				}
			}
			closedir(sd);
			if (r < 0)
				break;
			unlinkat(top, de->d_name, AT_REMOVEDIR);
		}
		closedir(d);
		if (r < 0)
			return r;
		if (!any)
			break;
	}
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return moat_error_set(err, errno, "remove a folder too deep to check in the output directory");
	w->removed++;
	return 0;
}

static int walk_dir(int dirfd, int depth, walk *w, moat_error *err)
{
	int dupfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dupfd < 0)
		return moat_error_set(err, errno, "read output directory");
	DIR *d = fdopendir(dupfd);
	if (!d) {
		close(dupfd);
		return moat_error_set(err, errno, "read output directory");
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((r = count_entry(w, err)) < 0)
			break;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = moat_error_set(err, errno, "check the output directory");
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[MOAT_MAX_PATH];
			ssize_t n = readlinkat(dirfd, de->d_name, target, sizeof(target) - 1);
			target[n < 0 ? 0 : n] = '\0';
			if (n < 0 || !link_is_safe(target)) {
				if (unlinkat(dirfd, de->d_name, 0) < 0) {
					r = moat_error_set(err, errno, "remove a link out of the output directory");
					break;
				}
				w->removed++;
			}
		} else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) ||
			   S_ISBLK(st.st_mode)) {
			if (unlinkat(dirfd, de->d_name, 0) < 0) {
				r = moat_error_set(err, errno, "remove a special file from the output directory");
				break;
			}
			w->removed++;
		} else if (S_ISDIR(st.st_mode) && depth + 1 >= OUT_MAX_DEPTH && w->skip_deep) {
			w->removed++;
		} else if (S_ISDIR(st.st_mode) && depth + 1 >= OUT_MAX_DEPTH) {
			/* Too deep to walk with a descriptor a level: removed,
			 * never left unchecked. */
			if ((r = remove_tree(dirfd, de->d_name, w, err)) < 0)
				break;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = open_subdir(dirfd, de->d_name);
			if (sub < 0) {
				r = moat_error_set(err, errno, "check the output directory");
				break;
			}
			if (st.st_mode & (S_ISUID | S_ISGID)) {
				if (fchmod(sub, st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) == 0)
					w->fixed++;
			}
			r = walk_dir(sub, depth + 1, w, err);
			close(sub);
			if (r < 0)
				break;
		} else if (S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID))) {
			int f = moat__openat2(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0,
					      beneath);
			if (f < 0 || fchmod(f, st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0) {
				r = moat_error_set(err, errno, "clear a setuid bit in the output directory");
				if (f >= 0)
					close(f);
				break;
			}
			w->fixed++;
			close(f);
		}
	}
	closedir(d);
	return r;
}

int moat__out_sanitize(const char *out_dir, unsigned *ret_removed, unsigned *ret_fixed, moat_error *err)
{
	_cleanup_close_ int fd = moat__hostpath_open("filesystem.out:", out_dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	walk w = {0};
	int r = walk_dir(fd, 0, &w, err);
	*ret_removed = w.removed;
	*ret_fixed = w.fixed;
	return r;
}

/* --- The capped /out: a tmpfs of the run's own, copied out afterwards --- */

bool moat__out_capped(const moat_config *c)
{
	if (!c->out_dir || c->exec_workspace || (c->profile && strcmp(c->profile, "agent") == 0))
		return false;
	return c->limits.disk_bytes != MOAT_UNLIMITED || c->limits.disk_inodes != MOAT_UNLIMITED;
}

static void note_add(moat_result *r, const char *text)
{
	size_t l = strlen(r->limits_note);
	snprintf(r->limits_note + l, sizeof(r->limits_note) - l, "%s%s", l ? "; " : "", text);
}

void moat__out_enforced(const moat_config *c, moat_result *r)
{
	const moat_limits *l = &c->limits;
	if (l->disk_bytes == MOAT_UNLIMITED && l->disk_inodes == MOAT_UNLIMITED)
		return;
	bool capped = moat__out_capped(c);
	moat_mechanism m = capped ? MOAT_MECH_TMPFS : MOAT_MECH_NONE;
	if (l->disk_bytes != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_DISK, l->disk_bytes, m);
	if (l->disk_inodes != MOAT_UNLIMITED)
		moat_result_enforce(r, MOAT_LIMIT_KIND_INODES, l->disk_inodes, m);
	bool rw = false;
	for (size_t i = 0; i < c->n_binds; i++)
		rw = rw || (c->binds[i].flags & MOAT_BIND_RW);
	if (!capped && c->out_dir)
		note_add(r, "disk, inodes: not enforced; filesystem.out is the host folder bound in place (workspace), "
			    "and filesystem.read_write folders have no per-run quota");
	else if (!capped)
		note_add(r, "disk, inodes: not enforced without filesystem.out; filesystem.read_write folders have no "
			    "per-run quota");
	else if (rw)
		note_add(r, "disk, inodes: enforced on /out only; filesystem.read_write folders have no per-run quota");
}

typedef struct copy_state {
	uint64_t bytes, max_bytes;
	uint64_t entries, max_entries;
	bool chown_to_dir;
	uid_t uid;
	gid_t gid;
} copy_state;

/* Opens the file name below dirfd for reading; a file the run left without
 * read permission (rootless, the caller owns it) gets it back first. */
static int open_source_file(int dirfd, const char *name)
{
	int fd = moat__openat2(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, beneath);
	if (fd >= 0 || errno != EACCES)
		return fd;
	_cleanup_close_ int p = moat__openat2(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, beneath);
	if (p < 0)
		return -1;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	if (chmod(proc, 0600) < 0)
		return -1;
	return moat__openat2(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, beneath);
}

/* Makes room for name in the host folder: what was there before the run
 * is replaced by what the run made, a link by unlinking the link itself
 * (never what it points to). A folder is replaced only when empty. */
static int clear_name(int dirfd, const char *name, moat_error *err)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno == EISDIR || errno == EPERM) && unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return 0;
	return moat_error_set(err, errno, "replace '%s' in the filesystem.out folder", name);
}

static int own(const copy_state *cs, int fd)
{
	return cs->chown_to_dir ? fchown(fd, cs->uid, cs->gid) : 0;
}

static int copy_file(int src, int dst, copy_state *cs, moat_error *err)
{
	static char buf[65536];
	for (;;) {
		ssize_t n = read(src, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return moat_error_set(err, errno, "read a file of /out");
		if (n == 0)
			return 0;
		cs->bytes += (uint64_t)n;
		if (cs->bytes > cs->max_bytes)
			return moat_error_set(err, MOAT_EINPUT,
					      "/out holds more bytes than limits.disk (hard links or sparse files)");
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(dst, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return moat_error_set(err, errno, "write to the filesystem.out folder");
			off += w;
		}
	}
}

static int copy_dir(int src, int dst, int depth, copy_state *cs, moat_error *err)
{
	int dupfd = fcntl(src, F_DUPFD_CLOEXEC, 3);
	DIR *d = dupfd < 0 ? NULL : fdopendir(dupfd);
	if (!d) {
		if (dupfd >= 0)
			close(dupfd);
		return moat_error_set(err, errno, "read /out");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		/* Names, not inodes: hard links could name one inode many times. */
		if (++cs->entries > cs->max_entries) {
			r = moat_error_set(err, MOAT_EINPUT, "/out holds more entries than limits.inodes (hard links)");
			break;
		}
		struct stat st;
		if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = moat_error_set(err, errno, "read /out");
			break;
		}
		mode_t mode = st.st_mode & 0777;
		if (S_ISDIR(st.st_mode) && depth + 1 >= OUT_MAX_DEPTH) {
			continue; /* left unchecked by the walk: never copied */
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int s = open_subdir(src, name);
			if (s < 0) {
				r = moat_error_set(err, errno, "read /out");
				break;
			}
			_cleanup_close_ int t = moat__openat2(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
							      0, beneath);
			bool made = t < 0;
			if (made) {
				if ((r = clear_name(dst, name, err)) < 0)
					break;
				if (mkdirat(dst, name, 0700) < 0) {
					r = moat_error_set(err, errno, "create a folder in the filesystem.out folder");
					break;
				}
				t = moat__openat2(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, beneath);
				if (t < 0) {
					r = moat_error_set(err, errno, "create a folder in the filesystem.out folder");
					break;
				}
			}
			if ((r = copy_dir(s, t, depth + 1, cs, err)) < 0)
				break;
			/* A folder of the host's that the run's merges into keeps
			 * its owner. */
			if (fchmod(t, mode) < 0 || (made && own(cs, t) < 0))
				r = moat_error_set(err, errno, "set the mode of a folder in the filesystem.out folder");
		} else if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int s = open_source_file(src, name);
			if (s < 0) {
				r = moat_error_set(err, errno, "read /out");
				break;
			}
			if ((r = clear_name(dst, name, err)) < 0)
				break;
			_cleanup_close_ int t = moat__openat2(dst, name,
							      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
							      0600, beneath);
			if (t < 0) {
				r = moat_error_set(err, errno, "create a file in the filesystem.out folder");
				break;
			}
			if ((r = copy_file(s, t, cs, err)) < 0)
				break;
			if (fchmod(t, mode) < 0 || own(cs, t) < 0)
				r = moat_error_set(err, errno, "set the mode of a file in the filesystem.out folder");
		} else if (S_ISLNK(st.st_mode)) {
			/* The hygiene walk left only links that stay inside. */
			char target[MOAT_MAX_PATH];
			ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
			if (n < 0) {
				r = moat_error_set(err, errno, "read /out");
				break;
			}
			target[n] = '\0';
			if (!link_is_safe(target))
				continue;
			if ((r = clear_name(dst, name, err)) < 0)
				break;
			if (symlinkat(target, dst, name) < 0) {
				r = moat_error_set(err, errno, "create a link in the filesystem.out folder");
				break;
			}
			if (cs->chown_to_dir && fchownat(dst, name, cs->uid, cs->gid, AT_SYMLINK_NOFOLLOW) < 0)
				r = moat_error_set(err, errno, "create a link in the filesystem.out folder");
		}
		/* Anything else was removed by the hygiene walk (and the tmpfs
		 * is nodev); it is not carried to the host. */
	}
	closedir(d);
	return r;
}

int moat__out_copy_out(const moat_config *c, int out_fs, unsigned *ret_removed, unsigned *ret_fixed,
		       moat_error *err)
{
	_cleanup_close_ int src = openat(out_fs, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return moat_error_set(err, errno, "open the run's /out");
	walk w = {.skip_deep = true};
	int r = walk_dir(src, 0, &w, err);
	*ret_removed = w.removed;
	*ret_fixed = w.fixed;
	if (r < 0)
		return r;
	_cleanup_close_ int dst = moat__hostpath_open("filesystem.out:", c->out_dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (dst < 0)
		return dst;
	struct stat st;
	if (fstat(dst, &st) < 0)
		return moat_error_set(err, errno, "filesystem.out: %s", c->out_dir);
	copy_state cs = {
		.max_bytes = c->limits.disk_bytes,
		.max_entries = c->limits.disk_inodes,
		/* As root, what moat writes would be root's: give it to whoever
		 * owns the folder, as if they had written it; in a folder of
		 * root's, to the sandbox's host user, as a bound folder would
		 * hold it (what untrusted code made never looks like root's). */
		.chown_to_dir = geteuid() == 0,
		.uid = st.st_uid == 0 ? MOAT_ROOT_HOST_UID : st.st_uid,
		.gid = st.st_uid == 0 ? MOAT_ROOT_HOST_GID : st.st_gid,
	};
	/* The walk read the folder through a dup that shares its offset. */
	if (lseek(src, 0, SEEK_SET) < 0)
		return moat_error_set(err, errno, "read /out");
	r = copy_dir(src, dst, 0, &cs, err);
	if (r < 0)
		return moat_error_wrap(err, "copy /out to filesystem.out %s (it may hold part of the output)", c->out_dir);
	return 0;
}
