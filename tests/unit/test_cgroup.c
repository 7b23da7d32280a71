/* Unit tests: cgroup layout detection and both backends over fake cgroupfs
 * trees (plain files in a temporary folder laid out like a pure v2, a pure
 * v1 and a hybrid host). The host's real hierarchy is never touched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cgroup.h"

typedef struct fake {
	char dir[256];
	char mountinfo[4096];
} fake;

static void mkfile(const char *dir, const char *name, const char *content)
{
	char p[MOAT_MAX_PATH];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static char *slurp(const char *dir, const char *name)
{
	char p[MOAT_MAX_PATH];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	char *s = NULL;
	int r = moat__read_file_at(AT_FDCWD, p, 4096, &s);
	assert_true(r >= 0);
	return s;
}

static void mkdirs(const char *path)
{
	char tmp[MOAT_MAX_PATH];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			(void)mkdir(tmp, 0755);
			*p = '/';
		}
	(void)mkdir(tmp, 0755);
}

static void rm_rf(const char *path)
{
	char cmd[MOAT_MAX_PATH + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static void fake_init(fake *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/moat-unit-cg.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->mountinfo[0] = '\0';
}

static void fake_mount(fake *f, const char *sub, const char *root, const char *fstype, const char *superopts)
{
	char mnt[512];
	snprintf(mnt, sizeof(mnt), "%s/%s", f->dir, sub);
	mkdirs(mnt);
	size_t l = strlen(f->mountinfo);
	snprintf(f->mountinfo + l, sizeof(f->mountinfo) - l,
		 "%zu 30 0:%zu %s %s rw,nosuid,nodev,noexec,relatime shared:9 - %s %s %s\n", 40 + l % 50, l % 90,
		 root, mnt, fstype, fstype, superopts);
}

/* A pure v2 host whose cgroup2 mount is at f->dir/cg and our own cgroup at
 * sub, offering the given controllers to its children. */
static void fake_v2(fake *f, const char *sub, const char *controllers, char *own, size_t len)
{
	fake_init(f);
	fake_mount(f, "cg", "/", "cgroup2", "rw,nsdelegate");
	snprintf(own, len, "%s/cg/%s", f->dir, sub);
	mkdirs(own);
	mkfile(own, "cgroup.controllers", controllers);
	mkfile(own, "cgroup.subtree_control", "");
	mkfile(own, "cgroup.procs", "");
}

/* What the kernel puts in a fresh cgroup directory, as far as moat reads
 * or writes it. */
static void fake_kernel(const char *dir, int version, void *userdata)
{
	(void)userdata;
	mkfile(dir, "cgroup.procs", "");
	if (version == 2) {
		mkfile(dir, "cgroup.kill", "");
		mkfile(dir, "memory.max", "");
		mkfile(dir, "memory.swap.max", "");
		mkfile(dir, "memory.oom.group", "");
		mkfile(dir, "memory.peak", "");
		mkfile(dir, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
		mkfile(dir, "pids.max", "");
		mkfile(dir, "pids.events", "max 0\n");
		mkfile(dir, "cpu.max", "");
		mkfile(dir, "cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
		return;
	}
	/* v1: one folder per hierarchy; the file set tells which it is. */
	if (strstr(dir, "/memory/")) {
		mkfile(dir, "memory.limit_in_bytes", "");
		mkfile(dir, "memory.memsw.limit_in_bytes", "");
		mkfile(dir, "memory.max_usage_in_bytes", "0\n");
		mkfile(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
		mkfile(dir, "cgroup.event_control", "");
	}
	if (strstr(dir, "/pids/")) {
		mkfile(dir, "pids.max", "");
		mkfile(dir, "pids.events", "max 0\n");
	}
	if (strstr(dir, "/cpu")) {
		mkfile(dir, "cpu.cfs_period_us", "");
		mkfile(dir, "cpu.cfs_quota_us", "");
		mkfile(dir, "cpuacct.usage_user", "0\n");
		mkfile(dir, "cpuacct.usage_sys", "0\n");
		mkfile(dir, "cpuacct.usage", "0\n");
	}
}

static void test_layout_hybrid(void **state)
{
	(void)state;
	/* This is what a Debian host booted with systemd.unified_cgroup_hierarchy=0
	 * shows, with cpu and cpuacct on separate hierarchies. */
	const char *mi = "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
			 "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
			 "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
			 "33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
			 "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
			 "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
			 "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	const char *self = "8:pids:/\n4:memory:/api/9bee\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";
	moat_cgroup_layout l;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_layout_parse(mi, self, &l, &err), 0);
	assert_true(l.v1_mounted);
	assert_true(l.v2_mounted);
	assert_string_equal(l.v2_dir, "/sys/fs/cgroup/unified");
	assert_int_equal(l.ctrl[MOAT_CG_MEMORY].version, 1);
	assert_string_equal(l.ctrl[MOAT_CG_MEMORY].dir, "/sys/fs/cgroup/memory/api/9bee");
	assert_int_equal(l.ctrl[MOAT_CG_PIDS].version, 1);
	assert_string_equal(l.ctrl[MOAT_CG_PIDS].dir, "/sys/fs/cgroup/pids");
	assert_string_equal(l.ctrl[MOAT_CG_CPU].dir, "/sys/fs/cgroup/cpu");
	assert_string_equal(l.ctrl[MOAT_CG_CPUACCT].dir, "/sys/fs/cgroup/cpuacct");
}

static void test_layout_v1_comounted_and_container(void **state)
{
	(void)state;
	/* cpu,cpuacct co-mounted; the memory mount shows only a subtree (a
	 * container's view), and a name with an escaped space. */
	const char *mi = "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
			 "34 30 0:31 /docker/abc /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n"
			 "38 30 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n";
	const char *self = "8:pids:/a\n4:memory:/docker/abc/x\n2:cpu,cpuacct:/b\n";
	moat_cgroup_layout l;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_layout_parse(mi, self, &l, &err), 0);
	assert_false(l.v2_mounted);
	assert_string_equal(l.ctrl[MOAT_CG_CPU].dir, "/sys/fs/cgroup/cpu,cpuacct/b");
	assert_string_equal(l.ctrl[MOAT_CG_CPUACCT].dir, "/sys/fs/cgroup/cpu,cpuacct/b");
	assert_string_equal(l.ctrl[MOAT_CG_MEMORY].dir, "/sys/fs/cgroup/mem ory/x");
	assert_string_equal(l.ctrl[MOAT_CG_PIDS].dir, "/sys/fs/cgroup/pids/a");

	/* Our cgroup outside the mounted subtree: not placeable. */
	const char *self2 = "8:pids:/a\n4:memory:/other\n2:cpu,cpuacct:/b\n";
	assert_int_equal(moat__cgroup_layout_parse(mi, self2, &l, &err), 0);
	assert_int_equal(l.ctrl[MOAT_CG_MEMORY].version, 0);
	/* A "cpuset" hierarchy must not pass for "cpu". */
	const char *mi3 = "33 30 0:30 / /c rw - cgroup cgroup rw,cpuset\n";
	assert_int_equal(moat__cgroup_layout_parse(mi3, "3:cpuset:/\n", &l, &err), 0);
	assert_int_equal(l.ctrl[MOAT_CG_CPU].version, 0);
	/* A path that climbs out of its mount is refused. */
	assert_int_equal(moat__cgroup_layout_parse(mi3, "0::/../x\n", &l, &err), 0);
	assert_false(l.v2_mounted);
}

static void test_layout_v2(void **state)
{
	(void)state;
	const char *mi = "30 22 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
	const char *self = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run.scope\n";
	moat_cgroup_layout l;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_layout_parse(mi, self, &l, &err), 0);
	assert_false(l.v1_mounted);
	for (int c = 0; c < _MOAT_CG_MAX; c++) {
		assert_int_equal(l.ctrl[c].version, 2);
		assert_string_equal(l.ctrl[c].dir,
				    "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run.scope");
	}
}

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* A pure v1 host: every controller on its own hierarchy. */
static void test_v1_backend(void **state)
{
	(void)state;
	fake f;
	fake_init(&f);
	fake_mount(&f, "memory", "/", "cgroup", "rw,memory");
	fake_mount(&f, "pids", "/", "cgroup", "rw,pids");
	fake_mount(&f, "cpu,cpuacct", "/", "cgroup", "rw,cpu,cpuacct");
	char own[512];
	snprintf(own, sizeof(own), "%s/memory/svc", f.dir);
	mkdirs(own);
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "5:pids:/\n4:memory:/svc\n2:cpu,cpuacct:/\n",
				 .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 64 << 20;
	lim.pids = 32;
	lim.cpus_milli = 1500;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "run1", &cg, &err), 0);
	assert_non_null(cg);

	char mem[512], pids[512], cpu[512];
	snprintf(mem, sizeof(mem), "%s/memory/svc/run1", f.dir);
	snprintf(pids, sizeof(pids), "%s/pids/run1", f.dir);
	snprintf(cpu, sizeof(cpu), "%s/cpu,cpuacct/run1", f.dir);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_MEMORY), mem);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_PIDS), pids);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPU), cpu);
	/* co-mounted cpu and cpuacct share one folder and one attach write */
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPUACCT), cpu);

	_cleanup_free_ char *v = slurp(mem, "memory.limit_in_bytes");
	assert_string_equal(v, "67108864");
	_cleanup_free_ char *sw = slurp(mem, "memory.memsw.limit_in_bytes");
	assert_string_equal(sw, "67108864");
	_cleanup_free_ char *pm = slurp(pids, "pids.max");
	assert_string_equal(pm, "32");
	_cleanup_free_ char *q = slurp(cpu, "cpu.cfs_quota_us");
	assert_string_equal(q, "150000");
	assert_true(moat__cgroup_enforces_memory(cg));
	assert_true(moat__cgroup_enforces_pids(cg));
	assert_true(moat__cgroup_enforces_cpu(cg));
	assert_true(moat__cgroup_enforces_cpus(cg));
	assert_int_equal(moat__cgroup_clone_fd(cg), -1);

	pid_t child = spawn_sleeper();
	assert_int_equal(moat__cgroup_attach(cg, child, &err), 0);
	char want[24];
	snprintf(want, sizeof(want), "%d", (int)child);
	_cleanup_free_ char *p1 = slurp(mem, "cgroup.procs");
	_cleanup_free_ char *p2 = slurp(pids, "cgroup.procs");
	_cleanup_free_ char *p3 = slurp(cpu, "cgroup.procs");
	assert_string_equal(p1, want);
	assert_string_equal(p2, want);
	assert_string_equal(p3, want);

	/* The kernel's figures: 1.5 s user, 0.25 s system, 40 MiB peak, one OOM
	 * kill, one failed fork. */
	mkfile(cpu, "cpuacct.usage_user", "1500000000\n");
	mkfile(cpu, "cpuacct.usage_sys", "250000000\n");
	mkfile(cpu, "cpuacct.usage", "1750000000\n");
	mkfile(mem, "memory.max_usage_in_bytes", "41943040\n");
	moat_cgroup_stats st;
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_true(st.cpu_known);
	assert_int_equal(st.cpu_user_us, 1500000);
	assert_int_equal(st.cpu_sys_us, 250000);
	/* the exact total is split in the sampled proportion */
	mkfile(cpu, "cpuacct.usage", "1400000000\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_int_equal(st.cpu_user_us, 1200000);
	assert_int_equal(st.cpu_sys_us, 200000);
	assert_true(st.memory_peak_known);
	assert_int_equal(st.memory_peak_bytes, 41943040);
	assert_false(st.oom_killed);
	assert_false(st.pids_hit);
	mkfile(mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	mkfile(pids, "pids.events", "max 3\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_true(st.oom_killed);
	assert_true(st.pids_hit);

	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_string_equal(iso.cgroup, "v1");

	/* destroy() SIGKILLs what cgroup.procs lists. */
	moat__cgroup_destroy(cg);
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	rm_rf(f.dir);
}

/* Hybrid: v1 controllers next to an empty v2 mount (no controllers). */
static void test_hybrid_backend(void **state)
{
	(void)state;
	fake f;
	fake_init(&f);
	fake_mount(&f, "memory", "/", "cgroup", "rw,memory");
	fake_mount(&f, "pids", "/", "cgroup", "rw,pids");
	fake_mount(&f, "cpu", "/", "cgroup", "rw,cpu");
	fake_mount(&f, "cpuacct", "/", "cgroup", "rw,cpuacct");
	fake_mount(&f, "unified", "/", "cgroup2", "rw");
	char u[512];
	snprintf(u, sizeof(u), "%s/unified", f.dir);
	mkfile(u, "cgroup.controllers", "\n");
	mkfile(u, "cgroup.subtree_control", "\n");
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "8:pids:/\n4:memory:/\n2:cpuacct:/\n1:cpu:/\n0::/\n",
				 .fake_kernel_mkdir = fake_kernel};
	/* Leftovers of moats killed with SIGKILL: a --cpus run's cpu cgroup
	 * and a v2 supervisor leaf of a dead pid, and a live moat's cgroup. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	char stale_cpu[512], stale_leaf[512], live_cpu[512];
	snprintf(stale_cpu, sizeof(stale_cpu), "%s/cpu/moat-%d-0", f.dir, (int)dead);
	snprintf(stale_leaf, sizeof(stale_leaf), "%s/unified/moat-supervisor-%d", f.dir, (int)dead);
	snprintf(live_cpu, sizeof(live_cpu), "%s/cpu/moat-%d-0", f.dir, (int)getppid());
	mkdirs(stale_cpu);
	mkdirs(stale_leaf);
	mkdirs(live_cpu);
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 1 << 20;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "r", &cg, &err), 0);
	/* A run without --cpus sweeps the cpu hierarchy all the same, and the
	 * v2 tree it does not use; a live moat's cgroup stays. */
	assert_int_equal(access(stale_cpu, F_OK), -1);
	assert_int_equal(access(stale_leaf, F_OK), -1);
	assert_int_equal(access(live_cpu, F_OK), 0);
	/* no --cpus: the cpu hierarchy is left alone (one attach write less) */
	assert_null(moat__cgroup_path(cg, MOAT_CG_CPU));
	assert_false(moat__cgroup_enforces_cpus(cg));
	assert_non_null(moat__cgroup_path(cg, MOAT_CG_CPUACCT));
	assert_true(moat__cgroup_enforces_memory(cg));
	assert_false(moat__cgroup_enforces_pids(cg)); /* no pids limit asked */
	char run[512];
	snprintf(run, sizeof(run), "%s/unified/r", f.dir);
	assert_int_equal(access(run, F_OK), -1); /* nothing made in the empty v2 */
	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_string_equal(iso.cgroup, "hybrid");
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
}

static void test_v2_backend(void **state)
{
	(void)state;
	fake f;
	char own[512];
	fake_v2(&f, "user.slice/run.scope", "cpuset cpu io memory pids\n", own, sizeof(own));
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "0::/user.slice/run.scope\n",
				 .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 128 << 20;
	lim.pids = 16;
	lim.cpus_milli = 500;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "run2", &cg, &err), 0);
	/* the controllers were enabled for our children */
	_cleanup_free_ char *sub = slurp(own, "cgroup.subtree_control");
	assert_string_equal(sub, "+memory +pids +cpu");
	char run[512];
	snprintf(run, sizeof(run), "%s/run2", own);
	for (int c = 0; c < _MOAT_CG_MAX; c++)
		assert_string_equal(moat__cgroup_path(cg, (moat_cgroup_ctrl)c), run);
	_cleanup_free_ char *mm = slurp(run, "memory.max");
	_cleanup_free_ char *sw = slurp(run, "memory.swap.max");
	_cleanup_free_ char *pm = slurp(run, "pids.max");
	_cleanup_free_ char *cm = slurp(run, "cpu.max");
	assert_string_equal(mm, "134217728");
	assert_string_equal(sw, "0");
	assert_string_equal(pm, "16");
	assert_string_equal(cm, "50000 100000");
	assert_true(moat__cgroup_clone_fd(cg) >= 0);
	/* plain files cannot be polled: no event source is claimed */
	assert_int_equal(moat__cgroup_event_fd(cg), -1);

	mkfile(run, "cpu.stat", "usage_usec 3100\nuser_usec 2000\nsystem_usec 1100\nnr_periods 0\n");
	mkfile(run, "memory.peak", "9000000\n");
	mkfile(run, "memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 1\n");
	moat_cgroup_stats st;
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_int_equal(st.cpu_user_us, 2000);
	assert_int_equal(st.cpu_sys_us, 1100);
	assert_int_equal(st.memory_peak_bytes, 9000000);
	assert_true(st.oom_killed);
	assert_false(st.pids_hit);

	/* Without memory.peak (before Linux 5.19), the largest memory.current
	 * seen stands in. */
	char peak[600];
	snprintf(peak, sizeof(peak), "%s/memory.peak", run);
	assert_int_equal(unlink(peak), 0);
	mkfile(run, "memory.current", "5000\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	mkfile(run, "memory.current", "300\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_true(st.memory_peak_known);
	assert_int_equal(st.memory_peak_bytes, 5000);

	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_string_equal(iso.cgroup, "v2");
	assert_string_equal(iso.cgroup_note, "");
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
}

/* v2 whose own cgroup offers no controller (an undelegated session). */
static void test_v2_nothing_offered(void **state)
{
	(void)state;
	fake f;
	char own[512];
	fake_v2(&f, "s", "\n", own, sizeof(own));
	moat_cgroup_host host = {.mountinfo = f.mountinfo, .self_cgroup = "0::/s\n", .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_default_code(&lim);
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "r", &cg, &err), 0);
	assert_false(moat__cgroup_enforces_memory(cg));
	assert_false(moat__cgroup_enforces_pids(cg));
	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_string_equal(iso.cgroup, "none");
	assert_int_equal(moat__cgroup_clone_fd(cg), -1);
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
}

static void test_no_cgroupfs(void **state)
{
	(void)state;
	moat_cgroup_host host = {.mountinfo = "20 1 0:5 / / rw - tmpfs tmpfs rw\n", .self_cgroup = "0::/\n"};
	moat_limits lim;
	moat_limits_default_code(&lim);
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, NULL, &cg, &err), 0);
	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_string_equal(iso.cgroup, "none");
	assert_non_null(strstr(iso.cgroup_note, "mounted"));
	moat_cgroup_stats st;
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_false(st.cpu_known);
	assert_int_equal(moat__cgroup_attach(cg, 1, &err), 0); /* nothing to attach to */
	moat__cgroup_destroy(cg);
	moat__cgroup_destroy(NULL);
	/* A name that is not a plain name is refused. */
	assert_true(moat__cgroup_create(&host, &lim, "../x", &cg, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
}

static void test_cpu_next_check(void **state)
{
	(void)state;
	assert_int_equal(moat__cpu_next_check_ms(1000, 0, 1000), 1000);
	/* two CPUs drain the budget twice as fast */
	assert_int_equal(moat__cpu_next_check_ms(1000, 0, 2000), 500);
	assert_int_equal(moat__cpu_next_check_ms(1000, 400000, 2000), 300);
	/* half a CPU: the budget lasts twice the wall time */
	assert_int_equal(moat__cpu_next_check_ms(1000, 0, 500), 2000);
	assert_int_equal(moat__cpu_next_check_ms(1000, 1000000, 1000), 0);
	assert_int_equal(moat__cpu_next_check_ms(1000, 2000000, 1000), 0);
	assert_int_equal(moat__cpu_next_check_ms(1000, 999500, 4000), 1);
	assert_int_equal(moat__cpu_next_check_ms(1000, 0, MOAT_UNLIMITED), 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_hybrid),
		cmocka_unit_test(test_layout_v1_comounted_and_container),
		cmocka_unit_test(test_layout_v2),
		cmocka_unit_test(test_v1_backend),
		cmocka_unit_test(test_hybrid_backend),
		cmocka_unit_test(test_v2_backend),
		cmocka_unit_test(test_v2_nothing_offered),
		cmocka_unit_test(test_no_cgroupfs),
		cmocka_unit_test(test_cpu_next_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
