#include "filetrail.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>

/* Caps on what is read from the sandboxed process per call. */
#define TRAIL_PATH_MAX 4096
#define TRAIL_ARGV_MAX 256
#define TRAIL_ARG_MAX 4096
/* Exec attempts held back before session.start (a PATH search makes one
 * per directory). */
#define TRAIL_PENDING_MAX 32
/* How long the thread waits for session.start before writing anyway. */
#define TRAIL_START_WAIT_S 10

typedef enum call_kind {
	K_EXECVE,
	K_EXECVEAT,
	K_OPEN,
	K_OPENAT,
	K_OPENAT2,
	K_CREAT,
	K_UNLINK,
	K_UNLINKAT,
	K_RMDIR,
	K_RENAME,
	K_RENAMEAT,
	K_RENAMEAT2,
	_K_MAX,
} call_kind;

static const char *const call_names[_K_MAX] = {
	[K_EXECVE] = "execve",     [K_EXECVEAT] = "execveat", [K_OPEN] = "open",
	[K_OPENAT] = "openat",     [K_OPENAT2] = "openat2",   [K_CREAT] = "creat",
	[K_UNLINK] = "unlink",     [K_UNLINKAT] = "unlinkat", [K_RMDIR] = "rmdir",
	[K_RENAME] = "rename",     [K_RENAMEAT] = "renameat", [K_RENAMEAT2] = "renameat2",
};

/* Architectures watched besides the native one: a 64-bit program can make
 * 32-bit calls (int 0x80) and x32 ones, and those must not slip past. */
static const uint32_t extra_arches[] = {
#if defined(__x86_64__)
	SCMP_ARCH_X86,
	SCMP_ARCH_X32,
#elif defined(__aarch64__)
	SCMP_ARCH_ARM,
#endif
};

const char *moat__filetrail_event_type(const char *syscall, int flags)
{
	if (!syscall)
		return NULL;
	if (strcmp(syscall, "execve") == 0 || strcmp(syscall, "execveat") == 0)
		return "exec";
	if (strcmp(syscall, "creat") == 0)
		return "file.write";
	if (strcmp(syscall, "open") == 0 || strcmp(syscall, "openat") == 0 || strcmp(syscall, "openat2") == 0) {
		/* A file opened for writing, created or truncated is a write
		 * whether or not any byte follows. */
		if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)))
			return "file.write";
		return "file.open";
	}
	if (strcmp(syscall, "unlink") == 0 || strcmp(syscall, "unlinkat") == 0 || strcmp(syscall, "rmdir") == 0)
		return "file.unlink";
	if (strncmp(syscall, "rename", 6) == 0)
		return "file.rename";
	return NULL;
}

char *moat__filetrail_join(const char *dir, const char *path)
{
	char *s = NULL;
	if (path[0] == '/' || !dir)
		return strdup(path);
	size_t n = strlen(dir);
	if (asprintf(&s, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", path) < 0)
		return NULL;
	return s;
}

int moat__filetrail_install(moat_error *err)
{
	/* Loading a filter needs no_new_privs (or CAP_SYS_ADMIN); the
	 * confinement sets it right after anyway. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "file trail: no_new_privs");
	/* The init made itself non-dumpable and this process inherited that.
	 * A rootless supervisor can read a non-dumpable process's memory only
	 * with CAP_SYS_PTRACE over the mm's user namespace, which until execve
	 * is the host's: so the first execve's path could not be read. Nothing
	 * of the init's secrets is here to protect (the command's process is
	 * about to exec, which resets dumpability from the new program). */
	prctl(PR_SET_DUMPABLE, 1);
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return moat_error_set(err, ENOMEM, "file trail: seccomp_init");
	int rc = 0;
	/* Other architectures stay allowed here: the confinement filter
	 * decides about them; the ones a program can reach are watched. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
	for (size_t i = 0; rc == 0 && i < ELEMENTSOF(extra_arches); i++) {
		int r = seccomp_arch_add(ctx, extra_arches[i]);
		if (r < 0 && r != -EEXIST)
			rc = r;
	}
	for (int k = 0; rc == 0 && k < _K_MAX; k++) {
		int nr = seccomp_syscall_resolve_name(call_names[k]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		/* A call that one architecture lacks (open on arm64) is simply
		 * not there to watch. */
		int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
		if (r < 0 && r != -EDOM && r != -EOPNOTSUPP)
			rc = r;
	}
	if (rc == 0)
		rc = seccomp_load(ctx);
	int fd = rc == 0 ? seccomp_notify_fd(ctx) : -1;
	seccomp_release(ctx);
	if (rc < 0)
		return moat_error_set(err, rc, "file trail: load the notify filter");
	if (fd < 0)
		return moat_error_set(err, fd, "file trail: notify listener");
	return fd;
}

/* ---- the supervisor's thread ---- */

typedef struct watched {
	uint32_t arch;
	int nr;
	call_kind kind;
} watched;

typedef struct pending {
	char *type;
	json_t *fields;
} pending;

struct moat_filetrail {
	int fd;
	int stopfd;
	moat_audit *audit;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool session_started, stopping;
	bool armed; /* the first execve was seen: calls are the command's now */
	watched w[_K_MAX * 4];
	size_t n_w;
	pending pend[TRAIL_PENDING_MAX];
	size_t n_pend;
	int mem_fd;      /* /proc/PID/mem of mem_pid, cached */
	pid_t mem_pid;
	pid_t mem_nspid; /* mem_pid as the sandbox sees it */
	moat_filetrail_stats stats;
};

static void build_table(moat_filetrail *t)
{
	uint32_t arches[1 + ELEMENTSOF(extra_arches)];
	size_t na = 0;
	arches[na++] = seccomp_arch_native();
	for (size_t i = 0; i < ELEMENTSOF(extra_arches); i++)
		arches[na++] = extra_arches[i];
	for (size_t a = 0; a < na; a++)
		for (int k = 0; k < _K_MAX; k++) {
			int nr = seccomp_syscall_resolve_name_arch(arches[a], call_names[k]);
			if (nr < 0 || t->n_w >= ELEMENTSOF(t->w))
				continue;
			t->w[t->n_w++] = (watched){arches[a], nr, (call_kind)k};
		}
}

static int lookup(const moat_filetrail *t, uint32_t arch, int nr)
{
	for (size_t i = 0; i < t->n_w; i++)
		if (t->w[i].arch == arch && t->w[i].nr == nr)
			return (int)t->w[i].kind;
	return -1;
}

static bool is_compat(uint32_t arch)
{
	return arch == SCMP_ARCH_X86 || arch == SCMP_ARCH_ARM;
}

/* Reads "PPid:" and the last number of "NSpid:" (the pid inside the
 * innermost pid namespace) from /proc/PID/status. */
static void read_status(pid_t pid, pid_t *ret_ppid, pid_t *ret_nspid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	_cleanup_free_ char *s = NULL;
	*ret_ppid = *ret_nspid = 0;
	if (moat__read_file_at(AT_FDCWD, p, 8192, &s) < 0)
		return;
	char *l = strstr(s, "\nPPid:");
	if (l)
		*ret_ppid = atoi(l + 6);
	l = strstr(s, "\nNSpid:");
	if (l) {
		char *end = strchr(l + 1, '\n');
		if (end)
			*end = '\0';
		char *last = strrchr(l, '\t');
		if (last)
			*ret_nspid = atoi(last + 1);
	}
}

static void forget_mem(moat_filetrail *t)
{
	if (t->mem_fd >= 0)
		close(t->mem_fd);
	t->mem_fd = -1;
	t->mem_pid = 0;
	t->mem_nspid = 0;
}

/* The /proc/PID/mem of the calling task, kept open while the same task
 * keeps calling. It is dropped on execve (a new mm) and when a read fails
 * (the task died and its pid may now be another process's). */
static int mem_fd(moat_filetrail *t, pid_t pid)
{
	if (t->mem_fd >= 0 && t->mem_pid == pid)
		return t->mem_fd;
	forget_mem(t);
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	t->mem_fd = open(p, O_RDONLY | O_CLOEXEC);
	t->mem_pid = pid;
	pid_t ppid;
	read_status(pid, &ppid, &t->mem_nspid);
	return t->mem_fd;
}

/* Reads a NUL-terminated string at addr, page by page so that a string
 * ending just before an unmapped page still reads. Returns its length, or
 * -errno; *truncated when it was longer than cap - 1. */
static ssize_t read_string(int fd, uint64_t addr, char *buf, size_t cap, bool *truncated)
{
	size_t len = 0;
	*truncated = false;
	if (!addr)
		return -EFAULT;
	while (len < cap - 1) {
		size_t page = 4096 - ((addr + len) & 4095);
		size_t want = cap - 1 - len < page ? cap - 1 - len : page;
		ssize_t n = pread(fd, buf + len, want, (off_t)(addr + len));
		if (n <= 0)
			return n < 0 ? moat__neg_errno() : -EFAULT;
		char *z = memchr(buf + len, '\0', (size_t)n);
		if (z)
			return (ssize_t)(z - buf);
		len += (size_t)n;
	}
	buf[cap - 1] = '\0';
	*truncated = true;
	return (ssize_t)(cap - 1);
}

/* Where a relative path starts: the process's cwd or the directory fd. */
static char *base_dir(pid_t pid, int dirfd)
{
	char p[64], target[TRAIL_PATH_MAX];
	if (dirfd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, dirfd);
	ssize_t n = readlink(p, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	return strdup(target);
}

/* Reads a path argument and records it as "key" (absolute when it could be
 * made so) and "key_asked" when that differs from what the program passed. */
static bool add_path(moat_filetrail *t, json_t *f, const char *key, pid_t pid, int dirfd, uint64_t addr)
{
	char buf[TRAIL_PATH_MAX];
	bool trunc;
	int fd = mem_fd(t, pid);
	if (fd < 0 || read_string(fd, addr, buf, sizeof(buf), &trunc) < 0) {
		forget_mem(t);
		fd = mem_fd(t, pid);
		if (fd < 0 || read_string(fd, addr, buf, sizeof(buf), &trunc) < 0) {
			json_object_set_new(f, key, json_null());
			return false;
		}
	}
	_cleanup_free_ char *dir = buf[0] == '/' ? NULL : base_dir(pid, dirfd);
	_cleanup_free_ char *full = moat__filetrail_join(dir, buf);
	json_object_set_new(f, key, moat_audit_bytes_json(full ? full : buf));
	if (full && strcmp(full, buf) != 0) {
		char k[64];
		snprintf(k, sizeof(k), "%s_asked", key);
		json_object_set_new(f, k, moat_audit_bytes_json(buf));
	}
	if (trunc)
		json_object_set_new(f, "truncated", json_true());
	return true;
}

static json_t *read_argv(moat_filetrail *t, pid_t pid, uint64_t addr, bool compat)
{
	json_t *a = json_array();
	int fd = mem_fd(t, pid);
	size_t ptr = compat ? 4 : 8;
	for (size_t i = 0; fd >= 0 && addr && i < TRAIL_ARGV_MAX; i++) {
		uint64_t p = 0;
		if (pread(fd, &p, ptr, (off_t)(addr + i * ptr)) != (ssize_t)ptr)
			break;
		if (!p)
			return a;
		char buf[TRAIL_ARG_MAX];
		bool trunc;
		if (read_string(fd, p, buf, sizeof(buf), &trunc) < 0)
			break;
		json_array_append_new(a, moat_audit_bytes_json(buf));
	}
	if (addr && json_array_size(a) >= TRAIL_ARGV_MAX)
		json_array_append_new(a, json_string("..."));
	return a;
}

/* The pid fields every event carries: the pid as the sandbox sees it (what
 * the program itself and the supervisor's events call it) and on the host. */
static void add_pids(moat_filetrail *t, json_t *f, pid_t pid)
{
	pid_t ns = t->mem_pid == pid ? t->mem_nspid : 0;
	json_object_set_new(f, "pid", ns > 0 ? json_integer(ns) : json_null());
	json_object_set_new(f, "host_pid", json_integer(pid));
}

/* Builds the event for one notification; returns its type or NULL. */
static const char *describe(moat_filetrail *t, const struct seccomp_notif *req, call_kind k, json_t *f)
{
	const __u64 *a = req->data.args;
	pid_t pid = (pid_t)req->pid;
	bool compat = is_compat(req->data.arch);
	int flags = 0;
	bool ok = true;
	const char *name = call_names[k];
	switch (k) {
	case K_EXECVE:
	case K_EXECVEAT: {
		int dirfd = k == K_EXECVEAT ? (int)a[0] : AT_FDCWD;
		ok = add_path(t, f, "path", pid, dirfd, k == K_EXECVEAT ? a[1] : a[0]);
		json_object_set_new(f, "argv", read_argv(t, pid, k == K_EXECVEAT ? a[2] : a[1], compat));
		add_pids(t, f, pid);
		pid_t pp, ns_pp = 0, unused;
		read_status(pid, &pp, &unused);
		if (pp > 0)
			read_status(pp, &unused, &ns_pp);
		json_object_set_new(f, "parent", ns_pp > 0 ? json_integer(ns_pp) : json_null());
		json_object_set_new(f, "source", json_string("seccomp"));
		json_object_set_new(f, "syscall", json_string(name));
		json_object_set_new(f, "result", json_null());
		if (!ok)
			t->stats.unreadable++;
		return "exec";
	}
	case K_OPEN:
		flags = (int)a[1];
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		break;
	case K_OPENAT:
		flags = (int)a[2];
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]);
		break;
	case K_OPENAT2: {
		struct open_how how = {0};
		int fd = mem_fd(t, pid);
		if (fd < 0 || pread(fd, &how, sizeof(how.flags), (off_t)a[2]) != (ssize_t)sizeof(how.flags))
			ok = false;
		flags = (int)how.flags;
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]) && ok;
		break;
	}
	case K_CREAT:
		flags = O_CREAT | O_WRONLY | O_TRUNC;
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		break;
	case K_UNLINK:
	case K_RMDIR:
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		break;
	case K_UNLINKAT:
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]);
		if (a[2] & AT_REMOVEDIR)
			json_object_set_new(f, "dir", json_true());
		break;
	case K_RENAME:
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		ok = add_path(t, f, "to", pid, AT_FDCWD, a[1]) && ok;
		break;
	case K_RENAMEAT:
	case K_RENAMEAT2:
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]);
		ok = add_path(t, f, "to", pid, (int)a[2], a[3]) && ok;
		break;
	default:
		return NULL;
	}
	if (k == K_RMDIR)
		json_object_set_new(f, "dir", json_true());
	const char *type = moat__filetrail_event_type(name, flags);
	json_object_set_new(f, "syscall", json_string(name));
	if (strcmp(type, "file.open") == 0 || strcmp(type, "file.write") == 0) {
		json_object_set_new(f, "flags", moat_audit_open_flags_json(flags));
	}
	json_object_set_new(f, "result", json_null());
	add_pids(t, f, pid);
	if (!ok)
		t->stats.unreadable++;
	return type;
}

static void write_event(moat_filetrail *t, const char *type, json_t *f)
{
	if (moat_audit_event(t->audit, type, f, 0, NULL) == 0)
		t->stats.events++;
}

/* Writes what was held back once session.start is in the log (or the
 * wait timed out, or the run is stopping). Called unlocked. */
static void flush_pending(moat_filetrail *t)
{
	for (size_t i = 0; i < t->n_pend; i++) {
		write_event(t, t->pend[i].type, t->pend[i].fields);
		free(t->pend[i].type);
	}
	t->n_pend = 0;
}

/* Holds an exec of the command before session.start. The init finds the
 * command on PATH by trying execve in each directory; a failed attempt
 * leaves the same process making the next. So an exec from the pid of the
 * previous held one means the previous failed: it is folded into "tried"
 * rather than logged as a program that ran. */
static void hold_exec(moat_filetrail *t, json_t *f)
{
	if (t->n_pend > 0) {
		pending *last = &t->pend[t->n_pend - 1];
		json_t *lp = json_object_get(last->fields, "host_pid");
		if (json_equal(lp, json_object_get(f, "host_pid"))) {
			json_t *tried = json_incref(json_object_get(last->fields, "tried"));
			if (!tried)
				tried = json_array();
			json_array_append(tried, json_object_get(last->fields, "path"));
			json_object_set_new(f, "tried", tried);
			json_decref(last->fields);
			last->fields = f;
			return;
		}
	}
	t->pend[t->n_pend].type = strdup("exec");
	t->pend[t->n_pend++].fields = f;
}

static void wait_session_started(moat_filetrail *t)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += TRAIL_START_WAIT_S;
	pthread_mutex_lock(&t->lock);
	while (!t->session_started && !t->stopping)
		if (pthread_cond_timedwait(&t->cond, &t->lock, &deadline) == ETIMEDOUT)
			break;
	t->session_started = true;
	pthread_mutex_unlock(&t->lock);
}

static bool session_started(moat_filetrail *t)
{
	pthread_mutex_lock(&t->lock);
	bool s = t->session_started;
	pthread_mutex_unlock(&t->lock);
	return s;
}

static void handle(moat_filetrail *t)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	/* Raw ioctls rather than seccomp_notify_receive(): libseccomp 2.5
	 * folds every failure into -ECANCELED, and ENOENT (the caller died
	 * or was interrupted while we looked) must be told apart. */
	if (ioctl(t->fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return;
	t->stats.notifications++;
	int k = lookup(t, req.data.arch, req.data.nr);
	json_t *f = NULL;
	const char *type = NULL;
	if (k == K_EXECVE || k == K_EXECVEAT)
		t->armed = true;
	if (t->armed && k >= 0) {
		f = json_object();
		type = describe(t, &req, (call_kind)k, f);
	}
	/* The memory read is only trusted if the task is still the one that
	 * made the call: a recycled pid would have been another process. */
	bool valid = ioctl(t->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0;
	struct seccomp_notif_resp resp = {.id = req.id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
	ioctl(t->fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (k == K_EXECVE || k == K_EXECVEAT)
		forget_mem(t); /* the process is about to get a new mm */
	if (!type || !valid) {
		json_decref(f);
		return;
	}
	if (!session_started(t)) {
		if (strcmp(type, "exec") == 0 && t->n_pend < TRAIL_PENDING_MAX) {
			hold_exec(t, f);
			return;
		}
		/* A call after the exec: the command runs, so session.start is
		 * on its way (the supervisor writes it when the init reports
		 * the exec). Wait for it so the log reads in order. */
		wait_session_started(t);
	}
	flush_pending(t);
	write_event(t, type, f);
}

static void *trail_main(void *arg)
{
	moat_filetrail *t = arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = t->fd, .events = POLLIN}, {.fd = t->stopfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents & POLLIN)
			handle(t);
		else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break; /* no process holds the filter any more */
		else if (p[1].revents)
			break;
	}
	return NULL;
}

int moat__filetrail_start(int listener, moat_audit *a, moat_filetrail **ret, moat_error *err)
{
	_cleanup_close_ int fd = listener;
	moat_filetrail *t = calloc(1, sizeof(*t));
	if (!t)
		return moat_error_set(err, ENOMEM, "file trail");
	t->fd = TAKE_FD(fd);
	t->mem_fd = -1;
	t->audit = a;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	build_table(t);
	int r = t->stopfd < 0 ? -errno : -pthread_create(&t->thread, NULL, trail_main, t);
	if (r < 0) {
		moat__filetrail_stop(t, NULL);
		return moat_error_set(err, r, "file trail: start its thread");
	}
	t->thread_started = true;
	*ret = t;
	return 0;
}

void moat__filetrail_session_started(moat_filetrail *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->session_started = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

void moat__filetrail_stop(moat_filetrail *t, moat_filetrail_stats *ret_stats)
{
	if (!t)
		return;
	if (t->thread_started) {
		pthread_mutex_lock(&t->lock);
		t->stopping = true;
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
		/* The run's processes are gone by now, so the thread is already
		 * leaving on the listener's hangup; the eventfd is for a caller
		 * that stops early. */
		uint64_t one = 1;
		if (write(t->stopfd, &one, sizeof(one)) < 0) {
			/* Only fails when the counter is full: already signalled. */
		}
		pthread_join(t->thread, NULL);
	}
	flush_pending(t);
	if (ret_stats)
		*ret_stats = t->stats;
	forget_mem(t);
	if (t->fd >= 0)
		close(t->fd);
	if (t->stopfd >= 0)
		close(t->stopfd);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
