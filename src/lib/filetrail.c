#include "filetrail.h"

#include "approvals.h"
#include "execgate.h"
#include "fanwatch.h"

#include <dirent.h>
#include <linux/kcmp.h>
#include <sched.h>
#include <sys/syscall.h>

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
/* SHA-256 without EVP, as in audit.c (moat_audit_hash says why). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

/* Caps on what is read from the sandboxed process per call. A path longer
 * than PATH_MAX the kernel refuses anyway. The kernel copies at most 6 MiB
 * of argv and environment (3/4 of _STK_LIM) and refuses a longer one with
 * E2BIG, so reading stops a little past that. */
#define TRAIL_PATH_MAX 4096
#define TRAIL_ARGV_READ_MAX (UINT64_C(8) << 20)
/* Exec attempts held back before session.start (a PATH search makes one
 * per directory). */
#define TRAIL_PENDING_MAX 32
/* The auxiliary vector kept of a held exec (a few hundred bytes on every
 * architecture; one longer is not compared, so never folded into). */
#define TRAIL_AUXV_MAX 1024
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
	K_TRUNCATE,
	K_LINK,
	K_LINKAT,
	K_SYMLINK,
	K_SYMLINKAT,
	K_MKDIR,
	K_MKDIRAT,
	K_CHMOD,
	K_FCHMODAT,
	K_FCHMODAT2,
	_K_MAX,
} call_kind;

static const char *const call_names[_K_MAX] = {
	[K_EXECVE] = "execve",     [K_EXECVEAT] = "execveat", [K_OPEN] = "open",
	[K_OPENAT] = "openat",     [K_OPENAT2] = "openat2",   [K_CREAT] = "creat",
	[K_UNLINK] = "unlink",     [K_UNLINKAT] = "unlinkat", [K_RMDIR] = "rmdir",
	[K_RENAME] = "rename",     [K_RENAMEAT] = "renameat", [K_RENAMEAT2] = "renameat2",
	[K_TRUNCATE] = "truncate", [K_LINK] = "link",         [K_LINKAT] = "linkat",
	[K_SYMLINK] = "symlink",   [K_SYMLINKAT] = "symlinkat", [K_MKDIR] = "mkdir",
	[K_MKDIRAT] = "mkdirat",   [K_CHMOD] = "chmod",       [K_FCHMODAT] = "fchmodat",
	[K_FCHMODAT2] = "fchmodat2",
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
	if (strcmp(syscall, "truncate") == 0)
		return "file.truncate";
	if (strcmp(syscall, "link") == 0 || strcmp(syscall, "linkat") == 0)
		return "file.link";
	if (strcmp(syscall, "symlink") == 0 || strcmp(syscall, "symlinkat") == 0)
		return "file.symlink";
	if (strcmp(syscall, "mkdir") == 0 || strcmp(syscall, "mkdirat") == 0)
		return "file.mkdir";
	if (strcmp(syscall, "chmod") == 0 || strcmp(syscall, "fchmodat") == 0 || strcmp(syscall, "fchmodat2") == 0)
		return "file.chmod";
	return NULL;
}

json_t *moat__filetrail_mode_json(unsigned mode)
{
	char s[16];
	snprintf(s, sizeof(s), "0%o", mode & 07777);
	return json_string(s);
}

struct moat_trail_argv {
	SHA256_CTX sha;
	uint64_t bytes; /* all strings with their NULs */
	uint64_t count; /* strings ended */
	size_t kept;    /* bytes of buf in use: the first MOAT_TRAIL_ARGV_WHOLE */
	char buf[MOAT_TRAIL_ARGV_WHOLE];
};

moat_trail_argv *moat__trail_argv_new(void)
{
	moat_trail_argv *v = malloc(sizeof(*v));
	if (!v)
		return NULL;
	v->bytes = v->count = 0;
	v->kept = 0;
	if (SHA256_Init(&v->sha) != 1) {
		free(v);
		return NULL;
	}
	return v;
}

static void argv_keep(moat_trail_argv *v, const char *buf, size_t len)
{
	size_t room = sizeof(v->buf) - v->kept;
	size_t n = len < room ? len : room;
	memcpy(v->buf + v->kept, buf, n);
	v->kept += n;
}

int moat__trail_argv_add(moat_trail_argv *v, const char *buf, size_t len)
{
	if (SHA256_Update(&v->sha, buf, len) != 1)
		return -EIO;
	v->bytes += len;
	argv_keep(v, buf, len);
	return 0;
}

int moat__trail_argv_end(moat_trail_argv *v)
{
	if (SHA256_Update(&v->sha, "", 1) != 1)
		return -EIO;
	v->bytes++;
	v->count++;
	argv_keep(v, "", 1);
	return 0;
}

/* The strings in buf[0..len), NUL-separated; a last one without its NUL
 * is included as it is (cut). */
static json_t *split_strings(const char *buf, size_t len)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < len;) {
		const char *z = memchr(buf + i, '\0', len - i);
		size_t n = z ? (size_t)(z - (buf + i)) : len - i;
		_cleanup_free_ char *s = strndup(buf + i, n);
		if (s)
			json_array_append_new(a, moat_audit_bytes_json(s));
		i += n + 1;
	}
	return a;
}

void moat__trail_argv_finish(moat_trail_argv *v, bool complete, json_t *f)
{
	if (!v)
		return;
	if (complete && v->bytes <= MOAT_TRAIL_ARGV_WHOLE && v->count <= MOAT_TRAIL_ARGV_WHOLE_COUNT) {
		json_object_set_new(f, "argv", split_strings(v->buf, v->kept));
		free(v);
		return;
	}
	size_t head = v->kept < MOAT_TRAIL_ARGV_HEAD ? v->kept : MOAT_TRAIL_ARGV_HEAD;
	json_object_set_new(f, "argv", split_strings(v->buf, head));
	json_object_set_new(f, "argv_truncated", json_true());
	json_object_set_new(f, "argc", json_integer((json_int_t)v->count));
	json_object_set_new(f, "argv_bytes", json_integer((json_int_t)v->bytes));
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	/* An argv that could not be read to its end has no hash to give: it
	 * would be the hash of something the kernel was never asked to run. */
	if (complete && SHA256_Final(md, &v->sha) == 1) {
		moat__hex_encode(md, sizeof(md), hex);
		json_object_set_new(f, "argv_sha256", json_string(hex));
	}
	free(v);
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
	/* libseccomp keeps the notify descriptor it made in a global, and
	 * makes no new listener while that is set. This process shares the
	 * init's memory until its execve (CLONE_VM), so an earlier command's
	 * descriptor number is there, not valid here: forget it. */
	if (seccomp_reset(NULL, 0) < 0)
		return moat_error_set(err, EINVAL, "file trail: reset libseccomp's state");
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

/* Execs the gate holds at once per trail (beyond: refused). */
#define GATE_HELD_MAX 64

typedef struct gate_read gate_read;
typedef struct gate_call {
	pid_t pid;
	int dirfd, flags;
	uint64_t path_addr, argv_addr;
	bool compat;
} gate_call;

typedef struct gated {
	uint64_t id, ticket;
	gate_call call;
	gate_read *read;
	char approval[MOAT_APPROVAL_ID_LEN];
} gated;

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
	bool fanotify_wanted; /* open the fanotify source at the first execve */
	bool exited;          /* the thread has left (read with atomics) */
	watched w[_K_MAX * 4];
	size_t n_w;
	pending pend[TRAIL_PENDING_MAX];
	size_t n_pend;
	/* The last exec held back before session.start: a descriptor on the
	 * caller's memory as it was before that exec, an address that was
	 * readable there, and the program it was running. */
	int held_fd;
	pid_t held_pid;
	uint64_t held_addr;
	dev_t held_dev;
	ino_t held_ino;
	/* /proc/PID/auxv then: the kernel's copy of the vector its exec
	 * gave the program, which only a successful exec replaces */
	unsigned char held_auxv[TRAIL_AUXV_MAX];
	size_t held_auxv_len;
	int fan_fd;      /* fanotify on the sandbox's mounts, or -1 */
	ino_t pidns;     /* the sandbox's pid namespace */
	int mem_fd;      /* /proc/PID/mem of mem_pid, cached */
	pid_t mem_pid;
	pid_t mem_nspid; /* mem_pid as the sandbox sees it */
	moat_filetrail_stats stats;
	/* The exec gate: its rules (not owned), the queue, the execs held,
	 * and the eventfd the queue's wake writes to. */
	const moat_exec_rule *rules;
	size_t n_rules;
	moat_approvals *approvals;
	bool record; /* write the trail's events (audit.files) */
	int wakefd;
	gated gated[GATE_HELD_MAX];
	size_t n_gated;
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
	if (moat__read_file_head_at(AT_FDCWD, p, 8192, &s) < 0)
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

/* Reads a string argument from the caller's memory, retrying once with a
 * fresh descriptor (the cached one may belong to a task that is gone).
 * Returns its length or -errno. */
static ssize_t read_arg(moat_filetrail *t, pid_t pid, uint64_t addr, char *buf, size_t cap, bool *trunc)
{
	int fd = mem_fd(t, pid);
	ssize_t n = fd < 0 ? -EIO : read_string(fd, addr, buf, cap, trunc);
	if (n < 0) {
		forget_mem(t);
		fd = mem_fd(t, pid);
		n = fd < 0 ? -EIO : read_string(fd, addr, buf, cap, trunc);
	}
	return n;
}

/* Reads a path argument and records it as "key" (absolute when it could be
 * made so) and "key_asked" when that differs from what the program passed.
 * A path that cannot be read is left out, never logged as null or guessed:
 * the caller marks the event unreadable. */
static bool add_path(moat_filetrail *t, json_t *f, const char *key, pid_t pid, int dirfd, uint64_t addr)
{
	char buf[TRAIL_PATH_MAX];
	bool trunc;
	if (read_arg(t, pid, addr, buf, sizeof(buf), &trunc) < 0)
		return false;
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

/* A string argument recorded as the program passed it (a symlink's target
 * is its content, not a path to resolve here). */
static bool add_string(moat_filetrail *t, json_t *f, const char *key, pid_t pid, uint64_t addr)
{
	char buf[TRAIL_PATH_MAX];
	bool trunc;
	if (read_arg(t, pid, addr, buf, sizeof(buf), &trunc) < 0)
		return false;
	json_object_set_new(f, key, moat_audit_bytes_json(buf));
	if (trunc)
		json_object_set_new(f, "truncated", json_true());
	return true;
}

/* Streams the argv array at addr into v. Returns 0 when read to its NULL,
 * -EFAULT when some of it could not be read, -E2BIG past what the kernel
 * itself would copy (it refuses such an execve). */
static int read_argv_into(int fd, uint64_t addr, bool compat, moat_trail_argv *v)
{
	size_t ptr = compat ? 4 : 8;
	uint64_t total = 0;
	if (!addr)
		return 0; /* Linux takes a NULL argv as an empty one */
	for (uint64_t i = 0;; i++) {
		uint64_t p = 0;
		if (pread(fd, &p, ptr, (off_t)(addr + i * ptr)) != (ssize_t)ptr)
			return -EFAULT;
		if (!p)
			return 0;
		total += ptr;
		for (;;) {
			char chunk[4096];
			size_t page = 4096 - (p & 4095);
			ssize_t n = pread(fd, chunk, page, (off_t)p);
			if (n <= 0)
				return -EFAULT;
			char *z = memchr(chunk, '\0', (size_t)n);
			size_t take = z ? (size_t)(z - chunk) : (size_t)n;
			if (moat__trail_argv_add(v, chunk, take) < 0)
				return -EIO;
			total += take;
			if (total > TRAIL_ARGV_READ_MAX)
				return -E2BIG;
			if (z) {
				if (moat__trail_argv_end(v) < 0)
					return -EIO;
				total++;
				break;
			}
			p += (uint64_t)n;
		}
	}
}

/* The argv fields of an exec event; false when it could not all be read. */
static bool add_argv(moat_filetrail *t, json_t *f, pid_t pid, uint64_t addr, bool compat)
{
	moat_trail_argv *v = moat__trail_argv_new();
	if (!v)
		return false;
	int fd = mem_fd(t, pid);
	int r = fd < 0 ? -EIO : read_argv_into(fd, addr, compat, v);
	moat__trail_argv_finish(v, r == 0, f);
	if (r == -E2BIG)
		json_object_set_new(f, "argv_incomplete", json_string("longer than the kernel accepts"));
	else if (r < 0)
		json_object_set_new(f, "argv_incomplete", json_string("unreadable"));
	return r == 0 || r == -E2BIG;
}

/* Threads in the caller's process, from /proc/PID/status; 0 when unknown. */
static long thread_count(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	_cleanup_free_ char *s = NULL;
	if (moat__read_file_head_at(AT_FDCWD, p, 8192, &s) < 0)
		return 0;
	const char *l = strstr(s, "\nThreads:");
	return l ? strtol(l + 9, NULL, 10) : 0;
}

/* The pid fields every event carries: the pid as the sandbox sees it (what
 * the program itself and the supervisor's events call it) and on the host. */
static void add_pids(moat_filetrail *t, json_t *f, pid_t pid)
{
	pid_t ns = t->mem_pid == pid ? t->mem_nspid : 0;
	json_object_set_new(f, "pid", ns > 0 ? json_integer(ns) : json_null());
	json_object_set_new(f, "host_pid", json_integer(pid));
}

/* How far the path in an event can be trusted. Another thread of the
 * caller's process can rewrite the path between the supervisor's read and
 * the kernel's own, so an event from a multi-threaded caller (or one whose
 * thread count could not be read) is "racy"; a path that could not be read
 * at all is left out and the event is "unreadable". The count is taken
 * before the path is read: the caller is stopped in the call, so no thread
 * of its process can be created after that. Nothing is added when the
 * caller was single-threaded (docs/audit.md says what that does not rule
 * out). */
static void add_reliability(moat_filetrail *t, json_t *f, bool ok, long threads)
{
	if (!ok) {
		json_object_set_new(f, "reliability", json_string("unreadable"));
		t->stats.unreadable++;
	} else if (threads != 1) {
		json_object_set_new(f, "reliability", json_string("racy"));
		if (threads > 1)
			json_object_set_new(f, "threads", json_integer(threads));
		t->stats.racy++;
	}
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
	long threads = thread_count(pid);
	switch (k) {
	case K_EXECVE:
	case K_EXECVEAT: {
		int dirfd = k == K_EXECVEAT ? (int)a[0] : AT_FDCWD;
		ok = add_path(t, f, "path", pid, dirfd, k == K_EXECVEAT ? a[1] : a[0]);
		ok = add_argv(t, f, pid, k == K_EXECVEAT ? a[2] : a[1], compat) && ok;
		add_pids(t, f, pid);
		pid_t pp, ns_pp = 0, unused;
		read_status(pid, &pp, &unused);
		if (pp > 0)
			read_status(pp, &unused, &ns_pp);
		json_object_set_new(f, "parent", ns_pp > 0 ? json_integer(ns_pp) : json_null());
		json_object_set_new(f, "source", json_string("seccomp"));
		json_object_set_new(f, "syscall", json_string(name));
		json_object_set_new(f, "result", json_null());
		add_reliability(t, f, ok, threads);
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
	case K_LINK:
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		ok = add_path(t, f, "to", pid, AT_FDCWD, a[1]) && ok;
		break;
	case K_RENAMEAT:
	case K_RENAMEAT2:
	case K_LINKAT:
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]);
		ok = add_path(t, f, "to", pid, (int)a[2], a[3]) && ok;
		break;
	case K_TRUNCATE:
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		json_object_set_new(f, "length", json_integer((json_int_t)a[1]));
		break;
	case K_SYMLINK:
		ok = add_string(t, f, "target", pid, a[0]);
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[1]) && ok;
		break;
	case K_SYMLINKAT:
		ok = add_string(t, f, "target", pid, a[0]);
		ok = add_path(t, f, "path", pid, (int)a[1], a[2]) && ok;
		break;
	case K_MKDIR:
	case K_CHMOD:
		ok = add_path(t, f, "path", pid, AT_FDCWD, a[0]);
		json_object_set_new(f, "mode", moat__filetrail_mode_json((unsigned)a[1]));
		break;
	case K_MKDIRAT:
	case K_FCHMODAT:
	case K_FCHMODAT2:
		ok = add_path(t, f, "path", pid, (int)a[0], a[1]);
		json_object_set_new(f, "mode", moat__filetrail_mode_json((unsigned)a[2]));
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
	json_object_set_new(f, "source", json_string("seccomp"));
	json_object_set_new(f, "result", json_null());
	add_pids(t, f, pid);
	add_reliability(t, f, ok, threads);
	return type;
}

static void write_event(moat_filetrail *t, const char *type, json_t *f)
{
	if (!t->record) {
		json_decref(f);
		return;
	}
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
 * leaves the same process making the next, and is folded into "tried"
 * rather than logged as a program that ran. Whether the previous attempt
 * failed is not guessed from the pid (a program may exec again at once):
 * prev_ran says what previous_exec_ran() found. */
static void hold_exec(moat_filetrail *t, json_t *f, bool prev_ran)
{
	if (t->n_pend > 0 && !prev_ran) {
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

static void forget_held(moat_filetrail *t)
{
	if (t->held_fd >= 0)
		close(t->held_fd);
	t->held_fd = -1;
	t->held_pid = 0;
}

/* pid's /proc/PID/auxv into buf (its length; 0 when it cannot be read or
 * is longer than buf, which compares as nothing known). */
static size_t auxv_of(pid_t pid, unsigned char *buf, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/auxv", (int)pid);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	while (fd >= 0 && len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		if (n == 0)
			return len;
		len += (size_t)n;
	}
	return 0;
}

static bool exe_of(pid_t pid, dev_t *ret_dev, ino_t *ret_ino)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/exe", (int)pid);
	if (stat(p, &st) < 0)
		return false;
	*ret_dev = st.st_dev;
	*ret_ino = st.st_ino;
	return true;
}

/* Called at an exec notification of pid, before it goes on: did pid's
 * previous exec (held back) replace its program? A successful execve gives
 * the process a new memory map, and a descriptor opened on /proc/PID/mem
 * before it then reads nothing once the old map has no users left; a
 * failed one leaves the map, and the program, as they were. But the old
 * map may still have a user for a moment after a successful exec: anyone
 * who was reading /proc/PID/stat, status or cmdline (ps, a monitor, this
 * trail's own fanotify side) holds it while it reads, and on a loaded
 * machine that reader may be descheduled long enough for the new program
 * to exec again. So a readable old map alone is no proof the exec failed:
 * the kernel's copy of the auxiliary vector (/proc/PID/auxv, cur: read now,
 * while pid is stopped in this call) is compared too. Only a successful
 * exec writes it, and a new one differs (the stack, the vDSO and the
 * AT_RANDOM bytes' address move with every exec under ASLR, which the
 * sandbox cannot turn off: seccomp.c filters personality). Any sign of a
 * change means it ran. Without a held exec of this pid, there is nothing to
 * fold into: true. */
static bool previous_exec_ran(moat_filetrail *t, pid_t pid, const unsigned char *cur, size_t cur_len)
{
	if (t->held_fd < 0 || t->held_pid != pid)
		return true;
	char c;
	bool same_mm = pread(t->held_fd, &c, 1, (off_t)t->held_addr) == 1;
	dev_t dev;
	ino_t ino;
	bool same_exe = exe_of(pid, &dev, &ino) && dev == t->held_dev && ino == t->held_ino;
	bool same_auxv = cur_len && cur_len == t->held_auxv_len && memcmp(cur, t->held_auxv, cur_len) == 0;
	return !(same_mm && same_exe && same_auxv);
}

/* Keeps what previous_exec_ran() needs of this exec: the descriptor on the
 * memory the path was just read from (taken from the cache), its address,
 * the program running now and its auxiliary vector (auxv: read before
 * the exec was let go on). */
static void remember_exec(moat_filetrail *t, pid_t pid, uint64_t addr, const unsigned char *auxv, size_t auxv_len)
{
	forget_held(t);
	if (t->mem_fd < 0 || t->mem_pid != pid || !auxv_len || !exe_of(pid, &t->held_dev, &t->held_ino))
		return;
	t->held_fd = TAKE_FD(t->mem_fd);
	t->held_pid = pid;
	t->held_addr = addr;
	memcpy(t->held_auxv, auxv, auxv_len);
	t->held_auxv_len = auxv_len;
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

/* ---- the exec gate (exec.approve) ---- */

/* Everything the gate reads of one execve, and what it found. */
struct gate_read {
	char path[TRAIL_PATH_MAX];
	size_t path_len;
	char args[MOAT_APPROVAL_ARGS_MAX]; /* argv[0] NUL argv[1] NUL ... */
	size_t args_len, n_argv;
	dev_t dev;
	ino_t ino;
	int rule; /* the rule whose program this is, or -1 */
};

static long sys_kcmp(pid_t a, pid_t b, int type)
{
	return syscall(SYS_kcmp, a, b, type, 0, 0);
}

static int open_in(int dirfd, const char *path, uint64_t resolve, bool nofollow)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0),
			       .resolve = resolve | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

static int proc_open(pid_t pid, const char *what, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	int fd = open(p, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* The file a path names as the stopped process sees it: from its root
 * (/proc/PID/root) for an absolute path, from its cwd or dirfd for a
 * relative one, never following a link out of its root. */
static int resolve_exec_fd(pid_t pid, int dirfd, const char *path, int flags, struct stat *st, int *ret_fd)
{
	_cleanup_close_ int root = proc_open(pid, "root", O_PATH | O_DIRECTORY);
	if (root < 0)
		return root;
	_cleanup_close_ int fd = -1;
	bool nofollow = flags & AT_SYMLINK_NOFOLLOW;
	if (path[0] == '/') {
		fd = open_in(root, path, RESOLVE_IN_ROOT, nofollow);
	} else if (!path[0] && (flags & AT_EMPTY_PATH) && dirfd >= 0) {
		char what[32];
		snprintf(what, sizeof(what), "fd/%d", dirfd);
		fd = proc_open(pid, what, O_PATH);
	} else {
		char what[32];
		if (dirfd == AT_FDCWD)
			snprintf(what, sizeof(what), "cwd");
		else
			snprintf(what, sizeof(what), "fd/%d", dirfd);
		_cleanup_close_ int base = proc_open(pid, what, O_PATH | O_DIRECTORY);
		if (base < 0)
			return base;
		fd = open_in(base, path, RESOLVE_BENEATH, nofollow);
		if (fd == -EXDEV) {
			/* The path leaves its directory ("..", an absolute
			 * link): resolve it from the root, with the
			 * directory's path as the root sees it, and only if
			 * that names the same directory. */
			char link[64], dir[TRAIL_PATH_MAX];
			snprintf(link, sizeof(link), "/proc/%d/%s", (int)pid, what);
			ssize_t n = readlink(link, dir, sizeof(dir) - 1);
			if (n <= 0 || dir[0] != '/')
				return -EXDEV;
			dir[n] = '\0';
			struct stat a, b;
			_cleanup_close_ int again = open_in(root, dir, RESOLVE_IN_ROOT, false);
			if (again < 0 || fstat(again, &a) < 0 || fstat(base, &b) < 0 || a.st_dev != b.st_dev ||
			    a.st_ino != b.st_ino)
				return -EXDEV;
			_cleanup_free_ char *full = moat__filetrail_join(dir, path);
			if (!full)
				return -ENOMEM;
			fd = open_in(root, full, RESOLVE_IN_ROOT, nofollow);
		}
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		return -errno;
	if (ret_fd)
		*ret_fd = TAKE_FD(fd);
	return 0;
}

static int resolve_exec(pid_t pid, int dirfd, const char *path, int flags, struct stat *st)
{
	return resolve_exec_fd(pid, dirfd, path, flags, st, NULL);
}

/* The caller's mount table, for mount_unwritable; NULL when unreadable. */
static char *mount_table(pid_t pid)
{
	char p[64];
	char *mi = NULL;
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int)pid);
	if (moat__read_file_at(AT_FDCWD, p, 4u << 20, &mi) < 0)
		return NULL;
	return mi;
}

/* Whether the mount fd is on cannot be written through by the sandbox:
 * read-only, and no writable mount of its mount table shows the same
 * files (a read-only bind of a folder inside the read-write workspace
 * is no read-only folder). */
static bool mount_unwritable(const char *mountinfo, int fd)
{
	struct statx stx;
	const char *why;
	if (!mountinfo || statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return false;
	return moat__mount_unwritable(mountinfo, stx.stx_mnt_id, &why);
}

/* Links followed in one walk, as the kernel's own limit (MAXSYMLINKS). */
#define GATE_LINKS_MAX 40

/* Whether the kernel's own walk of an execve's path, after the gate's
 * answer, cannot end at another file than the gate's walk did: the path is
 * absolute (a working folder or a descriptor can be changed by a process
 * sharing them, CLONE_FS or CLONE_FILES), has no "..", and every folder a
 * name is looked up in, in the targets of the links it follows too, is on
 * a read-only mount and not in /proc (whose links are descriptors and
 * pids). A folder or link the sandbox can change could be swapped between
 * the two walks. */
static bool route_fixed(pid_t pid, const char *path, bool nofollow)
{
	if (path[0] != '/')
		return false;
	_cleanup_close_ int root = proc_open(pid, "root", O_PATH | O_DIRECTORY);
	if (root < 0)
		return false;
	_cleanup_close_ int cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
	char rest[2 * TRAIL_PATH_MAX];
	if (cur < 0 || strlen(path) >= sizeof(rest))
		return false;
	strcpy(rest, path);
	_cleanup_free_ char *mi = mount_table(pid);
	unsigned links = 0;
	for (char *at = rest;;) {
		while (*at == '/')
			at++;
		if (!*at) {
			/* The file itself too: a writable file bound onto a
			 * read-only folder could be rewritten (its "#!" line,
			 * its PT_INTERP) before the kernel reads it again. */
			struct statvfs fv;
			return fstatvfs(cur, &fv) == 0 && (fv.f_flag & ST_RDONLY) && mount_unwritable(mi, cur);
		}
		char *slash = strchr(at, '/');
		size_t n = slash ? (size_t)(slash - at) : strlen(at);
		char name[NAME_MAX + 1];
		if (n > NAME_MAX)
			return false;
		memcpy(name, at, n);
		name[n] = '\0';
		at += n;
		if (strcmp(name, ".") == 0)
			continue;
		struct statvfs vfs;
		struct statfs fs;
		if (strcmp(name, "..") == 0 || fstatvfs(cur, &vfs) < 0 || !(vfs.f_flag & ST_RDONLY) ||
		    fstatfs(cur, &fs) < 0 || fs.f_type == PROC_SUPER_MAGIC || !mount_unwritable(mi, cur))
			return false;
		int fd = open_in(cur, name, RESOLVE_BENEATH, true);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			return false;
		}
		bool last = !*at || !at[strspn(at, "/")];
		if (!S_ISLNK(st.st_mode) || (last && nofollow)) {
			close(cur);
			cur = fd;
			continue;
		}
		char target[TRAIL_PATH_MAX];
		ssize_t t = readlinkat(fd, "", target, sizeof(target) - 1);
		close(fd);
		if (t <= 0 || ++links > GATE_LINKS_MAX)
			return false;
		target[t] = '\0';
		/* The walk goes on in the link's target, then in what was
		 * left of the path after the link. */
		size_t left = strlen(at);
		if ((size_t)t + left >= sizeof(rest))
			return false;
		memmove(rest + t, at, left + 1);
		memcpy(rest, target, (size_t)t);
		at = rest;
		if (target[0] == '/') {
			close(cur);
			cur = fcntl(root, F_DUPFD_CLOEXEC, 0);
			if (cur < 0)
				return false;
		}
	}
}

/* Levels of interpreters the gate follows ("#!" lines and ELF loaders;
 * the kernel stops at 5 scripts). */
#define GATE_SCRIPT_DEPTH 5

static ssize_t gate_pread(void *ud, void *buf, size_t n, uint64_t off)
{
	if (off > (uint64_t)INT64_MAX)
		return -1;
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(*(int *)ud, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static const char *interp_runs_held(moat_filetrail *t, const gate_call *c, const char *path, const char *args,
				    size_t args_len, size_t n_argv, int depth, bool loader);

/* What the file at path (as the caller would resolve it) has the kernel
 * run besides itself, with argv: the interpreter a "#!" line names, read
 * as binfmt_script reads it, with [interpreter, its one optional argument,
 * the script's path, argv[1], ...] ("#!/usr/bin/git push" in a script
 * would otherwise run a held `git push` that no check saw); or the loader
 * an ELF's PT_INTERP names, which the kernel maps and starts in the
 * program's place with the program's own argv (a static held program
 * named there runs as itself). Each is checked as a direct exec of it
 * would be (interp_runs_held). NULL when nothing held can run that way,
 * else why not; a file that cannot be read, or read surely, counts as
 * held (deny on doubt). */
static const char *runs_held(moat_filetrail *t, const gate_call *c, const char *path, const char *args,
			     size_t args_len, size_t n_argv, int depth)
{
	struct stat st;
	char fdp[64];
	_cleanup_close_ int pfd = -1;
	if (resolve_exec_fd(c->pid, c->dirfd, path, c->flags, &st, &pfd) < 0 || !S_ISREG(st.st_mode))
		return NULL; /* the kernel refuses it: nothing runs */
	snprintf(fdp, sizeof(fdp), "/proc/self/fd/%d", pfd);
	_cleanup_close_ int fd = open(fdp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	char buf[MOAT_EXEC_HEAD_MAX], i[MOAT_ELF_INTERP_MAX], opt[MOAT_EXEC_HEAD_MAX];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf), 0) : -1;
	if (n < 0)
		return "its file cannot be read to tell what it runs";
	if (!moat__exec_script_line(buf, (size_t)n, i, sizeof(i), opt, sizeof(opt))) {
		const char *why;
		switch (moat__exec_elf_interp(gate_pread, &fd, i, sizeof(i), &why)) {
		case MOAT_ELF_INTERP:
			return interp_runs_held(t, c, i, args, args_len, n_argv, depth + 1, true);
		case MOAT_ELF_BAD:
			return why;
		default:
			return NULL;
		}
	}
	size_t ol = strlen(opt);
	/* The interpreter's argv: itself, its argument, the script's path,
	 * then the script's own arguments after argv[0]. */
	const char *rest = args;
	size_t rest_len = args_len, rest_n = n_argv;
	if (n_argv > 0) {
		const char *z = memchr(args, '\0', args_len);
		size_t skip = z ? (size_t)(z - args) + 1 : args_len;
		rest += skip;
		rest_len -= skip;
		rest_n--;
	}
	size_t len = strlen(i) + 1 + (ol ? ol + 1 : 0) + strlen(path) + 1 + rest_len;
	_cleanup_free_ char *nargs = malloc(len);
	if (!nargs)
		return "out of memory";
	size_t off = 0;
	memcpy(nargs + off, i, strlen(i) + 1), off += strlen(i) + 1;
	if (ol)
		memcpy(nargs + off, opt, ol + 1), off += ol + 1;
	memcpy(nargs + off, path, strlen(path) + 1), off += strlen(path) + 1;
	memcpy(nargs + off, rest, rest_len), off += rest_len;
	size_t nn = 2 + (ol ? 1 : 0) + rest_n;
	return interp_runs_held(t, c, i, nargs, off, nn, depth + 1, false);
}

/* An interpreter (loader: an ELF's PT_INTERP; else a script's "#!"
 * program) that the kernel opens by path from the caller's working
 * folder, checked as a direct exec of it with the argv it gets: a held
 * program is refused (run it itself, and a person is asked); arguments a
 * rule holds for another program need a path no process of the sandbox
 * can change (route_fixed), as the kernel opens it again after the
 * answer. A script's interpreter is followed further; a loader is not
 * (the kernel maps it and starts it, whatever it names itself). */
static const char *interp_runs_held(moat_filetrail *t, const gate_call *c, const char *path, const char *args,
				    size_t args_len, size_t n_argv, int depth, bool loader)
{
	if (depth > GATE_SCRIPT_DEPTH)
		return "it runs through more interpreters than the gate follows";
	struct stat is;
	gate_call ic = *c;
	ic.dirfd = AT_FDCWD; /* the kernel opens the interpreter from the caller's cwd */
	ic.flags = 0;
	if (resolve_exec(c->pid, AT_FDCWD, path, 0, &is) < 0)
		return NULL; /* no such interpreter: ENOENT */
	_cleanup_close_ int root = proc_open(c->pid, "root", O_PATH | O_DIRECTORY);
	if (root < 0)
		return "its root cannot be opened";
	bool elsewhere = false;
	for (size_t k = 0; k < t->n_rules; k++) {
		if (!moat__exec_args_match(t->rules[k].args, args, args_len, n_argv))
			continue;
		_cleanup_close_ int rfd = open_in(root, t->rules[k].path, RESOLVE_IN_ROOT, false);
		struct stat rs;
		if (rfd < 0 || fstat(rfd, &rs) < 0)
			continue;
		if (rs.st_dev != is.st_dev || rs.st_ino != is.st_ino)
			elsewhere = true;
		else if (loader)
			return "its ELF loader (PT_INTERP) is a program exec.approve holds, which the kernel would start "
			       "with arguments it holds: run that program itself";
		else
			return "it is a script whose \"#!\" line runs a program exec.approve holds, with arguments it "
			       "holds: run that program itself";
	}
	if (elsewhere && !route_fixed(c->pid, path, false))
		return loader ? "its ELF loader (PT_INTERP) would get arguments exec.approve holds for another "
				"program, and its path goes through a folder or link the sandbox can change"
			      : "its \"#!\" interpreter would get arguments exec.approve holds for another program, "
				"and its path goes through a folder or link the sandbox can change";
	if (loader)
		return NULL;
	return runs_held(t, &ic, path, args, args_len, n_argv, depth);
}

/* Whether task q, which shares the caller's memory, is a vfork parent
 * waiting for the caller: single-threaded, asleep in vfork, or in clone
 * with CLONE_VFORK, until the caller's execve or exit. Such a sharer cannot
 * run a single instruction before the exec is done. */
static bool vfork_waiting(pid_t q)
{
	if (thread_count(q) != 1)
		return false;
	char p[64];
	_cleanup_free_ char *sys = NULL, *st = NULL;
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)q);
	if (moat__read_file_at(AT_FDCWD, p, 4096, &st) < 0)
		return false;
	const char *rp = strrchr(st, ')');
	if (!rp || rp[1] != ' ' || rp[2] != 'D')
		return false;
	snprintf(p, sizeof(p), "/proc/%d/syscall", (int)q);
	if (moat__read_file_at(AT_FDCWD, p, 4096, &sys) < 0)
		return false;
	char *end;
	long nr = strtol(sys, &end, 10);
	unsigned long long a0 = strtoull(end, NULL, 16);
#if defined(__x86_64__)
	if (nr == __NR_vfork)
		return true;
#endif
	if (nr == __NR_clone)
		return a0 & CLONE_VFORK;
#ifdef __NR_clone3
	if (nr == __NR_clone3) {
		/* glibc's posix_spawn: the flags are the first field of the
		 * struct clone_args a0 points to, in the memory the caller
		 * shares (stopped, as the parent is). */
		uint64_t flags = 0;
		snprintf(p, sizeof(p), "/proc/%d/mem", (int)q);
		_cleanup_close_ int mem = open(p, O_RDONLY | O_CLOEXEC);
		return mem >= 0 && pread(mem, &flags, sizeof(flags), (off_t)a0) == (ssize_t)sizeof(flags) &&
		       (flags & CLONE_VFORK);
	}
#endif
	return false;
}

/* (a): the caller is the only one that can change its memory now: one
 * thread, and every other task sharing its mm (kcmp KCMP_VM, against each
 * process in the sandbox's pid namespace) is a vfork parent waiting for
 * it. No new sharer can appear: the only task that could make one is
 * stopped in this call. */
static bool sole_user(moat_filetrail *t, pid_t pid, const char **why)
{
	long threads = thread_count(pid);
	if (threads != 1) {
		*why = threads > 1 ? "the program has more than one thread, which could change its argv under the check"
				   : "its thread count cannot be read";
		return false;
	}
	/* Sharers are looked for in the sandbox's pid namespace; moat's
	 * seccomp filter refuses new pid namespaces inside, so none hides in
	 * one (attack clone_newpid). */
	DIR *d = t->pidns ? opendir("/proc") : NULL;
	if (!d) {
		*why = "the processes of the sandbox cannot be listed";
		return false;
	}
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d))) {
		char *end;
		long q = strtol(e->d_name, &end, 10);
		if (*end || q <= 0 || q == pid)
			continue;
		/* kcmp first: one system call, where a look at the process's
		 * pid namespace is a walk of three /proc names; on a host of
		 * many processes that walk was most of an exec's cost. A
		 * process that does not share the memory is no sharer in any
		 * namespace; only one kcmp cannot tell about (not ours to
		 * look at) needs the namespace to say whether it counts. */
		long r = sys_kcmp(pid, (pid_t)q, KCMP_VM);
		if (r > 0 || (r < 0 && errno == ESRCH))
			continue;
		int kerr = r < 0 ? errno : 0;
		char p[64];
		struct stat st;
		snprintf(p, sizeof(p), "/proc/%ld/ns/pid", q);
		if (stat(p, &st) < 0 || st.st_ino != t->pidns)
			continue;
		if (r == 0 && !vfork_waiting((pid_t)q)) {
			*why = "another process shares its memory (CLONE_VM) and could change its argv under the check";
			ok = false;
		} else if (r < 0 && kerr != ESRCH) {
			*why = "whether another process shares its memory cannot be told";
			ok = false;
		}
	}
	closedir(d);
	return ok;
}

/* (b) for a private mapping of a file: its pages show writes to the file
 * until the process writes them itself, so the file must be one the
 * sandbox cannot write: found by its name in the process's root, the same
 * device and inode, on a read-only mount (the base system's programs and
 * libraries, where string literals such as "/bin/sh" live). */
static bool file_readonly(void *ud, const char *dev, uint64_t inode, const char *name)
{
	pid_t pid = (pid_t)(intptr_t)ud;
	unsigned maj, min;
	if (sscanf(dev, "%x:%x", &maj, &min) != 2)
		return false;
	_cleanup_close_ int root = proc_open(pid, "root", O_PATH | O_DIRECTORY);
	if (root < 0)
		return false;
	_cleanup_close_ int fd = open_in(root, name, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS, true);
	struct stat st;
	struct statvfs vfs;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != makedev(maj, min) || st.st_ino != (ino_t)inode ||
	    fstatvfs(fd, &vfs) < 0 || !(vfs.f_flag & ST_RDONLY))
		return false;
	_cleanup_free_ char *mi = mount_table(pid);
	return mount_unwritable(mi, fd);
}

/* Reads the path and argv of an execve (with the checks (b) on where they
 * lie in memory). Returns 0, or -errno with *why. */
static int gate_read_call(moat_filetrail *t, pid_t pid, uint64_t path_addr, uint64_t argv_addr, bool compat,
			  const char *maps, gate_read *g, const char **why)
{
	int fd = mem_fd(t, pid);
	bool trunc;
	*why = "its path cannot be read";
	if (fd < 0)
		return -EPERM;
	ssize_t n = read_string(fd, path_addr, g->path, sizeof(g->path), &trunc);
	if (n < 0 || trunc)
		return -EPERM;
	g->path_len = (size_t)n;
	if (!moat__maps_private(maps, path_addr, (uint64_t)n + 1, file_readonly, (void *)(intptr_t)pid, why))
		return -EPERM;
	g->args_len = g->n_argv = 0;
	if (!argv_addr)
		return 0;
	size_t ptr = compat ? 4 : 8;
	for (uint64_t i = 0;; i++) {
		uint64_t p = 0;
		*why = "its argv cannot be read";
		if (pread(fd, &p, ptr, (off_t)(argv_addr + i * ptr)) != (ssize_t)ptr)
			return -EPERM;
		if (!moat__maps_private(maps, argv_addr + i * ptr, ptr, file_readonly, (void *)(intptr_t)pid, why))
			return -EPERM;
		if (!p)
			return 0;
		*why = "its argv is longer than the gate reads";
		if (g->n_argv >= MOAT_APPROVAL_ARGV_MAX || g->args_len >= sizeof(g->args))
			return -EPERM;
		n = read_string(fd, p, g->args + g->args_len, sizeof(g->args) - g->args_len, &trunc);
		if (n < 0 || trunc)
			return -EPERM;
		if (!moat__maps_private(maps, p, (uint64_t)n + 1, file_readonly, (void *)(intptr_t)pid, why))
			return -EPERM;
		g->args_len += (size_t)n + 1;
		g->n_argv++;
	}
}

static gate_call gate_call_of(const struct seccomp_notif *req, call_kind k)
{
	const __u64 *a = req->data.args;
	if (k == K_EXECVEAT)
		return (gate_call){(pid_t)req->pid, (int)a[0], (int)a[4], a[1], a[2], is_compat(req->data.arch)};
	return (gate_call){(pid_t)req->pid, AT_FDCWD, 0, a[0], a[1], is_compat(req->data.arch)};
}

/* Reads and checks one execve: 0 with g filled (g->rule -1: no rule's
 * program), or -errno to answer with and *why. */
static int gate_look(moat_filetrail *t, const gate_call *c, gate_read *g, const char **why)
{
	if (!sole_user(t, c->pid, why))
		return -EPERM;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/maps", (int)c->pid);
	_cleanup_free_ char *maps = NULL;
	int mr = moat__read_file_at(AT_FDCWD, p, 64u << 20, &maps);
	if (mr < 0) {
		*why = mr == -EFBIG ? "its memory map is over 64 MiB" : "its memory map cannot be read";
		return -EPERM;
	}
	int r = gate_read_call(t, c->pid, c->path_addr, c->argv_addr, c->compat, maps, g, why);
	if (r < 0)
		return r;
	struct stat st;
	g->rule = -1;
	r = resolve_exec(c->pid, c->dirfd, g->path, c->flags, &st);
	if (r < 0) {
		/* What the kernel would say (no such file...), unless it is a
		 * path the gate cannot follow: then it is refused. */
		*why = r == -EXDEV ? "its relative path leaves its directory in a way the gate cannot follow"
				   : "its path does not resolve";
		return r == -EXDEV ? -EPERM : r;
	}
	g->dev = st.st_dev;
	g->ino = st.st_ino;
	_cleanup_close_ int root = proc_open(c->pid, "root", O_PATH | O_DIRECTORY);
	bool elsewhere = false; /* its argv is one a rule holds for another program */
	for (size_t i = 0; root >= 0 && i < t->n_rules; i++) {
		if (!moat__exec_args_match(t->rules[i].args, g->args, g->args_len, g->n_argv))
			continue;
		_cleanup_close_ int fd = open_in(root, t->rules[i].path, RESOLVE_IN_ROOT, false);
		struct stat rs;
		if (fd < 0 || fstat(fd, &rs) < 0)
			continue;
		if (rs.st_dev != st.st_dev || rs.st_ino != st.st_ino)
			elsewhere = true;
		else if (g->rule < 0)
			g->rule = (int)i;
	}
	if (root < 0) {
		*why = "its root cannot be opened";
		return -EPERM;
	}
	/* The kernel resolves the path again after the answer: when a rule
	 * would hold these arguments for another program, that walk must not
	 * be able to end there (a link swapped in between). Only such execs
	 * pay for the walk. */
	const char *held = g->rule < 0 ? runs_held(t, c, g->path, g->args, g->args_len, g->n_argv, 0) : NULL;
	if (held) {
		*why = held;
		return -EPERM;
	}
	if (elsewhere && !route_fixed(c->pid, g->path, c->flags & AT_SYMLINK_NOFOLLOW)) {
		*why = "its arguments are ones exec.approve holds for another program, and its path goes through a "
		       "folder or link the sandbox can change (or starts from a working folder or descriptor), which "
		       "could lead the kernel to that program after the check";
		return -EPERM;
	}
	return 0;
}

static uint64_t next_gate_ticket(void)
{
	static uint64_t n;
	/* The top bit keeps these apart from the gateway's tickets. */
	return (UINT64_C(1) << 63) | __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED);
}

/* A line on the session's log for an exec the gate refused. */
/* And one for an exec let through: by a person (approval) or a lease. */
static void gate_log_allowed(moat_filetrail *t, const char *exe, const gate_read *g, pid_t pid, const char *approval,
			     const char *lease)
{
	if (!t->audit)
		return;
	json_t *f = json_object();
	json_object_set_new(f, "path", moat_audit_bytes_json(exe));
	json_object_set_new(f, "argv", split_strings(g->args, g->args_len));
	mem_fd(t, pid);
	add_pids(t, f, pid);
	if (approval && approval[0])
		json_object_set_new(f, "approval", json_string(approval));
	if (lease && lease[0])
		json_object_set_new(f, "lease", json_string(lease));
	moat_audit_event(t->audit, "exec.approved", f, 0, NULL);
}

static void gate_log(moat_filetrail *t, const char *exe, const gate_read *g, pid_t pid, int error, const char *why,
		     const char *approval)
{
	if (!t->audit)
		return;
	json_t *f = json_object();
	json_object_set_new(f, "path", moat_audit_bytes_json(exe));
	json_t *argv = g ? split_strings(g->args, g->args_len) : json_array();
	json_object_set_new(f, "argv", argv);
	mem_fd(t, pid); /* for the pid as the sandbox sees it */
	add_pids(t, f, pid);
	json_object_set_new(f, "error", json_string(strerror(-error)));
	json_object_set_new(f, "reason", json_string(why));
	if (approval && approval[0])
		json_object_set_new(f, "approval", json_string(approval));
	moat_audit_event(t->audit, "exec.denied", f, 0, NULL);
}

static void gate_answer(moat_filetrail *t, uint64_t id, int error)
{
	struct seccomp_notif_resp resp = {.id = id};
	if (error)
		resp.error = error;
	else
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	ioctl(t->fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* The gate's look at an execve, before any answer: 0 to let it go on,
 * 1 held (answered later by gate_settle), or -errno to refuse it. */
static int gate(moat_filetrail *t, const struct seccomp_notif *req, call_kind k)
{
	gate_call c = gate_call_of(req, k);
	/* Zeroed: a refusal before the path is read logs an empty one. */
	gate_read *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	const char *why = NULL;
	int r = gate_look(t, &c, g, &why);
	/* (c): what was read is the stopped call's memory only if the call
	 * is still the one the kernel holds. */
	if (ioctl(t->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		free(g);
		return -EPERM;
	}
	if (r < 0 || g->rule < 0) {
		if (r == -EPERM)
			gate_log(t, g->path, g, c.pid, r, why, NULL);
		free(g);
		return r;
	}
	moat_ask ask;
	moat_error err = {0};
	char *argv[MOAT_APPROVAL_ARGV_MAX + 1];
	size_t n = 0;
	for (size_t off = 0; off < g->args_len && n < MOAT_APPROVAL_ARGV_MAX; off += strlen(g->args + off) + 1)
		argv[n++] = g->args + off;
	argv[n] = NULL;
	const char *exe = t->rules[g->rule].path;
	if (moat__approval_ask_exec(&ask, exe, argv, &err) < 0) {
		gate_log(t, exe, g, c.pid, -EPERM, err.msg, NULL);
		free(g);
		return -EPERM;
	}
	uint64_t ticket = next_gate_ticket();
	moat_approvals_outcome o;
	if (moat_approvals_ask(t->approvals, &ask, ticket, &o, &err) < 0) {
		gate_log(t, exe, g, c.pid, -EPERM, err.msg, NULL);
		free(g);
		return -EPERM;
	}
	if (o.state == MOAT_APPROVAL_ALLOWED) {
		gate_log_allowed(t, exe, g, c.pid, NULL, o.lease);
		free(g);
		return 0; /* a lease covers it */
	}
	if (t->n_gated >= GATE_HELD_MAX) {
		moat_approvals_withdraw(t->approvals, ticket, "too many programs held at once");
		gate_log(t, exe, g, c.pid, -EPERM, "too many programs held at once", o.id);
		free(g);
		return -EPERM;
	}
	t->gated[t->n_gated++] = (gated){.id = req->id, .ticket = ticket, .call = c, .read = g};
	snprintf(t->gated[t->n_gated - 1].approval, sizeof(t->gated[0].approval), "%s", o.id);
	return 1;
}

/* A held exec's decision is in: allowed, it goes on only if the call still
 * reads exactly as it did when it was held (and passes the same checks);
 * anything else is refused. */
static void gate_finish(moat_filetrail *t, gated *h, const moat_approvals_outcome *o)
{
	const char *exe = t->rules[h->read->rule].path;
	int error = -EPERM;
	const char *why = o->state == MOAT_APPROVAL_TIMED_OUT ? "no one decided in time"
			  : o->ended				 ? "the session ended before anyone decided"
								 : "denied by a reviewer";
	char reason[MOAT_APPROVAL_NOTE_MAX + 32];
	if (o->state == MOAT_APPROVAL_DENIED && o->reason[0] && !o->ended) {
		snprintf(reason, sizeof(reason), "denied by a reviewer: %s", o->reason);
		why = reason;
	}
	if (o->state == MOAT_APPROVAL_ALLOWED) {
		gate_read *again = calloc(1, sizeof(*again));
		const char *w2 = NULL;
		forget_mem(t);
		int r = again ? gate_look(t, &h->call, again, &w2) : -ENOMEM;
		if (r < 0) {
			why = w2 ? w2 : "it cannot be read again";
		} else if (again->path_len != h->read->path_len || memcmp(again->path, h->read->path, again->path_len) ||
			   again->args_len != h->read->args_len ||
			   memcmp(again->args, h->read->args, again->args_len) || again->dev != h->read->dev ||
			   again->ino != h->read->ino) {
			why = "its path or argv changed while it was held";
		} else {
			error = 0;
		}
		free(again);
	}
	if (ioctl(t->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &h->id) < 0) {
		free(h->read);
		return; /* the caller is gone: nothing to answer */
	}
	gate_answer(t, h->id, error);
	if (error)
		gate_log(t, exe, h->read, h->call.pid, error, why, h->approval);
	else
		gate_log_allowed(t, exe, h->read, h->call.pid, h->approval, o->lease);
	forget_mem(t);
	free(h->read);
}

/* Answers what has been decided, and withdraws what no caller waits for
 * any more (killed while held). */
static void gate_settle(moat_filetrail *t)
{
	size_t k = 0;
	for (size_t i = 0; i < t->n_gated; i++) {
		gated *h = &t->gated[i];
		if (ioctl(t->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &h->id) < 0) {
			moat_approvals_withdraw(t->approvals, h->ticket, "the program's process went away");
			free(h->read);
			continue;
		}
		moat_approvals_outcome o;
		moat_approvals_poll(t->approvals, h->ticket, &o);
		if (o.state == MOAT_APPROVAL_PENDING) {
			t->gated[k++] = *h;
			continue;
		}
		gate_finish(t, h, &o);
	}
	t->n_gated = k;
}

/* What is still held when the trail stops is refused. */
static void gate_end(moat_filetrail *t)
{
	for (size_t i = 0; i < t->n_gated; i++) {
		moat_approvals_withdraw(t->approvals, t->gated[i].ticket, "the session ended before anyone decided");
		gate_answer(t, t->gated[i].id, -EPERM);
		free(t->gated[i].read);
	}
	t->n_gated = 0;
}

static void gate_wake(void *ud)
{
	moat_filetrail *t = ud;
	uint64_t one = 1;
	if (write(t->wakefd, &one, sizeof(one)) < 0) {
		/* Full: already signalled. */
	}
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
	bool is_exec = k == K_EXECVE || k == K_EXECVEAT;
	bool holding = !session_started(t);
	if (is_exec && !t->armed) {
		/* The command's first execve: its process is stopped here with
		 * the sandbox's mounts final. As root, they get fanotify marks
		 * now; rootless the call fails and the seccomp source is all. */
		char p[64];
		struct stat st;
		snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)req.pid);
		t->pidns = stat(p, &st) == 0 ? st.st_ino : 0;
		int fd = geteuid() == 0 && t->fanotify_wanted ? moat__fanwatch_open((pid_t)req.pid) : -EPERM;
		t->fan_fd = fd >= 0 ? fd : -1;
		t->stats.fanotify = fd >= 0;
	}
	if (is_exec)
		t->armed = true;
	if (t->armed && k >= 0) {
		f = json_object();
		type = describe(t, &req, (call_kind)k, f);
	}
	/* Looked at while the caller is still stopped in this call, so that
	 * its previous exec has settled and this one has not begun. */
	unsigned char auxv[TRAIL_AUXV_MAX];
	size_t auxv_len = is_exec && holding ? auxv_of((pid_t)req.pid, auxv, sizeof(auxv)) : 0;
	bool prev_ran = is_exec && holding ? previous_exec_ran(t, (pid_t)req.pid, auxv, auxv_len) : true;
	/* The memory read is only trusted if the task is still the one that
	 * made the call: a recycled pid would have been another process. */
	bool valid = ioctl(t->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0;
	/* With exec.approve, an exec goes on only when the gate says so. */
	int verdict = is_exec && t->n_rules && valid ? gate(t, &req, (call_kind)k) : 0;
	if (verdict <= 0)
		gate_answer(t, req.id, verdict);
	if (is_exec) {
		if (holding)
			remember_exec(t, (pid_t)req.pid, k == K_EXECVEAT ? req.data.args[1] : req.data.args[0], auxv,
				      auxv_len);
		else
			forget_held(t);
		forget_mem(t); /* the process is about to get a new mm */
	}
	if (!type || !valid) {
		json_decref(f);
		return;
	}
	if (!session_started(t)) {
		if (strcmp(type, "exec") == 0 && t->n_pend < TRAIL_PENDING_MAX) {
			hold_exec(t, f, prev_ran);
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

static void fan_emit(void *ctx, const char *type, json_t *f)
{
	moat_filetrail *t = ctx;
	pid_t host = (pid_t)json_integer_value(json_object_get(f, "host_pid"));
	pid_t ppid, ns = 0;
	read_status(host, &ppid, &ns);
	json_object_set_new(f, "pid", ns > 0 ? json_integer(ns) : json_null());
	t->stats.fanotify_events++;
	write_event(t, type, f);
}

static void fan_drain(moat_filetrail *t)
{
	if (t->fan_fd >= 0)
		t->stats.fanotify_lost += moat__fanwatch_drain(t->fan_fd, t->pidns, fan_emit, t);
}

static void *trail_main(void *arg)
{
	moat_filetrail *t = arg;
	for (;;) {
		/* fanotify's events wait until session.start is in the log, so
		 * that the log reads in order. */
		struct pollfd p[4] = {{.fd = t->fd, .events = POLLIN},
				      {.fd = t->stopfd, .events = POLLIN},
				      {.fd = session_started(t) ? t->fan_fd : -1, .events = POLLIN},
				      {.fd = t->wakefd, .events = POLLIN}};
		/* Held execs are looked at each second too: one whose caller
		 * was killed is withdrawn. */
		int timeout = t->fan_fd >= 0 && !session_started(t) ? 100 : t->n_gated ? 1000 : -1;
		if (poll(p, 4, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[3].revents & POLLIN) {
			uint64_t v;
			if (read(t->wakefd, &v, sizeof(v)) < 0) {
				/* Nothing to read: woken by someone else. */
			}
		}
		if (t->n_gated)
			gate_settle(t);
		if (p[2].revents & POLLIN)
			fan_drain(t);
		if (p[0].revents & POLLIN)
			handle(t);
		else if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break; /* no process holds the filter any more */
		else if (p[1].revents)
			break;
	}
	gate_end(t);
	__atomic_store_n(&t->exited, true, __ATOMIC_RELEASE);
	return NULL;
}

bool moat__filetrail_done(const moat_filetrail *t)
{
	return !t || __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE);
}

int moat__filetrail_start(int listener, moat_audit *a, moat_filetrail **ret, moat_error *err)
{
	return moat__filetrail_start_source(listener, a, true, ret, err);
}

int moat__filetrail_start_source(int listener, moat_audit *a, bool fanotify, moat_filetrail **ret, moat_error *err)
{
	moat_filetrail_opts o = {.audit = a, .fanotify = fanotify, .record = true};
	return moat__filetrail_start_opts(listener, &o, ret, err);
}

int moat__filetrail_start_opts(int listener, const moat_filetrail_opts *o, moat_filetrail **ret, moat_error *err)
{
	moat_audit *a = o->audit;
	bool fanotify = o->fanotify;
	_cleanup_close_ int fd = listener;
	moat_filetrail *t = calloc(1, sizeof(*t));
	if (!t)
		return moat_error_set(err, ENOMEM, "file trail");
	t->fd = TAKE_FD(fd);
	t->mem_fd = -1;
	t->held_fd = -1;
	t->fan_fd = -1;
	t->fanotify_wanted = fanotify;
	t->audit = a;
	t->record = o->record && a;
	t->rules = o->rules;
	t->n_rules = o->approvals ? o->n_rules : 0;
	t->approvals = o->approvals;
	t->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->wakefd < 0) {
		int e = -errno;
		moat__filetrail_stop(t, NULL);
		return moat_error_set(err, e, "file trail: eventfd");
	}
	if (t->n_rules)
		moat_approvals_add_wake(t->approvals, gate_wake, t);
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
	if (t->n_rules)
		moat_approvals_remove_wake(t->approvals, gate_wake, t);
	flush_pending(t);
	/* What the kernel queued for the last processes. */
	fan_drain(t);
	if (ret_stats)
		*ret_stats = t->stats;
	forget_mem(t);
	forget_held(t);
	if (t->fan_fd >= 0)
		close(t->fan_fd);
	if (t->fd >= 0)
		close(t->fd);
	if (t->stopfd >= 0)
		close(t->stopfd);
	if (t->wakefd > 0)
		close(t->wakefd);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
