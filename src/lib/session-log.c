/* A session's audit log (session.h): one hash-chained log per session,
 * written by its keeper alone (audit.c), BASE/session-logs/ID.log unless
 * create was given --audit FILE. Made under a temporary name before the
 * keeper (which opens it) and renamed to the id it gets; read here for
 * `logs`, `show` and create's isolation report. */
#include "session.h"

#include "hostpath.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#define LOG_LEAF "session-logs"
/* A line of the log longer than this is not printed whole (audit.c caps
 * its events well below it). */
#define LINE_MAX_BYTES (1 << 20)

int moat__session_log_new(char *ret_path, size_t len, char *ret_name, size_t name_len, moat_error *err)
{
	char base[PATH_MAX];
	_cleanup_close_ int bfd = moat__runtime_base_open(LOG_LEAF, base, sizeof(base), err);
	if (bfd < 0)
		return bfd;
	char rnd[25];
	if (moat__random_hex(12, rnd) < 0)
		return moat_error_errno(err, errno, "session log: random name");
	snprintf(ret_name, name_len, ".new-%s.log", rnd);
	if ((size_t)snprintf(ret_path, len, "%s/%s", base, ret_name) >= len)
		return moat_error_set(err, ENAMETOOLONG, "session log %s: too long", base);
	return 0;
}

int moat__session_log_adopt(const char *tmp_name, const char *id, char *ret_path, size_t len, moat_error *err)
{
	char base[PATH_MAX], name[64];
	_cleanup_close_ int bfd = moat__runtime_base_open(LOG_LEAF, base, sizeof(base), err);
	if (bfd < 0)
		return bfd;
	snprintf(name, sizeof(name), "%s.log", id);
	/* The keeper holds the file open: its writes follow the rename. */
	if (renameat(bfd, tmp_name, bfd, name) < 0)
		return moat_error_errno(err, errno, "session log %s/%s: name it %s", base, tmp_name, name);
	snprintf(ret_path, len, "%s/%s", base, name);
	return 0;
}

int moat__session_log_remove(const char *name, moat_error *err)
{
	char base[PATH_MAX], file[64];
	_cleanup_close_ int bfd = moat__runtime_base_open(LOG_LEAF, base, sizeof(base), err);
	if (bfd < 0)
		return bfd;
	snprintf(file, sizeof(file), "%s%s", name, strncmp(name, ".new-", 5) == 0 ? "" : ".log");
	if (unlinkat(bfd, file, 0) < 0 && errno != ENOENT)
		return moat_error_errno(err, errno, "session log %s/%s: remove it", base, file);
	return 0;
}

bool moat__session_log_type_matches(const char *type, const char *want)
{
	if (!want)
		return true;
	size_t n = strlen(want);
	/* "command" is command.start and command.end; "session.end" itself. */
	return strncmp(type, want, n) == 0 && (type[n] == '\0' || type[n] == '.');
}

/* Reads the whole lines that are in fd from *off on, calling each with a
 * line (NUL-terminated, without its newline) and its event's type; a
 * partial last line waits for the rest. Returns what each returned last
 * (nonzero stops the read), or a negative errno. */
typedef int (*line_fn)(const char *line, size_t len, const char *type, void *arg);
static int read_lines(int fd, off_t *off, line_fn each, void *arg)
{
	_cleanup_free_ char *buf = NULL;
	size_t have = 0, cap = 0;
	for (;;) {
		if (cap - have < 65536) {
			if (cap >= LINE_MAX_BYTES * 2)
				return -E2BIG;
			size_t nc = cap ? cap * 2 : 131072;
			char *nb = realloc(buf, nc);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = nc;
		}
		ssize_t n = pread(fd, buf + have, cap - have - 1, *off + (off_t)have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			*nl = '\0';
			json_t *o = json_loadb(start, (size_t)(nl - start), 0, NULL);
			json_t *t = o ? json_object_get(o, "type") : NULL;
			int r = each(start, (size_t)(nl - start), json_is_string(t) ? json_string_value(t) : "", arg);
			json_decref(o);
			*off += nl + 1 - start;
			start = nl + 1;
			if (r)
				return r;
		}
		size_t rest = have - (size_t)(start - buf);
		memmove(buf, start, rest);
		have = rest;
		if (have >= LINE_MAX_BYTES)
			return -E2BIG;
	}
	return 0;
}

typedef struct print_state {
	const char *type;
	bool ended;
} print_state;

static int print_line(const char *line, size_t len, const char *type, void *arg)
{
	print_state *p = arg;
	if (strcmp(type, "session.end") == 0)
		p->ended = true;
	if (moat__session_log_type_matches(type, p->type)) {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
	}
	return 0;
}

static int open_log(const moat_session_info *s, moat_error *err)
{
	if (!s->audit_log[0])
		return moat_error_set(err, ENOENT, "session %s: it has no audit log (made before sessions had one)", s->id);
	return moat__hostpath_open("session log:", s->audit_log, O_RDONLY | O_NOFOLLOW, 0, err);
}

int moat_session_logs(const moat_session_info *s, const char *type, bool follow, moat_error *err)
{
	_cleanup_close_ int fd = open_log(s, err);
	if (fd < 0)
		return fd;
	/* Followed by inotify, not by polling; the keeper's socket says when
	 * it is gone (killed: no session.end comes). */
	_cleanup_close_ int in = follow ? inotify_init1(IN_CLOEXEC | IN_NONBLOCK) : -1;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (follow && (in < 0 || inotify_add_watch(in, proc, IN_MODIFY | IN_CLOSE_WRITE) < 0))
		return moat_error_errno(err, errno, "session log %s: watch it", s->audit_log);
	moat_keeper *k = NULL;
	if (follow) {
		moat_error e2 = {0};
		if (moat_keeper_connect(s->socket, &k, &e2) < 0 || strcmp(moat_keeper_sandbox_id(k), s->id) != 0) {
			moat_keeper_close(k);
			k = NULL;
		}
	}
	off_t off = 0;
	print_state p = {.type = type};
	int r;
	for (;;) {
		r = read_lines(fd, &off, print_line, &p);
		fflush(stdout);
		if (r < 0 || !follow || p.ended || !k)
			break;
		struct pollfd pf[2] = {{.fd = in, .events = POLLIN}, {.fd = moat_keeper_fd(k), .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		char ev[4096];
		while (read(in, ev, sizeof(ev)) > 0)
			;
		if (pf[1].revents) {
			/* The keeper is gone: what it wrote last, then the end. */
			r = read_lines(fd, &off, print_line, &p);
			fflush(stdout);
			break;
		}
	}
	moat_keeper_close(k);
	if (r < 0)
		return moat_error_errno(err, -r, "session log %s: read it", s->audit_log);
	return 0;
}

typedef struct summary {
	moat_session_log_summary *ret;
} summary;

static int sum_line(const char *line, size_t len, const char *type, void *arg)
{
	moat_session_log_summary *r = ((summary *)arg)->ret;
	json_t *o = json_loadb(line, len, 0, NULL);
	if (!o)
		return 0;
	r->events++;
	json_int_t seq = 0;
	const char *time = NULL, *prev = NULL;
	if (json_unpack(o, "{s:I, s:s, s:s}", "seq", &seq, "time", &time, "prev", &prev) == 0) {
		r->head_seq = (uint64_t)seq;
		snprintf(r->head_type, sizeof(r->head_type), "%s", type);
		snprintf(r->head_time, sizeof(r->head_time), "%s", time);
		snprintf(r->head_prev, sizeof(r->head_prev), "%s", prev);
	}
	if (strcmp(type, "session.start") == 0 && !r->isolation) {
		json_t *iso = json_object_get(o, "isolation");
		if (iso)
			r->isolation = json_incref(iso);
	} else if (strcmp(type, "command.start") == 0)
		r->commands++;
	else if (strcmp(type, "command.end") == 0) {
		json_int_t cpu = 0, wall = 0;
		if (json_unpack(o, "{s:I, s:I}", "cpu_ms", &cpu, "wall_ms", &wall) == 0 && cpu >= 0) {
			r->cpu_ms += (uint64_t)cpu;
			r->wall_ms += (uint64_t)(wall > 0 ? wall : 0);
		}
	} else if (strcmp(type, "session.cp") == 0) {
		json_int_t bytes = 0;
		const char *dir = "";
		if (json_unpack(o, "{s:s, s:I}", "direction", &dir, "bytes", &bytes) == 0 && bytes >= 0)
			(strcmp(dir, "in") == 0 ? &r->cp_in_bytes : &r->cp_out_bytes)[0] += (uint64_t)bytes;
		r->copies++;
	} else if (strcmp(type, "limit") == 0 || strncmp(type, "limit.", 6) == 0)
		r->limit_hits++;
	json_decref(o);
	return 0;
}

int moat_session_log_summarize(const moat_session_info *s, moat_session_log_summary *ret, moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	_cleanup_close_ int fd = open_log(s, err);
	if (fd < 0)
		return fd;
	off_t off = 0;
	summary sm = {.ret = ret};
	int r = read_lines(fd, &off, sum_line, &sm);
	if (r < 0) {
		json_decref(ret->isolation);
		ret->isolation = NULL;
		return moat_error_errno(err, -r, "session log %s: read it", s->audit_log);
	}
	return 0;
}
