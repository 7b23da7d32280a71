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

#define OUT_MAX_DEPTH 128
#define OUT_MAX_ENTRIES 1000000

typedef struct walk {
	unsigned removed;
	unsigned fixed;
	unsigned long entries;
} walk;

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

static int walk_dir(int dirfd, int depth, walk *w, moat_error *err)
{
	if (depth > OUT_MAX_DEPTH)
		return moat_error_set(err, MOAT_EINPUT, "output directory nests deeper than %d levels", OUT_MAX_DEPTH);
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
		if (++w->entries > OUT_MAX_ENTRIES) {
			r = moat_error_set(err, MOAT_EINPUT, "output directory holds more than %d entries",
					   OUT_MAX_ENTRIES);
			break;
		}
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char target[MOAT_MAX_PATH];
			ssize_t n = readlinkat(dirfd, de->d_name, target, sizeof(target) - 1);
			target[n < 0 ? 0 : n] = '\0';
			if (n < 0 || !link_is_safe(target)) {
				if (unlinkat(dirfd, de->d_name, 0) == 0)
					w->removed++;
			}
		} else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) ||
			   S_ISBLK(st.st_mode)) {
			if (unlinkat(dirfd, de->d_name, 0) == 0)
				w->removed++;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = moat__openat2(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0,
						RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
							RESOLVE_NO_XDEV);
			if (sub < 0)
				continue;
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
					      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
			if (f >= 0) {
				if (fchmod(f, st.st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID)) == 0)
					w->fixed++;
				close(f);
			}
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
