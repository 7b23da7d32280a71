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
				do
					snprintf(up, sizeof(up), ".moat-removed-%lu", w->moves++);
				while (renameat2(sub, se->d_name, top, up, RENAME_NOREPLACE) < 0 && errno == EEXIST);
			}
			closedir(sd);
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
	_cleanup_close_ int fd = moat__hostpath_open("--out", out_dir, O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	walk w = {0};
	int r = walk_dir(fd, 0, &w, err);
	*ret_removed = w.removed;
	*ret_fixed = w.fixed;
	return r;
}
