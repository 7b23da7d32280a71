/* Per-run cgroup on cgroup v2, cgroup v1 or a hybrid of both.
 *
 * The run's cgroup is always a child of our own cgroup in each hierarchy, so
 * a nested run stays inside its parent's limits and accounting, and nothing
 * outside our own subtree is touched. Each hierarchy the run uses is one
 * "node" (a directory we create); a node's version picks its backend, a small
 * table of functions that knows that version's file names. */
#include "cgroup.h"
#include "sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#define CG_NOTE_MAX 160
#define CG_READ_MAX 65536
/* How long destroy() waits for the kernel to let go of a cgroup whose tasks
 * were killed: exiting tasks keep it busy until they are fully reaped. */
#define CG_RMDIR_WAIT_MS 2000
/* The CFS period used for --cpus, as systemd and runc use. */
#define CG_CPU_PERIOD_US 100000

static const char *const ctrl_names[_MOAT_CG_MAX] = {
	[MOAT_CG_MEMORY] = "memory",
	[MOAT_CG_PIDS] = "pids",
	[MOAT_CG_CPU] = "cpu",
	[MOAT_CG_CPUACCT] = "cpuacct",
	[MOAT_CG_CPUSET] = "cpuset",
};

typedef struct cg_node {
	int version;    /* 1 or 2 */
	unsigned ctrls; /* bit mask of moat_cgroup_ctrl this directory serves */
	char path[MOAT_MAX_PATH];
	int dirfd;
	int procs_fd; /* cgroup.procs, opened for writing by create() */
	bool created;
} cg_node;

struct moat_cgroup {
	cg_node nodes[_MOAT_CG_MAX];
	size_t n_nodes;
	int ctrl_node[_MOAT_CG_MAX]; /* index into nodes, or -1 */
	bool host_v1, host_v2;
	char note[CG_NOTE_MAX];
	int epoll_fd;
	int event_fds[_MOAT_CG_MAX * 2];
	size_t n_event_fds;
	uint64_t memory_seen_max; /* v2 without memory.peak: the largest memory.current read */
	/* What the counters held when moat__cgroup_reuse() last made this
	 * cgroup account as a new one: stats() reports what came since. */
	uint64_t oom_base, pids_base;
	bool memory_limited, pids_limited, cpus_limited;
	/* v2 delegation: our own process was moved into a leaf so that the
	 * controllers could be enabled in our own cgroup; destroy() undoes it. */
	bool moved_self;
	char v2_own[MOAT_MAX_PATH];
	char v2_leaf[MOAT_MAX_PATH];
	char v2_enabled[64]; /* the "+ctrl" words we enabled */
	/* Folders above a named cgroup (moat_cgroup_req.path) that create()
	 * made, in the order made: destroy() removes them deepest first,
	 * each only if nothing else uses it by then (rmdir fails otherwise). */
	char **made;
	size_t n_made;
};

/* ---- small file helpers (relative to a cgroup directory fd) ---- */

static int read_text(int dirfd, const char *file, char **ret)
{
	int r = moat__read_file_at(dirfd, file, CG_READ_MAX, ret);
	return r < 0 ? r : 0;
}

/* A file holding one number, or "max" (returned as MOAT_UNLIMITED). */
static int read_u64(int dirfd, const char *file, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = read_text(dirfd, file, &s);
	if (r < 0)
		return r;
	if (moat__startswith(s, "max")) {
		*ret = MOAT_UNLIMITED;
		return 0;
	}
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Pure: the value of "KEY VALUE" in a flat keyed text (memory.events,
 * cpu.stat, pids.events, memory.oom_control, cpuacct.stat). */
static int keyed_value(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	for (const char *p = text; p && *p;) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			char *end = NULL;
			errno = 0;
			unsigned long long v = strtoull(p + klen + 1, &end, 10);
			if (errno || end == p + klen + 1)
				return -EINVAL;
			*ret = v;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

static int read_keyed(int dirfd, const char *file, const char *key, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = read_text(dirfd, file, &s);
	if (r < 0)
		return r;
	return keyed_value(s, key, ret);
}

static int write_u64(int dirfd, const char *file, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return moat__write_string_at(dirfd, file, buf);
}

static bool file_exists_at(int dirfd, const char *file)
{
	return faccessat(dirfd, file, F_OK, 0) == 0;
}

/* ---- backends ---- */

typedef struct cg_backend {
	int (*set_memory)(int dirfd, uint64_t bytes, char *note, size_t note_len);
	int (*set_pids)(int dirfd, uint64_t n);
	int (*set_cpus)(int dirfd, uint64_t milli);
	int (*read_cpu)(int dirfd, uint64_t *user_us, uint64_t *sys_us);
	int (*read_memory_peak)(int dirfd, uint64_t *bytes);
	/* Counters since the cgroup was made: OOM kills, forks refused by
	 * the pids limit. */
	int (*read_oom)(int dirfd, uint64_t *kills);
	int (*read_pids_hit)(int dirfd, uint64_t *hits);
	/* Opens the event sources of the controllers in ctrls; returns how
	 * many fds were put in fds (at most 2). */
	int (*open_events)(int dirfd, unsigned ctrls, int *fds);
	/* Kills every task at once when the kernel can (v2 cgroup.kill). */
	int (*kill_all)(int dirfd);
} cg_backend;

static int v2_set_memory(int dirfd, uint64_t bytes, char *note, size_t note_len)
{
	int r = write_u64(dirfd, "memory.max", bytes);
	if (r < 0)
		return r;
	/* Swap would let the run exceed its limit silently; memory.swap.max
	 * is absent when the kernel has no swap accounting, and then there
	 * is no swap to fear only if the host has none. */
	if (moat__write_string_at(dirfd, "memory.swap.max", "0") < 0)
		snprintf(note, note_len, "memory.swap.max not available: swap use is not limited");
	/* One OOM kill ends the whole run instead of leaving a half-dead
	 * process tree whose verdict would depend on which task died. */
	(void)moat__write_string_at(dirfd, "memory.oom.group", "1");
	return 0;
}

static int v2_set_pids(int dirfd, uint64_t n) { return write_u64(dirfd, "pids.max", n); }

static int v2_set_cpus(int dirfd, uint64_t milli)
{
	char buf[64];
	uint64_t quota = milli * CG_CPU_PERIOD_US / 1000;
	if (quota < 1000)
		quota = 1000; /* the kernel's minimum quota is 1 ms */
	snprintf(buf, sizeof(buf), "%" PRIu64 " %u", quota, CG_CPU_PERIOD_US);
	return moat__write_string_at(dirfd, "cpu.max", buf);
}

static int v2_read_cpu(int dirfd, uint64_t *user_us, uint64_t *sys_us)
{
	_cleanup_free_ char *s = NULL;
	int r = read_text(dirfd, "cpu.stat", &s);
	if (r < 0)
		return r;
	r = keyed_value(s, "user_usec", user_us);
	if (r < 0)
		return r;
	return keyed_value(s, "system_usec", sys_us);
}

static int v2_read_memory_peak(int dirfd, uint64_t *bytes)
{
	if (read_u64(dirfd, "memory.peak", bytes) == 0)
		return 0;
	return -ENOENT; /* the caller falls back to the largest memory.current seen */
}

static int v2_read_oom(int dirfd, uint64_t *kills) { return read_keyed(dirfd, "memory.events", "oom_kill", kills); }

static int read_pids_events(int dirfd, uint64_t *hits) { return read_keyed(dirfd, "pids.events", "max", hits); }

/* Open a kernfs file whose changes wake poll() with POLLPRI. */
static int open_notify(int dirfd, const char *file)
{
	int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? moat__neg_errno() : fd;
}

static int v2_open_events(int dirfd, unsigned ctrls, int *fds)
{
	int n = 0;
	if (ctrls & (1u << MOAT_CG_MEMORY)) {
		int fd = open_notify(dirfd, "memory.events");
		if (fd >= 0)
			fds[n++] = fd;
	}
	if (ctrls & (1u << MOAT_CG_PIDS)) {
		int fd = open_notify(dirfd, "pids.events");
		if (fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

static int v2_kill_all(int dirfd) { return moat__write_string_at(dirfd, "cgroup.kill", "1"); }

static int v1_set_memory(int dirfd, uint64_t bytes, char *note, size_t note_len)
{
	int r = write_u64(dirfd, "memory.limit_in_bytes", bytes);
	if (r < 0)
		return r;
	/* memsw is memory plus swap; equal to the memory limit it forbids
	 * swap. It is missing when the kernel runs without swap accounting. */
	if (file_exists_at(dirfd, "memory.memsw.limit_in_bytes")) {
		r = write_u64(dirfd, "memory.memsw.limit_in_bytes", bytes);
		if (r < 0)
			return r;
	} else {
		(void)moat__write_string_at(dirfd, "memory.swappiness", "0");
		snprintf(note, note_len, "memory.memsw not available: swap use is not limited");
	}
	return 0;
}

static int v1_set_pids(int dirfd, uint64_t n) { return write_u64(dirfd, "pids.max", n); }

static int v1_set_cpus(int dirfd, uint64_t milli)
{
	uint64_t quota = milli * CG_CPU_PERIOD_US / 1000;
	if (quota < 1000)
		quota = 1000;
	int r = write_u64(dirfd, "cpu.cfs_period_us", CG_CPU_PERIOD_US);
	if (r < 0)
		return r;
	return write_u64(dirfd, "cpu.cfs_quota_us", quota);
}

static int v1_read_cpu(int dirfd, uint64_t *user_us, uint64_t *sys_us)
{
	uint64_t u = 0, s = 0, total = 0;
	/* cpuacct.usage is the exact runtime in nanoseconds; the user/system
	 * split (cpuacct.usage_user/_sys) comes from tick sampling and does
	 * not add up to it, so the exact total is split in their proportion.
	 * cpuacct.stat (USER_HZ ticks) is the fallback for old kernels. */
	if (read_u64(dirfd, "cpuacct.usage_user", &u) == 0 && read_u64(dirfd, "cpuacct.usage_sys", &s) == 0) {
		bool exact = read_u64(dirfd, "cpuacct.usage", &total) == 0;
		if (exact && u + s > 0) {
			uint64_t user = (uint64_t)((unsigned __int128)total * u / (u + s));
			*user_us = user / 1000;
			*sys_us = total / 1000 - *user_us;
		} else if (exact) {
			/* No tick fell within the run (a run of a few ms):
			 * no split is known, the total is, and is counted as
			 * user time rather than dropped. */
			*user_us = total / 1000;
			*sys_us = 0;
		} else {
			*user_us = u / 1000;
			*sys_us = s / 1000;
		}
		return 0;
	}
	_cleanup_free_ char *st = NULL;
	int r = read_text(dirfd, "cpuacct.stat", &st);
	if (r < 0)
		return r;
	if (keyed_value(st, "user", &u) < 0 || keyed_value(st, "system", &s) < 0)
		return -EINVAL;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	*user_us = u * 1000000 / (uint64_t)hz;
	*sys_us = s * 1000000 / (uint64_t)hz;
	return 0;
}

static int v1_read_memory_peak(int dirfd, uint64_t *bytes)
{
	return read_u64(dirfd, "memory.max_usage_in_bytes", bytes);
}

static int v1_read_oom(int dirfd, uint64_t *kills)
{
	/* "oom_kill N" in memory.oom_control exists since Linux 4.13; before
	 * that "under_oom" is the only trace, and only while it lasts. */
	if (read_keyed(dirfd, "memory.oom_control", "oom_kill", kills) == 0)
		return 0;
	return read_keyed(dirfd, "memory.oom_control", "under_oom", kills);
}

static int v1_open_events(int dirfd, unsigned ctrls, int *fds)
{
	int n = 0;
	if (ctrls & (1u << MOAT_CG_MEMORY)) {
		/* v1 reports OOM through an eventfd registered in
		 * cgroup.event_control with the memory.oom_control fd. */
		_cleanup_close_ int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		_cleanup_close_ int ofd = openat(dirfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
		if (efd >= 0 && ofd >= 0) {
			char buf[32];
			snprintf(buf, sizeof(buf), "%d %d", efd, ofd);
			if (moat__write_string_at(dirfd, "cgroup.event_control", buf) == 0)
				fds[n++] = TAKE_FD(efd);
		}
	}
	if (ctrls & (1u << MOAT_CG_PIDS)) {
		int fd = open_notify(dirfd, "pids.events");
		if (fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

static const cg_backend backend_v1 = {
	.set_memory = v1_set_memory,
	.set_pids = v1_set_pids,
	.set_cpus = v1_set_cpus,
	.read_cpu = v1_read_cpu,
	.read_memory_peak = v1_read_memory_peak,
	.read_oom = v1_read_oom,
	.read_pids_hit = read_pids_events,
	.open_events = v1_open_events,
	.kill_all = NULL,
};

static const cg_backend backend_v2 = {
	.set_memory = v2_set_memory,
	.set_pids = v2_set_pids,
	.set_cpus = v2_set_cpus,
	.read_cpu = v2_read_cpu,
	.read_memory_peak = v2_read_memory_peak,
	.read_oom = v2_read_oom,
	.read_pids_hit = read_pids_events,
	.open_events = v2_open_events,
	.kill_all = v2_kill_all,
};

static const cg_backend *backend_of(const cg_node *n) { return n->version == 2 ? &backend_v2 : &backend_v1; }

/* ---- layout: pure parsing of mountinfo and /proc/self/cgroup ---- */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *w = s;
	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static bool list_has(const char *list, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == wl && strncmp(p, word, wl) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* The path of our own cgroup in the hierarchy whose /proc/self/cgroup
 * controller field is `want` ("" for v2, else a controller name). */
static bool self_path(const char *self_cgroup, const char *want, char *buf, size_t len)
{
	for (const char *p = self_cgroup; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		char line[MOAT_MAX_PATH + 256];
		if (l < sizeof(line)) {
			memcpy(line, p, l);
			line[l] = '\0';
			char *c1 = strchr(line, ':');
			char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c1 && c2) {
				*c2 = '\0';
				const char *ctrls = c1 + 1;
				/* v2 is the line "0::PATH"; v1 lines list their controllers. */
				*c1 = '\0';
				bool match = want[0] ? list_has(ctrls, want) : strcmp(line, "0") == 0 && !ctrls[0];
				if (match) {
					snprintf(buf, len, "%s", c2 + 1);
					return true;
				}
			}
		}
		p = eol ? eol + 1 : NULL;
	}
	return false;
}

/* mount point + (own path relative to the mount's root). False when our
 * cgroup is not visible through this mount. */
static bool compose_dir(const char *mnt, const char *mroot, const char *own, char *buf, size_t len)
{
	const char *rel = own;
	if (strcmp(mroot, "/") != 0) {
		size_t rl = strlen(mroot);
		if (strncmp(own, mroot, rl) != 0 || (own[rl] != '/' && own[rl] != '\0'))
			return false;
		rel = own + rl;
	}
	/* A cgroup path must not climb out of its mount. */
	if (strstr(rel, "/../") || (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0))
		return false;
	if (strcmp(rel, "/") == 0 || rel[0] == '\0')
		rel = "";
	int n = snprintf(buf, len, "%s%s", mnt, rel);
	return n > 0 && (size_t)n < len;
}

int moat__cgroup_layout_parse(const char *mountinfo, const char *self_cgroup, moat_cgroup_layout *ret,
			      moat_error *err)
{
	moat_cgroup_layout l;
	memset(&l, 0, sizeof(l));
	for (const char *p = mountinfo; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		_cleanup_free_ char *line = strndup(p, len);
		if (!line)
			return moat_error_set(err, ENOMEM, "mountinfo");
		p = eol ? eol + 1 : NULL;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
		char *fields[6] = {0};
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; i < 6 && tok; i++, tok = strtok_r(NULL, " ", &save))
			fields[i] = tok;
		if (!fields[5])
			continue;
		char *fstype = NULL, *superopts = NULL;
		for (; tok; tok = strtok_r(NULL, " ", &save)) {
			if (strcmp(tok, "-") == 0) {
				fstype = strtok_r(NULL, " ", &save);
				(void)strtok_r(NULL, " ", &save); /* source */
				superopts = strtok_r(NULL, " ", &save);
				break;
			}
		}
		if (!fstype)
			continue;
		char *mroot = fields[3], *mnt = fields[4];
		unescape_octal(mroot);
		unescape_octal(mnt);
		char own[MOAT_MAX_PATH];
		if (strcmp(fstype, "cgroup2") == 0) {
			if (l.v2_mounted)
				continue;
			if (!self_path(self_cgroup, "", own, sizeof(own)))
				continue;
			if (!compose_dir(mnt, mroot, own, l.v2_dir, sizeof(l.v2_dir)))
				continue;
			l.v2_mounted = true;
			if (strcmp(mroot, "/") == 0)
				snprintf(l.v2_top, sizeof(l.v2_top), "%s", mnt);
		} else if (strcmp(fstype, "cgroup") == 0 && superopts) {
			for (int c = 0; c < _MOAT_CG_MAX; c++) {
				if (l.ctrl[c].version == 1 || !list_has(superopts, ctrl_names[c]))
					continue;
				if (!self_path(self_cgroup, ctrl_names[c], own, sizeof(own)))
					continue;
				if (!compose_dir(mnt, mroot, own, l.ctrl[c].dir, sizeof(l.ctrl[c].dir)))
					continue;
				l.ctrl[c].version = 1;
				l.v1_mounted = true;
				if (strcmp(mroot, "/") == 0)
					snprintf(l.ctrl[c].top, sizeof(l.ctrl[c].top), "%s", mnt);
			}
		}
	}
	/* Controllers not on v1 go to v2 provisionally; create() checks that
	 * the v2 cgroup really offers them. */
	for (int c = 0; c < _MOAT_CG_MAX; c++) {
		if (l.ctrl[c].version == 0 && l.v2_mounted) {
			l.ctrl[c].version = 2;
			snprintf(l.ctrl[c].dir, sizeof(l.ctrl[c].dir), "%s", l.v2_dir);
			snprintf(l.ctrl[c].top, sizeof(l.ctrl[c].top), "%s", l.v2_top);
		}
	}
	*ret = l;
	return 0;
}

/* ---- creation ---- */

static void note_set(moat_cgroup *cg, const char *fmt, ...) _printf_(2, 3);
static void note_set(moat_cgroup *cg, const char *fmt, ...)
{
	if (cg->note[0])
		return; /* the first reason is the one that matters */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cg->note, sizeof(cg->note), fmt, ap);
	va_end(ap);
}

static moat_cgroup *cgroup_new(void)
{
	moat_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return NULL;
	cg->epoll_fd = -1;
	for (int c = 0; c < _MOAT_CG_MAX; c++)
		cg->ctrl_node[c] = -1;
	for (size_t i = 0; i < ELEMENTSOF(cg->nodes); i++)
		cg->nodes[i].dirfd = cg->nodes[i].procs_fd = -1;
	return cg;
}

/* Which v2 controllers the cgroup at dir offers its children, as words. */
static bool v2_offers(const char *dir, const char *ctrl)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return false;
	_cleanup_free_ char *s = NULL;
	if (read_text(dfd, "cgroup.controllers", &s) < 0)
		return false;
	for (char *save = NULL, *w = strtok_r(s, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, ctrl) == 0)
			return true;
	return false;
}

static bool words_have(const char *text, const char *word)
{
	_cleanup_free_ char *s = strdup(text ? text : "");
	if (!s)
		return false;
	for (char *save = NULL, *w = strtok_r(s, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, word) == 0)
			return true;
	return false;
}

/* Makes the v2 controllers in `want` usable for children of our own cgroup
 * `own`. Already enabled: nothing to do. Otherwise our cgroup must be
 * delegated to us (writable); since a cgroup with processes cannot enable
 * controllers for its children (the "no internal processes" rule), we move
 * ourselves into a leaf first, as systemd expects a delegated scope's owner
 * to do. */
static int v2_prepare_parent(moat_cgroup *cg, const char *own, const char *want)
{
	_cleanup_close_ int dfd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		note_set(cg, "cgroup v2 %s: %s", own, strerror(errno));
		return -errno;
	}
	_cleanup_free_ char *enabled = NULL;
	if (read_text(dfd, "cgroup.subtree_control", &enabled) < 0) {
		note_set(cg, "cgroup v2 %s: cannot read cgroup.subtree_control", own);
		return -EIO;
	}
	char missing[64] = "";
	_cleanup_free_ char *w = strdup(want);
	if (!w)
		return -ENOMEM;
	for (char *save = NULL, *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (!words_have(enabled, t)) {
			size_t l = strlen(missing);
			snprintf(missing + l, sizeof(missing) - l, "%s+%s", l ? " " : "", t);
		}
	if (!missing[0])
		return 0;
	if (faccessat(dfd, "cgroup.subtree_control", W_OK, AT_EACCESS) < 0 ||
	    faccessat(dfd, "cgroup.procs", W_OK, AT_EACCESS) < 0 || faccessat(dfd, ".", W_OK, AT_EACCESS) < 0) {
		note_set(cg, "cgroup v2: own cgroup is not delegated to uid %u (no write permission)",
			 (unsigned)geteuid());
		return -EACCES;
	}
	int r = moat__write_string_at(dfd, "cgroup.subtree_control", missing);
	if (r == -EBUSY) {
		char leaf[64];
		snprintf(leaf, sizeof(leaf), "moat-supervisor-%d", (int)getpid());
		if (mkdirat(dfd, leaf, 0755) < 0 && errno != EEXIST) {
			note_set(cg, "cgroup v2: mkdir %s: %s", leaf, strerror(errno));
			return -errno;
		}
		char procs[128];
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", leaf);
		r = moat__write_string_at(dfd, procs, "0");
		if (r < 0) {
			(void)unlinkat(dfd, leaf, AT_REMOVEDIR);
			note_set(cg, "cgroup v2: move self to a leaf: %s", strerror(-r));
			return r;
		}
		cg->moved_self = true;
		snprintf(cg->v2_own, sizeof(cg->v2_own), "%s", own);
		snprintf(cg->v2_leaf, sizeof(cg->v2_leaf), "%s", leaf);
		r = moat__write_string_at(dfd, "cgroup.subtree_control", missing);
	}
	if (r < 0) {
		note_set(cg, "cgroup v2: enable %s: %s", missing, strerror(-r));
		return r;
	}
	snprintf(cg->v2_own, sizeof(cg->v2_own), "%s", own);
	snprintf(cg->v2_enabled, sizeof(cg->v2_enabled), "%s", missing);
	return 0;
}

/* A moat killed with SIGKILL cannot remove its run's cgroup. The next run
 * sweeps such leftovers beside its own: a "moat-PID-N", or the v2 leaf
 * "moat-supervisor-PID", whose maker is gone (sweep.h; a reused pid is
 * told apart by its start time). rmdir only ever succeeds on a cgroup
 * without tasks, so a live run is never disturbed. */
static void sweep_stale(const char *parent, moat_maker_cache *makers)
{
	DIR *d = opendir(parent);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "moat-", 5) != 0 || de->d_type != DT_DIR)
			continue;
		const char *num = de->d_name + 5;
		bool leaf = strncmp(num, "supervisor-", 11) == 0;
		if (leaf)
			num += 11;
		char *end;
		long pid = strtol(num, &end, 10);
		if (end == num || *end != (leaf ? '\0' : '-') || pid <= 0 || pid == (long)getpid())
			continue;
		char path[MOAT_MAX_PATH];
		int n = snprintf(path, sizeof(path), "%s/%s", parent, de->d_name);
		struct stat st;
		if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) < 0 ||
		    !moat__maker_gone_cached(makers, (pid_t)pid, st.st_ctim.tv_sec))
			continue;
		(void)rmdir(path);
	}
	closedir(d);
}

/* Every hierarchy we can write is swept, whichever controllers this run
 * uses: a killed run with --cpus left a cpu cgroup that runs without it
 * would otherwise never look at. */
static void sweep_layout(const moat_cgroup_layout *layout)
{
	const char *seen[_MOAT_CG_MAX + 1];
	size_t n = 0;
	/* A live run has a folder in each hierarchy: its maker is looked up
	 * once for all of them. */
	_cleanup_free_ moat_maker_cache *makers = calloc(1, sizeof(*makers));
	if (!makers)
		return;
	for (int c = 0; c <= _MOAT_CG_MAX; c++) {
		const char *dir = c < _MOAT_CG_MAX ? (layout->ctrl[c].version ? layout->ctrl[c].dir : NULL)
						   : (layout->v2_mounted ? layout->v2_dir : NULL);
		if (!dir || !dir[0])
			continue;
		bool dup = false;
		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(seen[i], dir) == 0;
		if (dup)
			continue;
		seen[n++] = dir;
		if (access(dir, W_OK) == 0)
			sweep_stale(dir, makers);
	}
}

static int node_for(moat_cgroup *cg, const moat_cgroup_host *host, int version, const char *parent,
		    const char *name, moat_cgroup_ctrl c)
{
	char path[MOAT_MAX_PATH];
	int n = snprintf(path, sizeof(path), "%s/%s", parent, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < cg->n_nodes; i++)
		if (strcmp(cg->nodes[i].path, path) == 0) {
			cg->nodes[i].ctrls |= 1u << c;
			cg->ctrl_node[c] = (int)i;
			return 0;
		}
	/* v1 hierarchies are not delegated to unprivileged users: the kernel
	 * lets root only move tasks safely there, so a missing write
	 * permission means "no cgroup", not an error. */
	if (access(parent, W_OK) < 0) {
		note_set(cg, "cgroup %s: %s not writable by uid %u", version == 2 ? "v2" : "v1", parent,
			 (unsigned)geteuid());
		return -EACCES;
	}
	/* A leftover of a dead moat that had our PID: without tasks, it goes. */
	if (mkdir(path, 0755) < 0 && (errno != EEXIST || rmdir(path) < 0 || mkdir(path, 0755) < 0)) {
		int e = errno;
		note_set(cg, "cgroup: mkdir %s: %s", path, strerror(e));
		return -e;
	}
	if (host && host->fake_kernel_mkdir)
		host->fake_kernel_mkdir(path, version, host->userdata);
	cg_node *node = &cg->nodes[cg->n_nodes];
	snprintf(node->path, sizeof(node->path), "%s", path);
	node->version = version;
	node->created = true;
	node->ctrls = 1u << c;
	cg->ctrl_node[c] = (int)cg->n_nodes++;
	node->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (node->dirfd < 0)
		return moat__neg_errno();
	node->procs_fd = openat(node->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (node->procs_fd < 0)
		return moat__neg_errno();
	return 0;
}

static void drop_ctrl(moat_cgroup *cg, moat_cgroup_ctrl c) { cg->ctrl_node[c] = -1; }

static int moat__cgroup_create_named(const moat_cgroup_host *host, const moat_limits *limits, const char *name,
				     const moat_cgroup_req *req, moat_cgroup **ret, moat_error *err);

#define CG_REQ_MAX_DEPTH 32

int moat__cgroup_req_path(const char *given, char *ret, size_t len, moat_error *err)
{
	if (!given || !given[0])
		return moat_error_set(err, MOAT_EINPUT, "cgroupsPath is empty");
	if (len < 2)
		return moat_error_set(err, MOAT_EINPUT, "cgroupsPath: no room");
	bool abs = given[0] == '/';
	size_t o = 0;
	int comps = 0;
	if (abs)
		ret[o++] = '/';
	for (const char *p = given; *p;) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t cl = (size_t)(e - p);
		for (const char *q = p; q < e; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				return moat_error_set(err, MOAT_EINPUT, "cgroupsPath: a control character in \"%.64s\"",
						      given);
		/* systemd's "slice:prefix:name" form: the systemd driver,
		 * which moat does not have. */
		if (memchr(p, ':', cl))
			return moat_error_set(err, MOAT_EINPUT,
					      "cgroupsPath \"%.200s\": a ':' is systemd's slice:prefix:name form; moat has "
					      "the cgroupfs driver only (run the caller with cgroupfs, e.g. podman "
					      "--cgroup-manager=cgroupfs, containerd SystemdCgroup = false)",
					      given);
		if (cl == 2 && p[0] == '.' && p[1] == '.')
			return moat_error_set(err, MOAT_EINPUT,
					      "cgroupsPath \"%.200s\": \"..\" would climb out of the cgroup hierarchy",
					      given);
		if (cl > 0 && !(cl == 1 && p[0] == '.')) {
			if (cl > 255)
				return moat_error_set(err, MOAT_EINPUT, "cgroupsPath: a component longer than 255 bytes");
			if (++comps > CG_REQ_MAX_DEPTH)
				return moat_error_set(err, MOAT_EINPUT, "cgroupsPath: more than %d components",
						      CG_REQ_MAX_DEPTH);
			bool sep = o > (abs ? 1u : 0u);
			if (o + sep + cl + 1 > len)
				return moat_error_set(err, MOAT_EINPUT, "cgroupsPath: longer than %zu bytes", len - 1);
			if (sep)
				ret[o++] = '/';
			memcpy(ret + o, p, cl);
			o += cl;
		}
		p = e;
	}
	ret[o] = '\0';
	if (comps == 0)
		return moat_error_set(err, MOAT_EINPUT,
				      "cgroupsPath \"%.200s\" names no cgroup below the hierarchy's root or our own", given);
	return 0;
}

static int made_push(moat_cgroup *cg, const char *path)
{
	char **m = realloc(cg->made, (cg->n_made + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	cg->made = m;
	if (!(m[cg->n_made] = strdup(path)))
		return -ENOMEM;
	cg->n_made++;
	return 0;
}

/* Enables the v2 controllers in `want` (words) for the children of the
 * cgroup at dfd, the ones not enabled yet. */
static int v2_enable_at(int dfd, const char *want)
{
	if (!want[0])
		return 0;
	_cleanup_free_ char *enabled = NULL;
	int r = read_text(dfd, "cgroup.subtree_control", &enabled);
	if (r < 0)
		return r;
	char missing[64] = "";
	_cleanup_free_ char *w = strdup(want);
	if (!w)
		return -ENOMEM;
	for (char *save = NULL, *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (!words_have(enabled, t)) {
			size_t l = strlen(missing);
			snprintf(missing + l, sizeof(missing) - l, "%s+%s", l ? " " : "", t);
		}
	return missing[0] ? moat__write_string_at(dfd, "cgroup.subtree_control", missing) : 0;
}

/* A v1 cpuset folder gets its parent's CPUs and memory nodes (empty, no
 * task may join it). */
static int cpuset_copy(int pfd, int cfd)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	for (size_t k = 0; k < ELEMENTSOF(files); k++) {
		_cleanup_free_ char *v = NULL;
		int r = read_text(pfd, files[k], &v);
		if (r >= 0)
			r = moat__write_string_at(cfd, files[k], v);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The run's cgroup for one controller at base/rel (rel checked by
 * moat__cgroup_req_path), walked one component at a time from base
 * without following a link. Missing folders above the leaf are made (and
 * remembered); the leaf must not exist. */
static int node_at(moat_cgroup *cg, const moat_cgroup_host *host, int version, const char *base, const char *rel,
		   moat_cgroup_ctrl c, const char *v2_want, moat_error *err)
{
	char path[MOAT_MAX_PATH];
	int n = snprintf(path, sizeof(path), "%s/%s", base, rel[0] == '/' ? rel + 1 : rel);
	if (n < 0 || (size_t)n >= sizeof(path))
		return moat_error_set(err, MOAT_EINPUT, "cgroupsPath %s: too long under %s", rel, base);
	for (size_t i = 0; i < cg->n_nodes; i++)
		if (strcmp(cg->nodes[i].path, path) == 0) {
			cg->nodes[i].ctrls |= 1u << c;
			cg->ctrl_node[c] = (int)i;
			return 0;
		}
	_cleanup_close_ int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "cgroup: open %s", base);
	char walk[MOAT_MAX_PATH];
	snprintf(walk, sizeof(walk), "%s", base);
	char comps[MOAT_MAX_PATH];
	snprintf(comps, sizeof(comps), "%s", rel);
	char *save = NULL, *comp = strtok_r(comps, "/", &save);
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = !next;
		size_t wl = strlen(walk);
		snprintf(walk + wl, sizeof(walk) - wl, "/%s", comp);
		if (version == 2) {
			int r = v2_enable_at(fd, v2_want);
			if (r < 0)
				return moat_error_set(err, r, "cgroupsPath %s: enable %s for the children of %.*s", rel,
						      v2_want, (int)wl, walk);
		}
		bool made = false;
		if (mkdirat(fd, comp, 0755) == 0) {
			made = true;
			if (host && host->fake_kernel_mkdir)
				host->fake_kernel_mkdir(walk, version, host->userdata);
			int r = 0;
			if (last) {
				cg_node *node = &cg->nodes[cg->n_nodes];
				snprintf(node->path, sizeof(node->path), "%s", walk);
				node->version = version;
				node->created = true;
				node->ctrls = 1u << c;
				cg->ctrl_node[c] = (int)cg->n_nodes++;
			} else {
				r = made_push(cg, walk);
			}
			if (r < 0)
				return moat_error_set(err, r, "cgroup");
		} else if (errno != EEXIST) {
			int e = errno;
			if (e == EACCES || e == EPERM || e == EROFS)
				return moat_error_set(err, MOAT_EINPUT,
						      "cgroupsPath %s: cannot make %s (%s): it is not inside a cgroup "
						      "delegated to uid %u",
						      rel, walk, strerror(e), (unsigned)geteuid());
			return moat_error_set(err, e, "cgroupsPath %s: mkdir %s", rel, walk);
		} else if (last) {
			return moat_error_set(err, MOAT_EINPUT,
					      "cgroupsPath %s: %s exists and is not this container's; moat makes the "
					      "container's cgroup and removes it on delete, and joining another would "
					      "put the container under limits someone else sets and kill that "
					      "cgroup's other processes on delete",
					      rel, walk);
		}
		int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			int e = errno;
			return moat_error_set(err, e == ELOOP || e == ENOTDIR ? MOAT_EINPUT : e,
					      "cgroupsPath %s: %s%s", rel, walk,
					      e == ELOOP || e == ENOTDIR ? " is a link or a file, not a cgroup" : "");
		}
		if (made && version == 1 && c == MOAT_CG_CPUSET) {
			int r = cpuset_copy(fd, nfd);
			if (r < 0) {
				close(nfd);
				return moat_error_set(err, r, "cgroup: %s: copy the parent's cpuset", walk);
			}
		}
		close(fd);
		fd = nfd;
		comp = next;
	}
	cg_node *node = &cg->nodes[cg->ctrl_node[c]];
	node->dirfd = TAKE_FD(fd);
	node->procs_fd = openat(node->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (node->procs_fd < 0)
		return moat_error_set(err, errno, "cgroup: open %s/cgroup.procs", node->path);
	return 0;
}

/* What a moat_cgroup_req sets beyond moat_limits. */
static int apply_req(moat_cgroup *cg, const moat_limits *l, const moat_cgroup_req *req, moat_error *err)
{
	int i = cg->ctrl_node[MOAT_CG_CPU];
	cg_node *cpu = i >= 0 ? &cg->nodes[i] : NULL;
	if (req->cpu_shares) {
		if (!cpu)
			return moat_error_set(err, MOAT_EINPUT,
					      "linux.resources.cpu.shares: no cpu cgroup controller is usable here");
		int r;
		if (cpu->version == 1) {
			r = write_u64(cpu->dirfd, "cpu.shares", req->cpu_shares < 2 ? 2 : req->cpu_shares);
		} else {
			/* runc's conversion of shares [2, 262144] to weight [1, 10000] */
			uint64_t sh = req->cpu_shares < 2 ? 2 : req->cpu_shares > 262144 ? 262144 : req->cpu_shares;
			r = write_u64(cpu->dirfd, "cpu.weight", 1 + ((sh - 2) * 9999) / 262142);
		}
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set cpu shares", cpu->path);
	}
	if (req->cpu_quota && req->cpu_period && cpu && cg->cpus_limited &&
	    (req->cpu_quota * 1000 + req->cpu_period - 1) / req->cpu_period == l->cpus_milli) {
		int r;
		if (cpu->version == 1) {
			r = write_u64(cpu->dirfd, "cpu.cfs_period_us", req->cpu_period);
			if (r >= 0)
				r = write_u64(cpu->dirfd, "cpu.cfs_quota_us", req->cpu_quota);
		} else {
			char v[64];
			snprintf(v, sizeof(v), "%" PRIu64 " %" PRIu64, req->cpu_quota, req->cpu_period);
			r = moat__write_string_at(cpu->dirfd, "cpu.max", v);
		}
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set cpu quota and period", cpu->path);
	}
	if ((req->cpuset_cpus && req->cpuset_cpus[0]) || (req->cpuset_mems && req->cpuset_mems[0])) {
		i = cg->ctrl_node[MOAT_CG_CPUSET];
		if (i < 0 || cg->nodes[i].version != 1)
			return moat_error_set(err, MOAT_EINPUT,
					      "linux.resources.cpu.cpus/mems: moat applies them on a cgroup v1 cpuset "
					      "hierarchy only, and there is none here");
		cg_node *cs = &cg->nodes[i];
		int r = 0;
		if (req->cpuset_cpus && req->cpuset_cpus[0])
			r = moat__write_string_at(cs->dirfd, "cpuset.cpus", req->cpuset_cpus);
		if (r >= 0 && req->cpuset_mems && req->cpuset_mems[0])
			r = moat__write_string_at(cs->dirfd, "cpuset.mems", req->cpuset_mems);
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set cpuset.cpus and cpuset.mems", cs->path);
	}
	return 0;
}


static void node_remove(cg_node *n);

/* A new v1 cpuset cgroup has no CPUs and no memory nodes, and the kernel
 * refuses to attach a task to it (ENOSPC) until both are set: the run's
 * gets its parent's, which limits nothing (the parent's own cgroup.
 * clone_children, which would do it, belongs to whoever made the parent).
 * The cpuset is there to be read; if it cannot be filled and serves
 * nothing else, it is given up, with a note. */
static int cpuset_inherit(moat_cgroup *cg, const char *parent)
{
	int i = cg->ctrl_node[MOAT_CG_CPUSET];
	cg_node *n = &cg->nodes[i];
	_cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = pfd < 0 ? moat__neg_errno() : 0;
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	for (size_t k = 0; r >= 0 && k < ELEMENTSOF(files); k++) {
		_cleanup_free_ char *v = NULL;
		r = read_text(pfd, files[k], &v);
		if (r >= 0)
			r = moat__write_string_at(n->dirfd, files[k], v);
	}
	if (r >= 0)
		return 0;
	if (n->ctrls != 1u << MOAT_CG_CPUSET || i != (int)cg->n_nodes - 1)
		return r;
	note_set(cg, "cgroup v1 cpuset %s: %s: runtimes do not see their limits", n->path, strerror(-r));
	node_remove(n);
	cg->n_nodes--;
	drop_ctrl(cg, MOAT_CG_CPUSET);
	return 0;
}

static int apply_limits(moat_cgroup *cg, const moat_limits *l, moat_error *err)
{
	char note[CG_NOTE_MAX] = "";
	int i;
	if ((i = cg->ctrl_node[MOAT_CG_MEMORY]) >= 0 && l->memory_bytes != MOAT_UNLIMITED) {
		cg_node *n = &cg->nodes[i];
		int r = backend_of(n)->set_memory(n->dirfd, l->memory_bytes, note, sizeof(note));
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set memory limit", n->path);
		cg->memory_limited = true;
		if (note[0])
			note_set(cg, "%s", note);
	}
	if ((i = cg->ctrl_node[MOAT_CG_PIDS]) >= 0 && l->pids != MOAT_UNLIMITED) {
		cg_node *n = &cg->nodes[i];
		int r = backend_of(n)->set_pids(n->dirfd, l->pids);
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set pids limit", n->path);
		cg->pids_limited = true;
	}
	if ((i = cg->ctrl_node[MOAT_CG_CPU]) >= 0 && l->cpus_milli != MOAT_UNLIMITED && l->cpus_milli > 0) {
		cg_node *n = &cg->nodes[i];
		int r = backend_of(n)->set_cpus(n->dirfd, l->cpus_milli);
		if (r < 0)
			return moat_error_set(err, r, "cgroup %s: set cpu bandwidth", n->path);
		cg->cpus_limited = true;
	}
	return 0;
}

static int read_proc_text(const char *given, const char *path, char **ret, moat_error *err)
{
	if (given) {
		*ret = strdup(given);
		return *ret ? 0 : moat_error_set(err, ENOMEM, "cgroup");
	}
	int r = moat__read_file_at(AT_FDCWD, path, 1 << 20, ret);
	if (r == -EFBIG)
		return moat_error_set(err, EFBIG, "read %s: more than 1 MiB", path);
	if (r < 0)
		return moat_error_set(err, -r, "read %s", path);
	return 0;
}

int moat__cgroup_create(const moat_cgroup_host *host, const moat_limits *limits, const char *name,
			moat_cgroup **ret, moat_error *err)
{
	return moat__cgroup_create_named(host, limits, name, NULL, ret, err);
}

int moat__cgroup_create_req(const moat_cgroup_host *host, const moat_limits *limits, const moat_cgroup_req *req,
			    moat_cgroup **ret, moat_error *err)
{
	return moat__cgroup_create_named(host, limits, NULL, req && req->path ? req : NULL, ret, err);
}

static int moat__cgroup_create_named(const moat_cgroup_host *host, const moat_limits *limits, const char *name,
				     const moat_cgroup_req *req, moat_cgroup **ret, moat_error *err)
{
	/* Two threads of one process (a server running sandboxes side by
	 * side) must never be handed the same name. */
	static atomic_uint counter;
	_cleanup_free_ char *mountinfo = NULL, *self = NULL;
	int r = read_proc_text(host ? host->mountinfo : NULL, "/proc/self/mountinfo", &mountinfo, err);
	if (r < 0)
		return r;
	r = read_proc_text(host ? host->self_cgroup : NULL, "/proc/self/cgroup", &self, err);
	if (r < 0)
		return r;
	moat_cgroup_layout layout;
	r = moat__cgroup_layout_parse(mountinfo, self, &layout, err);
	if (r < 0)
		return r;

	if (!host || !host->no_sweep)
		sweep_layout(&layout);

	char rel[MOAT_MAX_PATH] = "";
	if (req && (r = moat__cgroup_req_path(req->path, rel, sizeof(rel), err)) < 0)
		return r;
	bool from_top = rel[0] == '/';
	char defname[64];
	if (!name) {
		snprintf(defname, sizeof(defname), "moat-%d-%u", (int)getpid(), atomic_fetch_add(&counter, 1));
		name = defname;
	}
	if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return moat_error_set(err, MOAT_EINPUT, "cgroup name \"%s\" is not a plain name", name);

	_cleanup_cgroup_ moat_cgroup *cg = cgroup_new();
	if (!cg)
		return moat_error_set(err, ENOMEM, "cgroup");
	cg->host_v1 = layout.v1_mounted;
	cg->host_v2 = layout.v2_mounted;

	/* Which controllers the run needs: memory, pids and cpu accounting
	 * always (the result reports them); on v2 cpu bandwidth only for
	 * --cpus. On v1, the cpu and cpuset hierarchies too, each its own
	 * directory limiting nothing without --cpus: the JVM (HotSpot's
	 * CgroupSubsystemFactory) trusts no v1 limit, memory included,
	 * unless it finds its own cgroup mounted in the cpu, cpuacct, cpuset
	 * and memory hierarchies, and would size its heap from the host's
	 * memory and be OOM-killed. Each costs a mkdir and an attach write. */
	bool cpus = (limits->cpus_milli != MOAT_UNLIMITED && limits->cpus_milli > 0) || (req && req->cpu_shares);
	bool need[_MOAT_CG_MAX] = {
		[MOAT_CG_MEMORY] = true,
		[MOAT_CG_PIDS] = true,
		[MOAT_CG_CPU] = cpus || layout.ctrl[MOAT_CG_CPU].version == 1,
		[MOAT_CG_CPUACCT] = true,
		[MOAT_CG_CPUSET] = layout.ctrl[MOAT_CG_CPUSET].version == 1,
	};
	/* On v2, cpu.stat's usage is kept by the core for every cgroup; the
	 * cpu controller is needed only for cpu.max. */
	static const char *const v2_words[_MOAT_CG_MAX] = {
		[MOAT_CG_MEMORY] = "memory", [MOAT_CG_PIDS] = "pids", [MOAT_CG_CPU] = "cpu",
		[MOAT_CG_CPUACCT] = NULL, [MOAT_CG_CPUSET] = NULL,
	};
	char v2_want[64] = "";
	bool any_v2 = false;
	for (int c = 0; c < _MOAT_CG_MAX; c++) {
		if (!need[c] || layout.ctrl[c].version != 2)
			continue;
		if (v2_words[c] && !v2_offers(layout.v2_dir, v2_words[c])) {
			need[c] = false;
			continue;
		}
		any_v2 = true;
		if (v2_words[c]) {
			size_t l = strlen(v2_want);
			snprintf(v2_want + l, sizeof(v2_want) - l, "%s%s", l ? " " : "", v2_words[c]);
		}
	}
	/* cpu accounting alone does not justify a v2 cgroup: on a hybrid host
	 * whose v2 tree offers nothing, the run stays out of it. */
	if (any_v2 && !v2_want[0])
		need[MOAT_CG_CPUACCT] = layout.ctrl[MOAT_CG_CPUACCT].version == 1;
	/* From the hierarchy's root, node_at enables them on the way down;
	 * below our own cgroup, ours must offer them first. */
	else if (any_v2 && !from_top && v2_prepare_parent(cg, layout.v2_dir, v2_want) < 0) {
		if (req)
			return moat_error_set(err, MOAT_EINPUT, "cgroupsPath %s: %s", rel, cg->note);
		for (int c = 0; c < _MOAT_CG_MAX; c++)
			if (layout.ctrl[c].version == 2)
				need[c] = false;
	}

	for (int c = 0; c < _MOAT_CG_MAX; c++) {
		if (!need[c])
			continue;
		if (layout.ctrl[c].version == 0) {
			note_set(cg, "no %s cgroup controller is mounted", ctrl_names[c]);
			continue;
		}
		if (req) {
			const char *base = from_top ? layout.ctrl[c].top : layout.ctrl[c].dir;
			if (!base[0])
				return moat_error_set(err, MOAT_EINPUT,
						      "cgroupsPath %s: the %s hierarchy's root is not visible here", rel,
						      ctrl_names[c]);
			r = node_at(cg, host, layout.ctrl[c].version, base, rel, (moat_cgroup_ctrl)c,
				    layout.ctrl[c].version == 2 ? v2_want : "", err);
			if (r < 0)
				return r;
			continue;
		}
		r = node_for(cg, host, layout.ctrl[c].version, layout.ctrl[c].dir, name, (moat_cgroup_ctrl)c);
		if (r == -EACCES || r == -EROFS) {
			drop_ctrl(cg, (moat_cgroup_ctrl)c);
			continue;
		}
		if (r < 0)
			return moat_error_set(err, r, "cgroup: create %s/%s", layout.ctrl[c].dir, name);
		if (c == MOAT_CG_CPUSET && layout.ctrl[c].version == 1) {
			r = cpuset_inherit(cg, layout.ctrl[c].dir);
			if (r < 0)
				return moat_error_set(err, r, "cgroup: %s/%s: copy the parent's cpuset", layout.ctrl[c].dir,
						      name);
		}
	}
	if (cg->n_nodes == 0 && !cg->note[0])
		note_set(cg, "no cgroup filesystem is mounted");
	if (req && cg->n_nodes == 0)
		return moat_error_set(err, MOAT_EINPUT, "cgroupsPath %s: no cgroup is usable here: %s", rel, cg->note);

	r = apply_limits(cg, limits, err);
	if (r >= 0 && req)
		r = apply_req(cg, limits, req, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cg);
	return 0;
}

int moat__cgroup_clone_fd(moat_cgroup *cg)
{
	if (!cg)
		return -1;
	/* CLONE_INTO_CGROUP takes one v2 cgroup; with any v1 node the child
	 * has to be attached by writes anyway. */
	int fd = -1;
	for (size_t i = 0; i < cg->n_nodes; i++) {
		if (cg->nodes[i].version != 2)
			return -1;
		fd = cg->nodes[i].dirfd;
	}
	return fd;
}

int moat__cgroup_attach(moat_cgroup *cg, pid_t pid, moat_error *err)
{
	if (!cg)
		return 0;
	char buf[24];
	int len = snprintf(buf, sizeof(buf), "%d", (int)pid);
	for (size_t i = 0; i < cg->n_nodes; i++) {
		cg_node *n = &cg->nodes[i];
		ssize_t w = pwrite(n->procs_fd, buf, (size_t)len, 0);
		if (w != len)
			return moat_error_set(err, w < 0 ? errno : EIO, "cgroup: attach %d to %s", (int)pid, n->path);
	}
	return 0;
}

/* Re-arms every event source: kernfs files by reading them from the start,
 * eventfds by reading their counter. */
static void drain_events(moat_cgroup *cg)
{
	for (size_t i = 0; i < cg->n_event_fds; i++) {
		char buf[512];
		if (pread(cg->event_fds[i], buf, sizeof(buf), 0) < 0 && errno == ESPIPE)
			(void)!read(cg->event_fds[i], buf, sizeof(uint64_t));
	}
}

int moat__cgroup_event_fd(moat_cgroup *cg)
{
	if (!cg)
		return -1;
	if (cg->epoll_fd >= 0)
		return cg->epoll_fd;
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -1;
	for (size_t i = 0; i < cg->n_nodes; i++) {
		cg_node *n = &cg->nodes[i];
		int fds[2];
		int k = backend_of(n)->open_events(n->dirfd, n->ctrls, fds);
		for (int j = 0; j < k; j++) {
			/* kernfs files signal a change with EPOLLPRI (they
			 * are always readable, so EPOLLIN would spin); an
			 * eventfd with EPOLLIN. */
			struct stat st;
			bool file = fstat(fds[j], &st) == 0 && S_ISREG(st.st_mode);
			struct epoll_event ev = {.events = file ? EPOLLPRI : EPOLLIN, .data.fd = fds[j]};
			/* A file that cannot be polled (EPERM: not kernfs)
			 * is no event source; the supervisor's timer still
			 * reads the counters. */
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[j], &ev) < 0) {
				close(fds[j]);
				continue;
			}
			cg->event_fds[cg->n_event_fds++] = fds[j];
		}
	}
	if (cg->n_event_fds == 0)
		return -1;
	cg->epoll_fd = TAKE_FD(ep);
	/* A kernfs file reads as changed until it has been read once. */
	drain_events(cg);
	return cg->epoll_fd;
}

static int stats(moat_cgroup *cg, bool drain, moat_cgroup_stats *ret);

int moat__cgroup_stats(moat_cgroup *cg, moat_cgroup_stats *ret)
{
	return stats(cg, true, ret);
}

int moat__cgroup_stats_peek(moat_cgroup *cg, moat_cgroup_stats *ret)
{
	return stats(cg, false, ret);
}

static int stats(moat_cgroup *cg, bool drain, moat_cgroup_stats *ret)
{
	moat_cgroup_stats s;
	memset(&s, 0, sizeof(s));
	if (!cg) {
		*ret = s;
		return 0;
	}
	if (drain)
		drain_events(cg);
	int i;
	if ((i = cg->ctrl_node[MOAT_CG_CPUACCT]) >= 0) {
		cg_node *n = &cg->nodes[i];
		if (backend_of(n)->read_cpu(n->dirfd, &s.cpu_user_us, &s.cpu_sys_us) == 0)
			s.cpu_known = true;
	}
	if ((i = cg->ctrl_node[MOAT_CG_MEMORY]) >= 0) {
		cg_node *n = &cg->nodes[i];
		const cg_backend *b = backend_of(n);
		if (b->read_memory_peak(n->dirfd, &s.memory_peak_bytes) == 0) {
			s.memory_peak_known = true;
		} else if (n->version == 2) {
			/* Kernels before 5.19 have no memory.peak: the largest
			 * memory.current this supervisor saw is a lower bound,
			 * as close as the polling allows. */
			uint64_t cur = 0;
			if (read_u64(n->dirfd, "memory.current", &cur) == 0 && cur > cg->memory_seen_max)
				cg->memory_seen_max = cur;
			s.memory_peak_bytes = cg->memory_seen_max;
			s.memory_peak_known = cg->memory_seen_max > 0;
		}
		uint64_t kills = 0;
		if (b->read_oom(n->dirfd, &kills) == 0)
			s.oom_killed = kills > cg->oom_base;
	}
	if ((i = cg->ctrl_node[MOAT_CG_PIDS]) >= 0) {
		cg_node *n = &cg->nodes[i];
		uint64_t hits = 0;
		if (backend_of(n)->read_pids_hit(n->dirfd, &hits) == 0)
			s.pids_hit = hits > cg->pids_base;
	}
	*ret = s;
	return 0;
}

/* Every pid listed in a cgroup.procs, SIGKILLed through a pidfd so a pid
 * reused between the read and the kill is never hit. Returns how many
 * processes were listed. */
static int kill_listed(int dirfd)
{
	/* Its head: a cgroup of many processes lists more than CG_READ_MAX
	 * bytes, and the caller comes back while any was listed. A number
	 * the cap cut is not a pid: only whole lines are read. */
	_cleanup_free_ char *s = NULL;
	int got = moat__read_file_head_at(dirfd, "cgroup.procs", CG_READ_MAX, &s);
	if (got < 0)
		return 0;
	char *last = got == CG_READ_MAX ? strrchr(s, '\n') : NULL;
	if (got == CG_READ_MAX)
		*(last ? last + 1 : s) = '\0';
	int n = 0;
	for (char *save = NULL, *w = strtok_r(s, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
		pid_t pid = (pid_t)strtol(w, NULL, 10);
		if (pid <= 0)
			continue;
		n++;
		_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (pfd >= 0)
			(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	}
	return n;
}

int moat__cgroup_count_procs(moat_cgroup *cg)
{
	if (!cg || cg->n_nodes == 0)
		return -ENOENT;
	_cleanup_free_ char *s = NULL;
	int r = read_text(cg->nodes[0].dirfd, "cgroup.procs", &s);
	if (r < 0)
		return r;
	int n = 0;
	for (const char *p = s; *p; p++)
		n += *p == '\n';
	return n;
}

/* The events' fds, closed: the next moat__cgroup_event_fd() opens them on
 * the nodes as they are then. */
static void close_events(moat_cgroup *cg)
{
	for (size_t i = 0; i < cg->n_event_fds; i++)
		close(cg->event_fds[i]);
	cg->n_event_fds = 0;
	if (cg->epoll_fd >= 0)
		close(cg->epoll_fd);
	cg->epoll_fd = -1;
}

/* A v1 memory node made anew, empty, with the memory limit it had: what
 * was charged to the old one (the page cache a run read first, the
 * remainder of its kernel objects' charges, which no reclaim takes back
 * to 0) goes to the parent with its removal, as a run's cgroup's does. */
static int renew_memory(moat_cgroup *cg, cg_node *n, uint64_t limit)
{
	if (n->ctrls != 1u << MOAT_CG_MEMORY || !n->created)
		return -ENOTSUP;
	close_events(cg);
	/* Left as it was when it cannot go. */
	if (rmdir(n->path) < 0)
		return moat__neg_errno();
	close(n->procs_fd);
	close(n->dirfd);
	n->procs_fd = n->dirfd = -1;
	n->created = false;
	if (mkdir(n->path, 0755) < 0)
		return moat__neg_errno();
	n->created = true;
	n->dirfd = open(n->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (n->dirfd < 0)
		return moat__neg_errno();
	n->procs_fd = openat(n->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (n->procs_fd < 0)
		return moat__neg_errno();
	char note[CG_NOTE_MAX] = "";
	cg->oom_base = 0;
	return limit == MOAT_UNLIMITED ? 0 : v1_set_memory(n->dirfd, limit, note, sizeof(note));
}

int moat__cgroup_reuse(moat_cgroup *cg, uint64_t memory_limit)
{
	if (!cg || cg->n_nodes == 0)
		return -ENOENT;
	/* v1 only: there the CPU usage resets to 0 and the memory node,
	 * a directory of its own, can be made anew alone. On v2 one
	 * directory holds every controller. */
	for (size_t i = 0; i < cg->n_nodes; i++)
		if (cg->nodes[i].version != 1)
			return -ENOTSUP;
	int c = moat__cgroup_count_procs(cg);
	if (c != 0)
		return c < 0 ? c : -EBUSY;
	int i, r;
	uint64_t v = 0;
	if ((i = cg->ctrl_node[MOAT_CG_MEMORY]) >= 0) {
		cg_node *n = &cg->nodes[i];
		/* Nothing charged: the peak resets to 0 as a new cgroup's
		 * starts. Anything charged would count in the next run's
		 * peak, and reclaiming it (memory.force_empty) would evict
		 * the page cache it holds and still leave the remainder of
		 * kernel objects' charges: the node is made anew. */
		if ((r = read_u64(n->dirfd, "memory.usage_in_bytes", &v)) < 0)
			return r;
		if (v == 0 && moat__write_string_at(n->dirfd, "memory.max_usage_in_bytes", "0") == 0 &&
		    read_u64(n->dirfd, "memory.max_usage_in_bytes", &v) == 0 && v == 0) {
			/* Without the oom_kill counter (before 4.13) no count
			 * tells a new kill from an old one. */
			if ((r = read_keyed(n->dirfd, "memory.oom_control", "oom_kill", &cg->oom_base)) < 0)
				return r;
		} else if ((r = renew_memory(cg, n, memory_limit)) < 0) {
			return r;
		}
	}
	if ((i = cg->ctrl_node[MOAT_CG_PIDS]) >= 0 && (r = read_pids_events(cg->nodes[i].dirfd, &cg->pids_base)) < 0)
		return r;
	if ((i = cg->ctrl_node[MOAT_CG_CPUACCT]) >= 0) {
		int dfd = cg->nodes[i].dirfd;
		/* Writing 0 resets the total and the user and system split
		 * alike; the split of a difference would not be the split of
		 * the run's own time. */
		if ((r = moat__write_string_at(dfd, "cpuacct.usage", "0")) < 0)
			return r;
		if ((r = read_u64(dfd, "cpuacct.usage", &v)) < 0)
			return r;
		if (v != 0)
			return -EBUSY;
	}
	/* What the last run's events left readable is not the next run's. */
	drain_events(cg);
	return 0;
}

int moat__cgroup_kill(moat_cgroup *cg)
{
	if (!cg || cg->n_nodes == 0)
		return -ENOENT;
	/* Every task of the run is in every node, so one node suffices. */
	cg_node *n = &cg->nodes[0];
	const cg_backend *b = backend_of(n);
	if (b->kill_all && b->kill_all(n->dirfd) == 0)
		return 0;
	/* Without cgroup.kill a forking task can outrun one pass; repeat
	 * until a pass finds nothing new, bounded because the pids limit
	 * bounds the tree. */
	for (int pass = 0; pass < 64 && kill_listed(n->dirfd) > 0; pass++)
		;
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void node_remove(cg_node *n)
{
	if (n->procs_fd >= 0)
		close(n->procs_fd);
	n->procs_fd = -1;
	if (!n->created)
		return;
	/* rmdir fails with EBUSY while tasks, even exiting ones, remain. */
	uint64_t deadline = moat__now_ns() + (uint64_t)CG_RMDIR_WAIT_MS * 1000000ull;
	while (rmdir(n->path) < 0 && errno == EBUSY && moat__now_ns() < deadline) {
		if (n->dirfd >= 0) {
			const cg_backend *b = backend_of(n);
			if (!b->kill_all || b->kill_all(n->dirfd) < 0)
				(void)kill_listed(n->dirfd);
		}
		sleep_ms(5);
	}
	if (n->dirfd >= 0)
		close(n->dirfd);
	n->dirfd = -1;
	n->created = false;
}

static void v2_restore_parent(moat_cgroup *cg)
{
	if (!cg->v2_enabled[0] && !cg->moved_self)
		return;
	_cleanup_close_ int dfd = open(cg->v2_own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	/* Undo in reverse: controllers off (fails harmlessly while another
	 * child still uses them), ourselves back, the leaf removed. */
	if (cg->v2_enabled[0]) {
		char off[64];
		snprintf(off, sizeof(off), "%s", cg->v2_enabled);
		for (char *p = off; *p; p++)
			if (*p == '+')
				*p = '-';
		(void)moat__write_string_at(dfd, "cgroup.subtree_control", off);
	}
	if (cg->moved_self) {
		if (moat__write_string_at(dfd, "cgroup.procs", "0") == 0)
			(void)unlinkat(dfd, cg->v2_leaf, AT_REMOVEDIR);
	}
}

void moat__cgroup_destroy(moat_cgroup *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->n_event_fds; i++)
		close(cg->event_fds[i]);
	if (cg->epoll_fd >= 0)
		close(cg->epoll_fd);
	if (cg->n_nodes > 0)
		(void)moat__cgroup_kill(cg);
	for (size_t i = 0; i < cg->n_nodes; i++)
		node_remove(&cg->nodes[i]);
	for (size_t i = cg->n_made; i-- > 0;) {
		(void)rmdir(cg->made[i]);
		free(cg->made[i]);
	}
	free(cg->made);
	v2_restore_parent(cg);
	free(cg);
}

void moat__cgroup_describe(moat_cgroup *cg, moat_isolation *iso)
{
	const char *kind = "none";
	if (cg && cg->n_nodes > 0) {
		bool v1 = false, v2 = false;
		for (size_t i = 0; i < cg->n_nodes; i++) {
			v1 |= cg->nodes[i].version == 1;
			v2 |= cg->nodes[i].version == 2;
		}
		/* "hybrid" describes the host: v1 controllers next to a v2
		 * mount, whichever of them the run ended up using. */
		kind = (v1 && cg->host_v2) || (v2 && cg->host_v1) ? "hybrid" : v2 ? "v2" : "v1";
	}
	snprintf(iso->cgroup, sizeof(iso->cgroup), "%s", kind);
	snprintf(iso->cgroup_note, sizeof(iso->cgroup_note), "%s", cg ? cg->note : "");
}

bool moat__cgroup_enforces_memory(moat_cgroup *cg) { return cg && cg->memory_limited; }
bool moat__cgroup_enforces_pids(moat_cgroup *cg) { return cg && cg->pids_limited; }
bool moat__cgroup_enforces_cpu(moat_cgroup *cg) { return cg && cg->ctrl_node[MOAT_CG_CPUACCT] >= 0; }
bool moat__cgroup_enforces_cpus(moat_cgroup *cg) { return cg && cg->cpus_limited; }

const char *moat__cgroup_path(moat_cgroup *cg, moat_cgroup_ctrl c)
{
	if (!cg || c < 0 || c >= _MOAT_CG_MAX || cg->ctrl_node[c] < 0)
		return NULL;
	return cg->nodes[cg->ctrl_node[c]].path;
}

size_t moat__cgroup_mounts(moat_cgroup *cg, moat_cgroup_mount ret[_MOAT_CG_MAX])
{
	size_t n = 0;
	for (size_t i = 0; cg && i < cg->n_nodes && n < _MOAT_CG_MAX; i++) {
		const cg_node *node = &cg->nodes[i];
		/* On v1, the hierarchies runtimes size themselves from: the
		 * JVM needs memory, cpu, cpuacct and cpuset all four (see
		 * create()). pids only limits and no runtime reads it; each
		 * mount adds to every run's start. */
		if (node->version == 1 && node->ctrls == 1u << MOAT_CG_PIDS)
			continue;
		moat_cgroup_mount *m = &ret[n++];
		memset(m, 0, sizeof(*m));
		m->version = node->version;
		snprintf(m->dir, sizeof(m->dir), "%s", node->path);
		if (node->version == 2)
			continue;
		for (int c = 0; c < _MOAT_CG_MAX; c++) {
			if (!(node->ctrls & (1u << c)))
				continue;
			size_t len = strlen(m->name);
			snprintf(m->name + len, sizeof(m->name) - len, "%s%s", len ? "," : "", ctrl_names[c]);
		}
	}
	return n;
}

uint64_t moat__cpu_next_check_ms(uint64_t budget_ms, uint64_t used_us, uint64_t cpus_milli)
{
	uint64_t used_ms = used_us / 1000;
	if (used_ms >= budget_ms)
		return 0;
	if (cpus_milli == 0 || cpus_milli == MOAT_UNLIMITED)
		cpus_milli = 1000;
	uint64_t left_ms = budget_ms - used_ms;
	/* With N CPUs busy the budget drains N times faster than wall time. */
	uint64_t wait = left_ms * 1000 / cpus_milli;
	return wait > 0 ? wait : 1;
}
