/* Resolving host paths without following links a sandbox could plant
 * (hostpath.h says why). The kernel's own walk is used for one component
 * at a time only, with RESOLVE_NO_SYMLINKS, so a link is seen before it is
 * followed; links are then followed here, by text, when root owns them. */
#include "hostpath.h"

#include "syscalls.h"
#include "util.h"

#include <fcntl.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/stat.h>

bool moat__hostpath_link_trusted(uid_t owner)
{
	return owner == 0;
}

int moat__hostpath_refuse(moat_error *err, const char *what, const char *path, const char *link, uid_t owner)
{
	return moat_error_set(err, MOAT_EINPUT,
			      "%s%s%s: %s is a symbolic link owned by uid %u; moat follows only links owned by root "
			      "in host paths (give the real path)",
			      what ? what : "", what && *what ? " " : "", path, link, (unsigned)owner);
}

/* RESOLVE_NO_MAGICLINKS too: /proc/PID/fd links are never walked by the
 * kernel for us; a root-owned one is followed by its text like any other. */
#define ONE_STEP (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

int moat__hostpath_open(const char *what, const char *path, int flags, mode_t mode, moat_error *err)
{
	if (!path || !*path)
		return moat_error_set(err, MOAT_EINPUT, "%s: empty path", what ? what : "path");
	size_t plen = strlen(path);
	if (plen >= PATH_MAX)
		return moat_error_set(err, ENAMETOOLONG, "%s", what ? what : "path");
	/* How errors name the path: "filesystem.out: /srv/out", or the path alone. */
	char label[PATH_MAX + 64];
	snprintf(label, sizeof(label), "%s%s%s", what ? what : "", what && *what ? " " : "", path);
	char todo[PATH_MAX], seen[PATH_MAX];
	memcpy(todo, path, plen + 1);
	seen[0] = '\0';
	size_t seen_len = 0;
	/* O_NOFOLLOW from the caller keeps its meaning: the last component
	 * may not be a link at all, whoever owns it (a log or a result is
	 * never written through one). Links are otherwise followed here, by
	 * hand, so the kernel always gets O_NOFOLLOW. openat2 refuses what
	 * open ignores: O_PATH with other flags, a mode without O_CREAT. */
	bool nofollow_last = flags & O_NOFOLLOW;
	flags |= O_CLOEXEC | O_NOFOLLOW;
	if (!(flags & O_PATH))
		flags |= O_NOCTTY;
	if (!(flags & O_CREAT))
		mode = 0;

	_cleanup_close_ int cur = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return moat_error_set(err, errno, "%s", label);
	unsigned links = 0;
	size_t pos = 0;
	for (;;) {
		while (todo[pos] == '/')
			pos++;
		if (todo[pos] == '\0') {
			/* The path names a directory already open as cur ("/",
			 * ".", "a/"); reopen it with the caller's flags. */
			int fd = moat__openat2(cur, ".", (uint64_t)flags & ~(uint64_t)(O_NOFOLLOW | O_CREAT), 0, ONE_STEP);
			if (fd < 0)
				return moat_error_set(err, errno, "%s", label);
			return fd;
		}
		const char *comp = todo + pos;
		size_t len = strcspn(comp, "/");
		if (len > NAME_MAX)
			return moat_error_set(err, ENAMETOOLONG, "%s", label);
		char name[NAME_MAX + 1];
		memcpy(name, comp, len);
		name[len] = '\0';
		pos += len;
		bool trailing_slash = todo[pos] == '/';
		while (todo[pos] == '/')
			pos++;
		bool last = todo[pos] == '\0';
		if (seen_len + len + 2 < sizeof(seen)) {
			seen_len += (size_t)snprintf(seen + seen_len, sizeof(seen) - seen_len, "%s%s",
						     seen_len || path[0] == '/' ? "/" : "", name);
		}

		int fd;
		errno = 0;
		if (last && !trailing_slash)
			fd = moat__openat2(cur, name, (uint64_t)flags, mode, ONE_STEP);
		else
			fd = moat__openat2(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, ONE_STEP);
		int open_errno = fd < 0 ? errno : 0;
		if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
			/* The component may be a link (O_NOFOLLOW gives ELOOP,
			 * or ENOTDIR with O_DIRECTORY): look at it without
			 * following it. */
			fd = moat__openat2(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS);
			if (fd < 0 && errno == ELOOP)
				return moat_error_set(err, MOAT_EINPUT, "%s: %s is a link moat cannot inspect", label, seen);
		}
		if (fd < 0)
			return moat_error_set(err, errno, "%s", label);
		_cleanup_close_ int got = fd;
		struct stat st;
		if (fstat(got, &st) < 0)
			return moat_error_set(err, errno, "%s", label);
		if (open_errno && !S_ISLNK(st.st_mode))
			return moat_error_set(err, open_errno, "%s", label);
		if (!S_ISLNK(st.st_mode)) {
			close(cur);
			cur = TAKE_FD(got);
			if (last && !trailing_slash)
				return TAKE_FD(cur);
			continue;
		}
		if (last && !trailing_slash && nofollow_last)
			return moat_error_set(err, MOAT_EINPUT, "%s: is a symbolic link; moat does not open this through one",
					      label);
		if (!moat__hostpath_link_trusted(st.st_uid))
			return moat__hostpath_refuse(err, what, path, seen, st.st_uid);
		if (++links > MOAT_HOSTPATH_MAX_LINKS)
			return moat_error_set(err, ELOOP, "%s", label);
		char target[PATH_MAX];
		ssize_t n = readlinkat(got, "", target, sizeof(target));
		if (n < 0)
			return moat_error_set(err, errno, "%s: read link %s", label, seen);
		if (n == 0 || (size_t)n >= sizeof(target))
			return moat_error_set(err, ENAMETOOLONG, "%s: link %s", label, seen);
		target[n] = '\0';
		/* What is left to walk: the link's text, then the rest. */
		const char *rest = todo + pos;
		size_t rlen = strlen(rest);
		if ((size_t)n + 1 + rlen + (trailing_slash ? 1 : 0) >= sizeof(todo))
			return moat_error_set(err, ENAMETOOLONG, "%s", label);
		char next[PATH_MAX];
		snprintf(next, sizeof(next), "%s%s%s", target, rlen || trailing_slash ? "/" : "", rest);
		memcpy(todo, next, strlen(next) + 1);
		pos = 0;
		if (target[0] == '/') {
			close(cur);
			cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (cur < 0)
				return moat_error_set(err, errno, "%s", label);
		}
	}
}
