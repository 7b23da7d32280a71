#include "fanwatch.h"

#include "audit.h"
#include "util.h"

#include <fcntl.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>

#define FANWATCH_MASK (FAN_OPEN | FAN_OPEN_EXEC | FAN_CLOSE_WRITE)

/* File systems whose opens say nothing about the command's files, or whose
 * nodes the supervisor must not open on its behalf (a device, a terminal). */
static bool skipped_fstype(const char *t)
{
	static const char *const skip[] = {"proc", "sysfs", "devpts", "devtmpfs", "mqueue", "cgroup", "cgroup2",
					   "securityfs", "debugfs", "tracefs", "bpf", "fusectl", "binfmt_misc"};
	for (size_t i = 0; i < ELEMENTSOF(skip); i++)
		if (strcmp(t, skip[i]) == 0)
			return true;
	return false;
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

char **moat__fanwatch_mounts(const char *mountinfo)
{
	char **v = calloc(1, sizeof(char *));
	_cleanup_free_ char *copy = strdup(mountinfo);
	if (!v || !copy) {
		free(v);
		return NULL;
	}
	char *save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		char *f[5] = {NULL};
		char *s2 = NULL, *p = l;
		for (int i = 0; i < 5; i++, p = NULL)
			f[i] = strtok_r(p, " ", &s2);
		char *dash = f[4] ? strstr(s2 ? s2 : "", " - ") : NULL;
		if (!f[4] || !dash)
			continue;
		char fstype[64] = "";
		sscanf(dash + 3, "%63s", fstype);
		unescape(f[4]);
		if (skipped_fstype(fstype) || moat__startswith(f[4], "/dev") || moat__startswith(f[4], "/proc") ||
		    moat__startswith(f[4], "/sys"))
			continue;
		if (moat__strv_push(&v, f[4]) < 0) {
			moat__strv_free(v);
			return NULL;
		}
	}
	return v;
}

int moat__fanwatch_open(pid_t pid)
{
	/* The descriptors the events bring are opened in this process:
	 * non-blocking, so a FIFO in /tmp cannot hold the reader up. */
	_cleanup_close_ int fd =
		fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_LARGEFILE);
	if (fd < 0)
		return moat__neg_errno();
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	_cleanup_free_ char *mi = NULL;
	int r = moat__read_file_at(AT_FDCWD, p, 1 << 20, &mi);
	if (r < 0)
		return r;
	_cleanup_strv_free_ char **mounts = moat__fanwatch_mounts(mi);
	if (!mounts)
		return -ENOMEM;
	/* The marks are placed while the command's process is stopped at its
	 * first execve: the mounts are final and nothing of the command has
	 * run, so no link it planted can be on the way. */
	size_t marked = 0;
	for (char **m = mounts; *m; m++) {
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "/proc/%d/root%s", (int)pid, *m) < 0)
			return -ENOMEM;
		if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FANWATCH_MASK, AT_FDCWD, path) == 0)
			marked++;
	}
	if (!marked)
		return -ENOENT;
	return TAKE_FD(fd);
}

static ino_t pidns_of(pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid);
	return stat(p, &st) == 0 ? st.st_ino : 0;
}

static void emit_one(moat_fanwatch_emit emit, void *ctx, const char *type, const char *event, const char *path,
		     pid_t pid)
{
	json_t *f = json_object();
	if (!f)
		return;
	json_object_set_new(f, "path", moat_audit_bytes_json(path));
	json_object_set_new(f, "event", json_string(event));
	json_object_set_new(f, "source", json_string("fanotify"));
	json_object_set_new(f, "host_pid", json_integer(pid));
	emit(ctx, type, f);
}

unsigned moat__fanwatch_drain(int fd, ino_t pidns_ino, moat_fanwatch_emit emit, void *ctx)
{
	unsigned lost = 0;
	char buf[8192] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		struct fanotify_event_metadata *m = (struct fanotify_event_metadata *)buf;
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			if (m->vers != FANOTIFY_METADATA_VERSION)
				continue;
			if (m->mask & FAN_Q_OVERFLOW) {
				lost++;
				continue;
			}
			if (m->fd < 0)
				continue;
			char link[64], path[4096];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", m->fd);
			ssize_t k = readlink(link, path, sizeof(path) - 1);
			close(m->fd);
			ino_t ns = pidns_of(m->pid);
			/* A process that is gone cannot be placed: its event
			 * stays, the mounts being the sandbox's own. */
			if (k <= 0 || (ns && pidns_ino && ns != pidns_ino))
				continue;
			path[k] = '\0';
			if (m->mask & FAN_OPEN_EXEC)
				emit_one(emit, ctx, "exec", "open_exec", path, m->pid);
			else if (m->mask & FAN_OPEN)
				emit_one(emit, ctx, "file.open", "open", path, m->pid);
			if (m->mask & FAN_CLOSE_WRITE)
				emit_one(emit, ctx, "file.write", "close_write", path, m->pid);
		}
	}
	return lost;
}
