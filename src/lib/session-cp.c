/* `moat session cp` (session.h): files and folders into and out of a live
 * session, with no link or `..` followed on either side and nothing of
 * the sandbox's touched with the host's rights.
 *
 * How the sandbox's side is reached: a small holder command is started in
 * the session through its keeper (as every command, by its init), with a
 * socket of ours as its stdout. The kernel tells who wrote on it
 * (SCM_CREDENTIALS, in our pid namespace: the holder's host pid), and the
 * holder's /proc/PID/root is the sandbox's root. A child process that has
 * become the sandbox's own host user (root: the unprivileged uid the
 * sandbox runs as; rootless: that is us already) opens it and does every
 * open, mkdir and write on the sandbox's side, so its permissions, its
 * disk and inode limits and its ownership are the sandbox user's, never
 * root's. Every path on that side is resolved by openat2 with
 * RESOLVE_IN_ROOT (the top) or RESOLVE_BENEATH (below it) and
 * RESOLVE_NO_SYMLINKS: a link planted anywhere, even swapped in between
 * two steps, fails the open, since no path is ever resolved twice.
 *
 * The host's side is the caller's (this process), every path resolved as
 * all host paths moat opens (hostpath.h), and below the top folder by
 * openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS. Regular files and folders
 * only: a device, FIFO, socket or link is refused by name. Modes are kept
 * less setuid, setgid and sticky bits.
 *
 * The two processes speak over a SOCK_SEQPACKET pair: one side walks the
 * source and sends each entry (a file's content as its descriptor), the
 * other writes it and answers; the walker stops at the first refusal. */
#include "session.h"

#include "hostpath.h"
#include "syscalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* Below the top: never a link, never out of the folder. */
#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* The sandbox's top path: `/` is the sandbox's root, `..` stops there. */
#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* A copy's caps: how deep a tree and how many entries (files and folders). */
#define CP_MAX_DEPTH 64
#define CP_MAX_ENTRIES 100000

/* How long the holder may take to say where it is. Generous: the
 * machine may be loaded; it answers at once when it runs at all. */
#define HOLDER_WAIT_MS 30000

enum {
	OP_IN_START = 1, /* path: the sandbox's destination; name: the source's base name; mode: its type */
	OP_OUT_START,    /* path: the sandbox's source; answer: mode (type), name */
	OP_OUT_WALK,     /* the child walks the source it opened, sending entries */
	OP_MKDIR,        /* rel, mode */
	OP_FILE,         /* rel, mode; + the content's descriptor */
	OP_DIR_DONE,     /* rel, mode: the folder gets its mode */
	OP_END,          /* the walk is over */
	OP_REPLY,        /* err, bytes, path: why */
};

typedef struct cp_msg {
	int32_t op;
	int32_t err;
	uint32_t mode;
	uint64_t bytes;
	char path[PATH_MAX];
	char name[NAME_MAX + 1];
} cp_msg;

/* ---- pure ---- */

bool moat__session_cp_split(const char *arg, char *key, size_t key_len, const char **ret_path)
{
	const char *c = strchr(arg, ':');
	if (!c || c == arg || (size_t)(c - arg) >= key_len || c[1] != '/')
		return false;
	memcpy(key, arg, (size_t)(c - arg));
	key[c - arg] = '\0';
	if (!moat__session_name_valid(key) && !moat__keeper_id_valid(key))
		return false;
	*ret_path = c + 1;
	return true;
}

int moat__session_cp_path_check(const char *p, moat_error *err)
{
	if (!p || p[0] != '/')
		return moat_error_set(err, MOAT_EINPUT, "%s: a path in the session must be absolute", p ? p : "");
	if (strlen(p) >= PATH_MAX - NAME_MAX - 2)
		return moat_error_set(err, ENAMETOOLONG, "%.64s...: too long", p);
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return moat_error_set(err, MOAT_EINPUT, "%s: '..' is refused in a session's path", p);
		s += n;
	}
	return 0;
}

/* Whether rel (from a walker) is a path below the top: components that are
 * neither empty, nor `.`, nor `..`. "" is the top itself. */
static bool rel_valid(const char *rel)
{
	if (!rel[0])
		return true;
	for (const char *s = rel;;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[n])
			return true;
		s += n + 1;
	}
}

/* ---- transport ---- */

static int msg_send(int sock, const cp_msg *m, int fd)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		h.msg_control = u.buf;
		h.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &h, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*m) ? 0 : -EPIPE;
}

/* One message into m; its descriptor (or -1) into *fd. -EPIPE at the end. */
static int msg_recv(int sock, cp_msg *m, int *fd)
{
	*fd = -1;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	if (n != (ssize_t)sizeof(*m) || (h.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPIPE;
	}
	m->path[sizeof(m->path) - 1] = '\0';
	m->name[sizeof(m->name) - 1] = '\0';
	return 0;
}

static int reply(int sock, int e, uint64_t bytes, uint32_t mode, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int reply(int sock, int e, uint64_t bytes, uint32_t mode, const char *name, const char *fmt, ...)
{
	cp_msg m = {.op = OP_REPLY, .err = e, .bytes = bytes, .mode = mode};
	if (name)
		snprintf(m.name, sizeof(m.name), "%s", name);
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m.path, sizeof(m.path), fmt, ap);
		va_end(ap);
	}
	return msg_send(sock, &m, -1);
}

/* ---- the writing side ---- */

typedef struct writer {
	int top_dir;        /* the folder the copy lands in */
	char top_name[NAME_MAX + 1]; /* its name there */
	const char *where;  /* "in the session" or "on the host", for messages */
	const char *shown;  /* the destination as the user gave it */
	unsigned entries;
	uint64_t max_bytes; /* what the whole copy may write (0: no cap) */
	uint64_t total;     /* what it wrote so far */
} writer;

/* The folder that holds top_name/rel and the entry's own name. */
static int writer_parent(writer *w, const char *rel, const char **ret_name, char *buf, size_t len)
{
	if (!rel[0]) {
		*ret_name = w->top_name;
		return fcntl(w->top_dir, F_DUPFD_CLOEXEC, 3);
	}
	snprintf(buf, len, "%s/%s", w->top_name, rel);
	char *slash = strrchr(buf, '/');
	*slash = '\0';
	*ret_name = slash + 1;
	int fd = moat__openat2(w->top_dir, buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, BENEATH);
	return fd < 0 ? -errno : fd;
}

/* Copies in to out; -EFBIG once more than room bytes came (a file that
 * grows while it is read, or a sparse one, is dense on this side). */
static int copy_data(int in, int out, uint64_t *bytes, uint64_t room)
{
	char b[65536];
	for (;;) {
		ssize_t n = read(in, b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if ((uint64_t)n > room - *bytes)
			return -EFBIG;
		int r = moat__write_all(out, b, (size_t)n);
		if (r < 0)
			return r;
		*bytes += (uint64_t)n;
	}
}

/* Writes one entry; answers on sock. Returns 0, or -1 when the copy must
 * stop (the answer said why). */
static int writer_entry(writer *w, int sock, const cp_msg *m, int fd, uint64_t *ret_bytes)
{
	_cleanup_close_ int content = fd;
	const char *shown = m->path[0] ? m->path : ".";
	if (!rel_valid(m->path) || ++w->entries > CP_MAX_ENTRIES) {
		reply(sock, EINVAL, 0, 0, NULL, "%s: not a path below the copy's top (or over %d entries)", shown,
		      CP_MAX_ENTRIES);
		return -1;
	}
	char buf[PATH_MAX + NAME_MAX + 2];
	const char *name;
	_cleanup_close_ int dir = writer_parent(w, m->path, &name, buf, sizeof(buf));
	if (dir < 0) {
		reply(sock, -dir, 0, 0, NULL, "%s %s: its folder: %s", shown, w->where, strerror(-dir));
		return -1;
	}
	mode_t mode = m->mode & 0777;
	if (m->op == OP_MKDIR) {
		/* Made 0700 (ours to fill), and given its own mode once full. */
		if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST) {
			reply(sock, errno, 0, 0, NULL, "%s %s: mkdir: %s", shown, w->where, strerror(errno));
			return -1;
		}
		int d = moat__openat2(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, BENEATH);
		if (d < 0) {
			int e = errno;
			reply(sock, e, 0, 0, NULL, "%s %s: %s", shown, w->where,
			      e == ELOOP || e == EXDEV ? "a symbolic link (refused)" : strerror(e));
			return -1;
		}
		close(d);
		return reply(sock, 0, 0, 0, NULL, NULL) < 0 ? -1 : 0;
	}
	if (m->op == OP_DIR_DONE) {
		int d = moat__openat2(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, BENEATH);
		if (d < 0 || fchmod(d, mode) < 0) {
			int e = errno;
			if (d >= 0)
				close(d);
			reply(sock, e, 0, 0, NULL, "%s %s: chmod: %s", shown, w->where, strerror(e));
			return -1;
		}
		close(d);
		return reply(sock, 0, 0, 0, NULL, NULL) < 0 ? -1 : 0;
	}
	/* OP_FILE. O_NONBLOCK: a FIFO put in its place is not waited on; it
	 * is refused by fstat below. An existing file is overwritten (as cp
	 * does), a link in its place refused. */
	if (content < 0) {
		reply(sock, EINVAL, 0, 0, NULL, "%s: no content came along", shown);
		return -1;
	}
	_cleanup_close_ int out = moat__openat2(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
						0600, BENEATH);
	if (out < 0) {
		int e = errno;
		reply(sock, e, 0, 0, NULL, "%s %s: %s", shown, w->where,
		      e == ELOOP || e == EXDEV ? "a symbolic link (refused)" : strerror(e));
		return -1;
	}
	struct stat st;
	if (fstat(out, &st) < 0 || !S_ISREG(st.st_mode)) {
		reply(sock, EINVAL, 0, 0, NULL, "%s %s: not a regular file (refused)", shown, w->where);
		return -1;
	}
	uint64_t bytes = 0;
	int r = 0;
	if (ftruncate(out, 0) < 0)
		r = -errno;
	if (r >= 0)
		r = copy_data(content, out, &bytes, w->max_bytes ? w->max_bytes - w->total : UINT64_MAX);
	/* Never a setuid or setgid bit, whatever the source had. */
	if (r >= 0 && fchmod(out, mode) < 0)
		r = -errno;
	if (r < 0) {
		/* Half a file is worse than none (a limit hit, above all): the
		 * one this copy made or truncated goes. */
		(void)unlinkat(dir, name, 0);
		if (r == -EFBIG)
			reply(sock, EFBIG, bytes, 0, NULL, "%s %s: the copy is over its cap of %llu bytes (refused)",
			      shown, w->where, (unsigned long long)w->max_bytes);
		else
			reply(sock, -r, bytes, 0, NULL, "%s %s: %s", shown, w->where, strerror(-r));
		return -1;
	}
	w->total += bytes;
	*ret_bytes = bytes;
	return reply(sock, 0, bytes, 0, NULL, NULL) < 0 ? -1 : 0;
}

/* Serves entries from sock until OP_END: 0, or -1 with the walker's reason
 * in why; -2 when this side refused an entry (its answer said why). */
static int writer_serve(writer *w, int sock, moat_session_cp_stats *st, char *why, size_t len)
{
	for (;;) {
		cp_msg m;
		int fd;
		if (msg_recv(sock, &m, &fd) < 0) {
			snprintf(why, len, "the other side of the copy went away");
			return -1;
		}
		if (m.op == OP_END) {
			if (fd >= 0)
				close(fd);
			if (!m.err)
				return 0;
			snprintf(why, len, "%s", m.path);
			return -1;
		}
		if (m.op != OP_MKDIR && m.op != OP_FILE && m.op != OP_DIR_DONE) {
			if (fd >= 0)
				close(fd);
			reply(sock, EPROTO, 0, 0, NULL, "unexpected request %d", m.op);
			return -2;
		}
		uint64_t bytes = 0;
		if (writer_entry(w, sock, &m, fd, &bytes) < 0)
			return -2;
		if (m.op == OP_MKDIR)
			st->dirs++;
		else if (m.op == OP_FILE) {
			st->files++;
			st->bytes += bytes;
		}
	}
}

/* ---- the walking side ---- */

typedef struct walker {
	int sock;
	const char *where;
	char why[512]; /* a refusal's reason, from us or the writer */
	int err;
	moat_session_cp_stats *st;
} walker;

/* Sends an entry and waits for its answer. */
static int walker_send(walker *w, int op, const char *rel, mode_t mode, int fd)
{
	cp_msg m = {.op = op, .mode = mode};
	snprintf(m.path, sizeof(m.path), "%s", rel);
	if (msg_send(w->sock, &m, fd) < 0) {
		w->err = EPIPE;
		snprintf(w->why, sizeof(w->why), "the other side of the copy went away");
		return -1;
	}
	cp_msg a;
	int afd;
	if (msg_recv(w->sock, &a, &afd) < 0 || a.op != OP_REPLY) {
		if (afd >= 0)
			close(afd);
		w->err = EPIPE;
		snprintf(w->why, sizeof(w->why), "the other side of the copy went away");
		return -1;
	}
	if (a.err) {
		w->err = a.err;
		snprintf(w->why, sizeof(w->why), "%s", a.path);
		return -1;
	}
	if (op == OP_FILE) {
		w->st->files++;
		w->st->bytes += a.bytes;
	} else if (op == OP_MKDIR)
		w->st->dirs++;
	return 0;
}

static int walker_refuse(walker *w, int e, const char *rel, const char *what)
{
	w->err = e;
	snprintf(w->why, sizeof(w->why), "%s %s: %s", rel[0] ? rel : "the source", w->where, what);
	return -1;
}

/* What fd (opened O_NOFOLLOW) is, as a refusal's text, or NULL when it may
 * be copied. */
static const char *kind_refused(const struct stat *st)
{
	if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
		return NULL;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "a device (refused)";
	if (S_ISFIFO(st->st_mode))
		return "a FIFO (refused)";
	if (S_ISSOCK(st->st_mode))
		return "a socket (refused)";
	return "not a regular file or folder (refused)";
}

/* Walks fd (a file or folder already opened without following a link)
 * named rel below the top, sending its entries. */
static int walk(walker *w, int fd, const char *rel, int depth)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return walker_refuse(w, errno, rel, strerror(errno));
	const char *no = kind_refused(&st);
	if (no)
		return walker_refuse(w, EINVAL, rel, no);
	if (S_ISREG(st.st_mode))
		return walker_send(w, OP_FILE, rel, st.st_mode & 0777, fd);
	if (depth >= CP_MAX_DEPTH)
		return walker_refuse(w, ELOOP, rel, "deeper than the copy's cap");
	if (walker_send(w, OP_MKDIR, rel, st.st_mode & 0777, -1) < 0)
		return -1;
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return walker_refuse(w, errno, rel, "read the folder");
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (errno = 0, e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= (int)sizeof(sub) - NAME_MAX) {
			r = walker_refuse(w, ENAMETOOLONG, rel, "a path too long");
			break;
		}
		/* O_NONBLOCK: a FIFO is not waited on (and is refused). */
		int c = moat__openat2(fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0, BENEATH);
		if (c < 0) {
			int er = errno;
			r = walker_refuse(w, er, sub, er == ELOOP || er == EXDEV ? "a symbolic link (refused)" : strerror(er));
			break;
		}
		/* A regular file's content is read as it is, without O_NONBLOCK
		 * mattering: it never blocks. */
		r = walk(w, c, sub, depth + 1);
		close(c);
	}
	closedir(d);
	if (r == 0)
		r = walker_send(w, OP_DIR_DONE, rel, st.st_mode & 0777, -1);
	return r;
}

/* ---- the sandbox's side (the child) ---- */

typedef struct sandbox_side {
	int root; /* the sandbox's root */
	int sock;
	int out_src; /* copy out: the source, opened */
} sandbox_side;

static int open_in_root(int root, const char *path, int flags)
{
	int fd = moat__openat2(root, path, (uint64_t)flags | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0, IN_ROOT);
	return fd < 0 ? -errno : fd;
}

static const char *open_error(int e)
{
	return e == ELOOP || e == EXDEV ? "a symbolic link on the way (refused)" : strerror(e);
}

/* Where a copy to dst (of a source named name, a folder or not) lands:
 * into dst when it is a folder, else dst itself, in its parent folder. */
static int land_in_sandbox(int root, const char *dst, const char *name, bool src_dir, writer *w, char *why,
			   size_t len)
{
	int fd = open_in_root(root, dst, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		w->top_dir = fd;
		snprintf(w->top_name, sizeof(w->top_name), "%s", name);
		return 0;
	}
	if (fd != -ENOENT && fd != -ENOTDIR) {
		snprintf(why, len, "%s in the session: %s", dst, open_error(-fd));
		return fd;
	}
	(void)src_dir;
	char d[PATH_MAX], b[PATH_MAX];
	snprintf(d, sizeof(d), "%s", dst);
	snprintf(b, sizeof(b), "%s", dst);
	const char *base = basename(b);
	if (!base[0] || strcmp(base, "/") == 0 || strcmp(base, ".") == 0) {
		snprintf(why, len, "%s in the session: not a name to copy to", dst);
		return -EINVAL;
	}
	fd = open_in_root(root, dirname(d), O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		snprintf(why, len, "%s in the session: its folder: %s", dst, open_error(-fd));
		return fd;
	}
	w->top_dir = fd;
	snprintf(w->top_name, sizeof(w->top_name), "%s", base);
	return 0;
}

static int child_serve(sandbox_side *sb, moat_session_cp_stats *st)
{
	for (;;) {
		cp_msg m;
		int fd;
		if (msg_recv(sb->sock, &m, &fd) < 0)
			return 0;
		if (fd >= 0)
			close(fd);
		if (m.op == OP_IN_START) {
			writer w = {.top_dir = -1, .where = "in the session", .shown = m.path};
			char why[600];
			int r = land_in_sandbox(sb->root, m.path, m.name, S_ISDIR(m.mode), &w, why, sizeof(why));
			if (r < 0) {
				reply(sb->sock, -r, 0, 0, NULL, "%s", why);
				continue;
			}
			reply(sb->sock, 0, 0, 0, NULL, NULL);
			char ignored[8];
			(void)writer_serve(&w, sb->sock, st, ignored, sizeof(ignored));
			close(w.top_dir);
		} else if (m.op == OP_OUT_START) {
			int f = open_in_root(sb->root, m.path, O_RDONLY | O_NONBLOCK);
			struct stat s;
			if (f < 0) {
				reply(sb->sock, -f, 0, 0, NULL, "%s in the session: %s", m.path, open_error(-f));
				continue;
			}
			if (fstat(f, &s) < 0 || kind_refused(&s)) {
				reply(sb->sock, EINVAL, 0, 0, NULL, "%s in the session: %s", m.path,
				      kind_refused(&s) ? kind_refused(&s) : strerror(errno));
				close(f);
				continue;
			}
			char b[PATH_MAX];
			snprintf(b, sizeof(b), "%s", m.path);
			const char *base = basename(b);
			if (sb->out_src >= 0)
				close(sb->out_src);
			sb->out_src = f;
			reply(sb->sock, 0, 0, s.st_mode, strcmp(base, "/") == 0 ? "root" : base, NULL);
		} else if (m.op == OP_OUT_WALK && sb->out_src >= 0) {
			walker w = {.sock = sb->sock, .where = "in the session", .st = st};
			cp_msg end = {.op = OP_END};
			if (walk(&w, sb->out_src, "", 0) < 0) {
				end.err = w.err ? w.err : EIO;
				snprintf(end.path, sizeof(end.path), "%s", w.why);
			}
			msg_send(sb->sock, &end, -1);
		} else
			reply(sb->sock, EPROTO, 0, 0, NULL, "unexpected request %d", m.op);
	}
}

/* The child: becomes the sandbox's host user, opens its root through the
 * holder, and serves. Never returns. */
static void __attribute__((noreturn)) child_main(int sock, pid_t holder, int pidfd, uid_t uid, gid_t gid)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* The root is opened before the user is changed: as root, the holder
	 * is in a user namespace root owns, which the sandbox's uid may not
	 * look into; and /proc/PID/root is the kernel's link, not a path the
	 * sandbox has any say in. Everything below it is then resolved with
	 * the sandbox user's rights. */
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int)holder);
	int root = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	/* The holder lived from before its pid was read until after its root
	 * was opened: that root is the sandbox's, not a process's that took
	 * its pid. */
	struct pollfd pf = {.fd = pidfd, .events = POLLIN};
	if (root < 0 || poll(&pf, 1, 0) != 0) {
		reply(sock, root < 0 ? e : ESRCH, 0, 0, NULL, "the session's root: %s",
		      root < 0 ? strerror(e) : "its holder ended");
		_exit(1);
	}
	if (uid != geteuid() || gid != getegid()) {
		if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
			reply(sock, errno, 0, 0, NULL, "become the sandbox's user (%u): %s", (unsigned)uid, strerror(errno));
			_exit(1);
		}
	}
	umask(0);
	close(pidfd);
	reply(sock, 0, 0, 0, NULL, NULL);
	sandbox_side sb = {.root = root, .sock = sock, .out_src = -1};
	moat_session_cp_stats st = {0};
	_exit(child_serve(&sb, &st) < 0 ? 1 : 0);
}

/* ---- the holder ---- */

/* The holder's host pid, uid and gid, from the first bytes it writes on
 * sock (SO_PASSCRED: the kernel's word, in our pid namespace). */
static int holder_creds(int sock, struct ucred *ret, moat_error *err)
{
	struct pollfd p = {.fd = sock, .events = POLLIN};
	int n = poll(&p, 1, HOLDER_WAIT_MS);
	if (n <= 0)
		return moat_error_set(err, ETIMEDOUT, "the session's holder did not start");
	char b[16];
	struct iovec iov = {.iov_base = b, .iov_len = sizeof(b)};
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t k = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);
	bool got = false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&h); k > 0 && c; c = CMSG_NXTHDR(&h, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			memcpy(ret, CMSG_DATA(c), sizeof(*ret));
			got = true;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < m; i++) {
				int f;
				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(f);
			}
		}
	}
	if (k <= 0 || !got || ret->pid <= 0)
		return moat_error_set(err, ENOENT,
				      "the session's holder (/bin/sh in the sandbox) did not start: a copy needs it");
	return 0;
}

/* Whether host pid pid is, in its innermost pid namespace, inner (and
 * lives in one below ours). */
static bool holder_is(pid_t pid, pid_t inner)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	_cleanup_fclose_ FILE *f = fopen(p, "re");
	char line[256];
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		long v[8];
		int n = 0;
		char *s = line + 6, *end;
		while (n < 8) {
			long x = strtol(s, &end, 10);
			if (end == s)
				break;
			v[n++] = x;
			s = end;
		}
		return n >= 2 && v[0] == pid && v[n - 1] == inner;
	}
	return false;
}

/* ---- the front ---- */

typedef struct cp_run {
	moat_keeper *k;
	int hold_in;   /* the holder's stdin: it ends when this closes */
	int sock;      /* to the child */
	pid_t child;
} cp_run;

static void run_done(cp_run *r)
{
	if (r->sock >= 0)
		close(r->sock);
	if (r->hold_in >= 0)
		close(r->hold_in);
	if (r->child > 0) {
		int status;
		while (waitpid(r->child, &status, 0) < 0 && errno == EINTR)
			;
	}
	moat_keeper_close(r->k);
}

static int run_start(const moat_session_info *s, cp_run *run, moat_error *err)
{
	*run = (cp_run){.hold_in = -1, .sock = -1, .child = -1};
	if (moat_keeper_connect(s->socket, &run->k, err) < 0 || strcmp(moat_keeper_sandbox_id(run->k), s->id) != 0) {
		moat_keeper_close(run->k);
		run->k = NULL;
		return moat_error_set(err, ESRCH, "session %s: not running", s->name[0] ? s->name : s->id);
	}
	int sp[2], in[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return moat_error_errno(err, errno, "socketpair");
	_cleanup_close_ int hold_out = sp[0];
	_cleanup_close_ int hold_out_w = sp[1];
	int one = 1;
	if (setsockopt(hold_out, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
		return moat_error_errno(err, errno, "SO_PASSCRED");
	if (pipe2(in, O_CLOEXEC) < 0)
		return moat_error_errno(err, errno, "pipe");
	_cleanup_close_ int in_r = in[0];
	run->hold_in = in[1];
	/* The holder: says it is there, then waits for its stdin to close.
	 * Attached: if this process dies, the keeper kills it. */
	char *argv[] = {"/bin/sh", "-c", "echo; read _", NULL};
	moat_spawn_spec spec;
	moat_spawn_spec_init(&spec);
	spec.argv = argv;
	spec.stdin_fd = in_r;
	spec.stdout_fd = hold_out_w;
	moat_command cmd;
	int r = moat_keeper_spawn_attached(run->k, &spec, true, &cmd, err);
	if (r < 0)
		return r;
	close(TAKE_FD(hold_out_w));
	struct ucred cr;
	if ((r = holder_creds(hold_out, &cr, err)) < 0)
		return r;
	int pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
	if (pidfd < 0)
		return moat_error_errno(err, errno, "pidfd_open of the holder");
	if (!holder_is(cr.pid, cmd.pid)) {
		close(pidfd);
		return moat_error_set(err, ESRCH, "the session's holder is not where the kernel said");
	}
	int cs[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cs) < 0) {
		close(pidfd);
		return moat_error_errno(err, errno, "socketpair");
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(pidfd);
		close(cs[0]);
		close(cs[1]);
		return moat_error_errno(err, errno, "fork");
	}
	if (pid == 0) {
		close(cs[0]);
		child_main(cs[1], cr.pid, pidfd, cr.uid, cr.gid);
	}
	close(pidfd);
	close(cs[1]);
	run->sock = cs[0];
	run->child = pid;
	cp_msg a;
	int afd;
	if (msg_recv(run->sock, &a, &afd) < 0)
		return moat_error_set(err, EIO, "the sandbox's side ended before it started");
	if (afd >= 0)
		close(afd);
	if (a.err)
		return moat_error_set_said(err, a.err, "%s", a.path);
	return 0;
}

/* Copy in: the host's src, walked here, written by the child. */
static int copy_in(cp_run *run, const char *src, const char *dst, moat_session_cp_stats *st, moat_error *err)
{
	_cleanup_close_ int fd = moat__hostpath_open("cp:", src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, err);
	if (fd < 0)
		return fd;
	struct stat s;
	if (fstat(fd, &s) < 0)
		return moat_error_errno(err, errno, "%s", src);
	const char *no = kind_refused(&s);
	if (no)
		return moat_error_set(err, MOAT_EINPUT, "%s: %s", src, no);
	char b[PATH_MAX];
	snprintf(b, sizeof(b), "%s", src);
	cp_msg m = {.op = OP_IN_START, .mode = s.st_mode};
	snprintf(m.path, sizeof(m.path), "%s", dst);
	snprintf(m.name, sizeof(m.name), "%s", basename(b));
	if (!m.name[0] || strcmp(m.name, "/") == 0 || strcmp(m.name, ".") == 0 || strcmp(m.name, "..") == 0)
		return moat_error_set(err, EINVAL, "%s: name the file or folder to copy", src);
	cp_msg a;
	int afd;
	if (msg_send(run->sock, &m, -1) < 0 || msg_recv(run->sock, &a, &afd) < 0)
		return moat_error_set(err, EIO, "the sandbox's side went away");
	if (afd >= 0)
		close(afd);
	if (a.err)
		return moat_error_set_said(err, a.err, "%s", a.path);
	walker w = {.sock = run->sock, .where = "on the host", .st = st};
	int r = walk(&w, fd, "", 0);
	cp_msg end = {.op = OP_END};
	(void)msg_send(run->sock, &end, -1);
	if (r < 0)
		return moat_error_set_said(err, w.err ? w.err : EIO, "%s", w.why);
	return 0;
}

/* Where a copy out lands on the host: into dst when it is a folder, else
 * dst itself in its folder. */
static int land_on_host(const char *dst, const char *name, writer *w, moat_error *err)
{
	moat_error e2 = {0};
	int fd = moat__hostpath_open("cp:", dst, O_RDONLY | O_DIRECTORY, 0, &e2);
	if (fd >= 0) {
		w->top_dir = fd;
		snprintf(w->top_name, sizeof(w->top_name), "%s", name);
		return 0;
	}
	if (fd != -ENOENT && fd != -ENOTDIR) {
		*err = e2;
		return fd;
	}
	char d[PATH_MAX], b[PATH_MAX];
	snprintf(d, sizeof(d), "%s", dst);
	snprintf(b, sizeof(b), "%s", dst);
	const char *base = basename(b);
	if (!base[0] || strcmp(base, "/") == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return moat_error_set(err, EINVAL, "%s: not a name to copy to", dst);
	fd = moat__hostpath_open("cp:", dirname(d), O_RDONLY | O_DIRECTORY, 0, err);
	if (fd < 0)
		return fd;
	w->top_dir = fd;
	snprintf(w->top_name, sizeof(w->top_name), "%s", base);
	return 0;
}

/* Copy out: the sandbox's src, walked by the child, written here. */
static int copy_out(cp_run *run, const char *src, const char *dst, const moat_session_cp_caps *caps,
		    moat_session_cp_stats *st, moat_error *err)
{
	cp_msg m = {.op = OP_OUT_START};
	snprintf(m.path, sizeof(m.path), "%s", src);
	cp_msg a;
	int afd;
	if (msg_send(run->sock, &m, -1) < 0 || msg_recv(run->sock, &a, &afd) < 0)
		return moat_error_set(err, EIO, "the sandbox's side went away");
	if (afd >= 0)
		close(afd);
	if (a.err)
		return moat_error_set_said(err, a.err, "%s", a.path);
	/* The source is open in the child: what it is cannot change now. */
	if (caps && caps->file_only && !S_ISREG(a.mode))
		return moat_error_set(err, MOAT_EINPUT, "%s in the session: not a regular file (a file is asked for)",
				      src);
	writer w = {.top_dir = -1, .where = "on the host", .shown = dst, .max_bytes = caps ? caps->max_bytes : 0};
	int r = land_on_host(dst, a.name, &w, err);
	if (r < 0)
		return r;
	cp_msg go = {.op = OP_OUT_WALK};
	if (msg_send(run->sock, &go, -1) < 0) {
		close(w.top_dir);
		return moat_error_set(err, EIO, "the sandbox's side went away");
	}
	/* Host files are the caller's, with the source's mode less setuid,
	 * setgid and sticky bits. */
	char why[PATH_MAX + 64];
	r = writer_serve(&w, run->sock, st, why, sizeof(why));
	close(w.top_dir);
	if (r == -1)
		return moat_error_set_said(err, EINVAL, "%s", why);
	if (r == -2) {
		/* The refusal was answered to the walker, which ends with its
		 * END carrying the reason. */
		cp_msg end;
		int efd;
		while (msg_recv(run->sock, &end, &efd) == 0) {
			if (efd >= 0)
				close(efd);
			if (end.op == OP_END)
				return moat_error_set_said(err, end.err ? end.err : EIO, "%s", end.path);
			reply(run->sock, ECANCELED, 0, 0, NULL, "cancelled");
		}
		return moat_error_set(err, EIO, "the sandbox's side went away");
	}
	return 0;
}

int moat_session_cp(const moat_session_info *s, bool into, const char *host_path, const char *sandbox_path,
		    moat_session_cp_stats *ret, moat_error *err)
{
	return moat_session_cp_capped(s, into, host_path, sandbox_path, NULL, ret, err);
}

int moat_session_cp_capped(const moat_session_info *s, bool into, const char *host_path, const char *sandbox_path,
			   const moat_session_cp_caps *caps, moat_session_cp_stats *ret, moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	int r = moat__session_cp_path_check(sandbox_path, err);
	if (r < 0)
		return r;
	cp_run run;
	r = run_start(s, &run, err);
	if (r >= 0)
		r = into ? copy_in(&run, host_path, sandbox_path, ret, err)
			 : copy_out(&run, sandbox_path, host_path, caps, ret, err);
	if (run.k) {
		/* The session's log says what moved, and why a copy stopped
		 * (its keeper writes it: one writer, one chain). */
		char why[MOAT_ERROR_MAX + 64];
		moat_error e2 = {0};
		(void)moat_keeper_copied(run.k, into, host_path, sandbox_path, ret->files, ret->dirs, ret->bytes,
					 r < 0 ? moat_error_format(err, why, sizeof(why)) : NULL, &e2);
	}
	run_done(&run);
	return r;
}
