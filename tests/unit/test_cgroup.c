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
#include "sandbox-internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

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
		mkfile(dir, "cpu.weight", "");
		return;
	}
	/* v1: one folder per hierarchy; the file set tells which it is. */
	if (strstr(dir, "/memory/")) {
		mkfile(dir, "memory.limit_in_bytes", "");
		mkfile(dir, "memory.memsw.limit_in_bytes", "");
		mkfile(dir, "memory.max_usage_in_bytes", "0\n");
		mkfile(dir, "memory.usage_in_bytes", "0\n");
		mkfile(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
		mkfile(dir, "cgroup.event_control", "");
	}
	if (strstr(dir, "/pids/")) {
		mkfile(dir, "pids.max", "");
		mkfile(dir, "pids.events", "max 0\n");
	}
	if (strstr(dir, "/cpuset/")) {
		/* empty, as the kernel makes them when clone_children is 0 */
		mkfile(dir, "cpuset.cpus", "\n");
		mkfile(dir, "cpuset.mems", "\n");
		return;
	}
	if (strstr(dir, "/cpu")) {
		mkfile(dir, "cpu.cfs_period_us", "");
		mkfile(dir, "cpu.cfs_quota_us", "");
		mkfile(dir, "cpu.shares", "");
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
	fake_mount(&f, "cpuset", "/", "cgroup", "rw,cpuset");
	char own[512], cpuset_own[512];
	snprintf(own, sizeof(own), "%s/memory/svc", f.dir);
	mkdirs(own);
	snprintf(cpuset_own, sizeof(cpuset_own), "%s/cpuset/svc", f.dir);
	mkdirs(cpuset_own);
	mkfile(cpuset_own, "cpuset.cpus", "0-3\n");
	mkfile(cpuset_own, "cpuset.mems", "0\n");
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "6:cpuset:/svc\n5:pids:/\n4:memory:/svc\n2:cpu,cpuacct:/\n",
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
	/* The cpuset, which limits nothing, gets the parent's CPUs and memory
	 * nodes, without which the kernel refuses to attach a task to it. */
	char cpuset[512];
	snprintf(cpuset, sizeof(cpuset), "%s/cpuset/svc/run1", f.dir);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPUSET), cpuset);
	_cleanup_free_ char *cpus = slurp(cpuset, "cpuset.cpus");
	_cleanup_free_ char *mems = slurp(cpuset, "cpuset.mems");
	assert_string_equal(cpus, "0-3\n");
	assert_string_equal(mems, "0\n");
	/* What the sandbox sees: every hierarchy the JVM needs (memory, cpu,
	 * cpuacct, cpuset), named as the host names them; pids, which only
	 * limits, is not bound. */
	moat_cgroup_mount mounts[_MOAT_CG_MAX];
	assert_int_equal(moat__cgroup_mounts(cg, mounts), 3);
	assert_int_equal(mounts[0].version, 1);
	assert_string_equal(mounts[0].name, "memory");
	assert_string_equal(mounts[0].dir, mem);
	assert_string_equal(mounts[1].name, "cpu,cpuacct");
	assert_string_equal(mounts[1].dir, cpu);
	assert_string_equal(mounts[2].name, "cpuset");
	assert_string_equal(mounts[2].dir, cpuset);

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
	_cleanup_free_ char *p4 = slurp(cpuset, "cgroup.procs");
	assert_string_equal(p1, want);
	assert_string_equal(p2, want);
	assert_string_equal(p3, want);
	assert_string_equal(p4, want);

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

	/* A run too short for a tick: no user/system split, the exact
	 * total counted as user time. */
	mkfile(cpu, "cpuacct.usage_user", "0\n");
	mkfile(cpu, "cpuacct.usage_sys", "0\n");
	mkfile(cpu, "cpuacct.usage", "3000000\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_int_equal(st.cpu_user_us, 3000);
	assert_int_equal(st.cpu_sys_us, 0);

	/* Reuse (moat eval's warm path): refused while a process is in it
	 * (the kernel lists one a line). */
	char listed[32];
	snprintf(listed, sizeof(listed), "%s\n", want);
	mkfile(mem, "cgroup.procs", listed);
	assert_int_equal(moat__cgroup_reuse(cg, 32 << 20), -EBUSY);
	for (const char *d = mem; d; d = d == mem ? pids : d == pids ? cpu : d == cpu ? cpuset : NULL)
		mkfile(d, "cgroup.procs", "");
	/* One digit: this fake file keeps what follows the "0" written. */
	mkfile(mem, "memory.max_usage_in_bytes", "8\n");
	assert_int_equal(moat__cgroup_reuse(cg, 32 << 20), 0);
	/* The peak and the CPU time were reset by writing 0; the OOM kill
	 * and the failed forks before are the last run's. */
	_cleanup_free_ char *peak = slurp(mem, "memory.max_usage_in_bytes");
	assert_string_equal(peak, "0\n");
	_cleanup_free_ char *usage = slurp(cpu, "cpuacct.usage");
	assert_int_equal(strtoull(usage, NULL, 10), 0);
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_int_equal(st.memory_peak_bytes, 0);
	assert_int_equal(st.cpu_user_us + st.cpu_sys_us, 0);
	assert_false(st.oom_killed);
	assert_false(st.pids_hit);
	/* Counted from there. */
	mkfile(mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	mkfile(pids, "pids.events", "max 4\n");
	assert_int_equal(moat__cgroup_stats(cg, &st), 0);
	assert_true(st.oom_killed);
	assert_true(st.pids_hit);
	/* Something still charged: the memory node is made anew, which a
	 * folder of regular files (this fake) refuses. */
	mkfile(mem, "memory.usage_in_bytes", "4096\n");
	assert_true(moat__cgroup_reuse(cg, 32 << 20) < 0);
	for (const char *d = mem; d; d = d == mem ? pids : d == pids ? cpu : d == cpu ? cpuset : NULL)
		mkfile(d, "cgroup.procs", want);

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
	/* no --cpus: the run still has a cpu cgroup on v1, for runtimes to
	 * read (the JVM trusts no v1 limit without it), and it limits nothing */
	char cpu_run[512];
	snprintf(cpu_run, sizeof(cpu_run), "%s/cpu/r", f.dir);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPU), cpu_run);
	_cleanup_free_ char *quota = slurp(cpu_run, "cpu.cfs_quota_us");
	assert_string_equal(quota, "");
	assert_false(moat__cgroup_enforces_cpus(cg));
	/* no cpuset hierarchy on this host: none is made, and no note for it */
	assert_null(moat__cgroup_path(cg, MOAT_CG_CPUSET));
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
		if (c != MOAT_CG_CPUSET)
			assert_string_equal(moat__cgroup_path(cg, (moat_cgroup_ctrl)c), run);
	/* v2 needs no cpuset of the run's own: runtimes read cpu.max */
	assert_null(moat__cgroup_path(cg, MOAT_CG_CPUSET));
	/* What the sandbox sees: the one v2 directory, at /sys/fs/cgroup. */
	moat_cgroup_mount mounts[_MOAT_CG_MAX];
	assert_int_equal(moat__cgroup_mounts(cg, mounts), 1);
	assert_int_equal(mounts[0].version, 2);
	assert_string_equal(mounts[0].dir, run);
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

/* A cpuset whose CPUs cannot be copied from the parent would refuse every
 * task: it is given up (it limits nothing), said in the note, and the run
 * goes on with the hierarchies that enforce something. */
static void test_v1_cpuset_unfillable(void **state)
{
	(void)state;
	fake f;
	fake_init(&f);
	fake_mount(&f, "memory", "/", "cgroup", "rw,memory");
	fake_mount(&f, "pids", "/", "cgroup", "rw,pids");
	fake_mount(&f, "cpu,cpuacct", "/", "cgroup", "rw,cpu,cpuacct");
	fake_mount(&f, "cpuset", "/", "cgroup", "rw,cpuset");
	/* no cpuset.cpus in the parent */
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "6:cpuset:/\n5:pids:/\n4:memory:/\n2:cpu,cpuacct:/\n",
				 .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 1 << 20;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "r", &cg, &err), 0);
	assert_null(moat__cgroup_path(cg, MOAT_CG_CPUSET));
	assert_true(moat__cgroup_enforces_memory(cg));
	moat_isolation iso = {0};
	moat__cgroup_describe(cg, &iso);
	assert_non_null(strstr(iso.cgroup_note, "cpuset"));
	moat_cgroup_mount mounts[_MOAT_CG_MAX];
	assert_int_equal(moat__cgroup_mounts(cg, mounts), 2);
	assert_string_equal(mounts[0].name, "memory");
	assert_string_equal(mounts[1].name, "cpu,cpuacct");
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
}

/* In a child with a user and mount namespace of its own (as root and as
 * anyone, where unprivileged user namespaces exist): binds the mounts into
 * a scratch root and checks what a sandbox would find there. Returns the
 * child's exit status; 77 when the namespaces are not available. */
typedef void (*root_check)(int rootfd);
static int in_scratch_root(const moat_cgroup_mount *mounts, size_t n, root_check check)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uid_t uid = getuid();
		gid_t gid = getgid();
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			_exit(77);
		char map[64];
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		int fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			_exit(3);
		close(fd);
		fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "deny", 4) < 0)
			_exit(3);
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			_exit(3);
		close(fd);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(4);
		char root[] = "/tmp/moat-unit-root.XXXXXX";
		if (!mkdtemp(root) || mount("tmpfs", root, "tmpfs", 0, "size=1m") < 0)
			_exit(5);
		int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		moat_error err = {0};
		if (rootfd < 0 || moat__rootfs_cgroup(rootfd, mounts, n, &err) < 0) {
			fprintf(stderr, "moat__rootfs_cgroup: %s\n", err.msg);
			_exit(6);
		}
		check(rootfd);
		/* The scratch root goes with the mount namespace; its folder: */
		(void)umount2(root, MNT_DETACH);
		(void)rmdir(root);
		_exit(0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void expect_bound(int rc)
{
	if (rc == 77) {
		const char *ci = getenv("CI");
		if (ci && strcmp(ci, "true") == 0)
			fail_msg("no user namespace for the bind check (a failure in CI)");
		skip();
	}
	assert_int_equal(rc, 0);
}

/* Checks in the child: an assert there would only end the child. */
#define CHILD_CHECK(cond)                                                                                              \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                      \
			_exit(10);                                                                                     \
		}                                                                                                      \
	} while (0)

static void child_read_is(int rootfd, const char *path, const char *want)
{
	char buf[256] = "";
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHILD_CHECK(n >= 0);
	buf[n] = '\0';
	if (strcmp(buf, want) != 0)
		fprintf(stderr, "%s: \"%s\", not \"%s\"\n", path, buf, want);
	CHILD_CHECK(strcmp(buf, want) == 0);
}

static void child_read_only(int rootfd, const char *path)
{
	int fd = openat(rootfd, path, O_WRONLY | O_CLOEXEC);
	CHILD_CHECK(fd < 0 && errno == EROFS);
}

static void check_v2_root(int rootfd)
{
	/* the run's own directory, at /sys/fs/cgroup */
	child_read_is(rootfd, "sys/fs/cgroup/memory.max", "134217728");
	child_read_is(rootfd, "sys/fs/cgroup/cpu.max", "50000 100000");
	child_read_only(rootfd, "sys/fs/cgroup/memory.max");
	child_read_only(rootfd, "sys/fs/cgroup/cgroup.procs");
	CHILD_CHECK(mkdirat(rootfd, "sys/fs/cgroup/child", 0755) < 0 && errno == EROFS);
	/* nothing of the parent: its subtree_control, the run's siblings */
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/cgroup.subtree_control", F_OK, 0) < 0);
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/sibling", F_OK, 0) < 0);
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/run2", F_OK, 0) < 0);
}

/* v2 from creation to what the sandbox sees, over a fake tree: the host's
 * hierarchy is never touched. */
static void test_v2_bound(void **state)
{
	(void)state;
	fake f;
	char own[512];
	fake_v2(&f, "user.slice/run.scope", "cpuset cpu io memory pids\n", own, sizeof(own));
	char sibling[600];
	snprintf(sibling, sizeof(sibling), "%s/sibling", own);
	mkdirs(sibling);
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "0::/user.slice/run.scope\n",
				 .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 128 << 20;
	lim.cpus_milli = 500;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "run2", &cg, &err), 0);
	moat_cgroup_mount mounts[_MOAT_CG_MAX];
	size_t n = moat__cgroup_mounts(cg, mounts);
	assert_int_equal(n, 1);
	int rc = in_scratch_root(mounts, n, check_v2_root);
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
	expect_bound(rc);
}

static void check_v1_root(int rootfd)
{
	child_read_is(rootfd, "sys/fs/cgroup/memory/memory.limit_in_bytes", "67108864");
	/* co-mounted cpu and cpuacct: one mount, found under either name */
	child_read_is(rootfd, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "");
	child_read_is(rootfd, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "");
	child_read_is(rootfd, "sys/fs/cgroup/cpuacct/cpuacct.usage", "0\n");
	child_read_is(rootfd, "sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n");
	child_read_only(rootfd, "sys/fs/cgroup/memory/memory.limit_in_bytes");
	child_read_only(rootfd, "sys/fs/cgroup/cpuset/cgroup.procs");
	child_read_only(rootfd, "sys/fs/cgroup/cpu/cgroup.procs");
	/* pids limits, nothing reads it: not bound */
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/pids", F_OK, 0) < 0);
	/* nothing of the parents */
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/memory/svc", F_OK, 0) < 0);
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/memory/run1", F_OK, 0) < 0);
	CHILD_CHECK(faccessat(rootfd, "sys/fs/cgroup/cpuset/cpuset.mems_parent_only", F_OK, 0) < 0);
}

static void test_v1_bound(void **state)
{
	(void)state;
	fake f;
	fake_init(&f);
	fake_mount(&f, "memory", "/", "cgroup", "rw,memory");
	fake_mount(&f, "pids", "/", "cgroup", "rw,pids");
	fake_mount(&f, "cpu,cpuacct", "/", "cgroup", "rw,cpu,cpuacct");
	fake_mount(&f, "cpuset", "/", "cgroup", "rw,cpuset");
	char own[512];
	snprintf(own, sizeof(own), "%s/memory/svc", f.dir);
	mkdirs(own);
	snprintf(own, sizeof(own), "%s/cpuset", f.dir);
	mkfile(own, "cpuset.cpus", "0-3\n");
	mkfile(own, "cpuset.mems", "0\n");
	mkfile(own, "cpuset.mems_parent_only", "");
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "6:cpuset:/\n5:pids:/\n4:memory:/svc\n2:cpu,cpuacct:/\n",
				 .fake_kernel_mkdir = fake_kernel};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 64 << 20;
	lim.pids = 32;
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create(&host, &lim, "run1", &cg, &err), 0);
	moat_cgroup_mount mounts[_MOAT_CG_MAX];
	size_t n = moat__cgroup_mounts(cg, mounts);
	assert_int_equal(n, 3);
	int rc = in_scratch_root(mounts, n, check_v1_root);
	moat__cgroup_destroy(cg);
	rm_rf(f.dir);
	expect_bound(rc);
}


/* fake_kernel, for folders that get children of their own (v2 reads and
 * writes their cgroup.subtree_control). */
static void fake_kernel_tree(const char *dir, int version, void *userdata)
{
	fake_kernel(dir, version, userdata);
	if (version == 2) {
		mkfile(dir, "cgroup.controllers", "cpu memory pids\n");
		mkfile(dir, "cgroup.subtree_control", "");
	}
}

static void test_req_path(void **state)
{
	(void)state;
	char out[64];
	moat_error err = {0};
	assert_int_equal(moat__cgroup_req_path("/kubepods//pod1/./ctr/", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/kubepods/pod1/ctr");
	assert_int_equal(moat__cgroup_req_path("testdir/cgrouptest/container", out, sizeof(out), &err), 0);
	assert_string_equal(out, "testdir/cgrouptest/container");
	static const char *const bad[] = {"", "/", "/./", "/a/../../etc", "..", "a/..", "/a\nb",
					  "system.slice:cri-containerd:abc"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_true(moat__cgroup_req_path(bad[i], out, sizeof(out), &err) < 0);
		assert_int_equal(err.code, MOAT_EINPUT);
	}
	assert_true(moat__cgroup_req_path("/a/../b", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "climb out"));
	assert_true(moat__cgroup_req_path("k.slice:cri:x", out, sizeof(out), &err) < 0);
	assert_non_null(strstr(err.msg, "cgroupfs driver only"));
	/* longer than the buffer, too deep */
	char longp[200];
	memset(longp, 'x', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_true(moat__cgroup_req_path(longp, out, sizeof(out), &err) < 0);
	char deep[128] = "";
	for (int i = 0; i < 33; i++)
		strcat(deep, "/a");
	assert_true(moat__cgroup_req_path(deep, longp, sizeof(longp), &err) < 0);
	assert_non_null(strstr(err.msg, "components"));
}

static bool exists(const char *dir, const char *sub)
{
	char p[MOAT_MAX_PATH];
	snprintf(p, sizeof(p), "%s/%s", dir, sub);
	struct stat st;
	return lstat(p, &st) == 0;
}

/* Fake cgroup folders hold files, which a real rmdir ignores: emptied so
 * that destroy()'s rmdir shows what it removes. */
static void drop_files(const char *dir)
{
	char cmd[MOAT_MAX_PATH + 64];
	snprintf(cmd, sizeof(cmd), "find '%s' -type f -delete", dir);
	assert_int_equal(system(cmd), 0);
}

static void v1_req_host(fake *f, moat_cgroup_host *host)
{
	fake_init(f);
	fake_mount(f, "memory", "/", "cgroup", "rw,memory");
	fake_mount(f, "pids", "/", "cgroup", "rw,pids");
	fake_mount(f, "cpu,cpuacct", "/", "cgroup", "rw,cpu,cpuacct");
	fake_mount(f, "cpuset", "/", "cgroup", "rw,cpuset");
	char p[512];
	snprintf(p, sizeof(p), "%s/cpuset", f->dir);
	mkfile(p, "cpuset.cpus", "0-3\n");
	mkfile(p, "cpuset.mems", "0\n");
	snprintf(p, sizeof(p), "%s/memory/svc", f->dir);
	mkdirs(p);
	/* kubelet's pod cgroup, made before the container's */
	snprintf(p, sizeof(p), "%s/memory/kubepods", f->dir);
	mkdirs(p);
	*host = (moat_cgroup_host){.mountinfo = f->mountinfo,
				   .self_cgroup = "6:cpuset:/\n5:pids:/\n4:memory:/svc\n2:cpu,cpuacct:/\n",
				   .fake_kernel_mkdir = fake_kernel,
				   .no_sweep = true};
}

static void test_v1_req(void **state)
{
	(void)state;
	fake f;
	moat_cgroup_host host;
	v1_req_host(&f, &host);
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 64 << 20;
	lim.pids = 32;
	lim.cpus_milli = 500;
	moat_cgroup_req req = {.path = "/kubepods/pod1/ctr",
			       .cpu_shares = 512,
			       .cpu_quota = 125000,
			       .cpu_period = 250000,
			       .cpuset_cpus = "0,2-3",
			       .cpuset_mems = "0"};
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create_req(&host, &lim, &req, &cg, &err), 0);
	/* An absolute path is taken from the hierarchy's root, not ours (svc). */
	char mem[512], pids[512], cpu[512], cpuset[512];
	snprintf(mem, sizeof(mem), "%s/memory/kubepods/pod1/ctr", f.dir);
	snprintf(pids, sizeof(pids), "%s/pids/kubepods/pod1/ctr", f.dir);
	snprintf(cpu, sizeof(cpu), "%s/cpu,cpuacct/kubepods/pod1/ctr", f.dir);
	snprintf(cpuset, sizeof(cpuset), "%s/cpuset/kubepods/pod1/ctr", f.dir);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_MEMORY), mem);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_PIDS), pids);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPU), cpu);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_CPUSET), cpuset);
	_cleanup_free_ char *ml = slurp(mem, "memory.limit_in_bytes");
	_cleanup_free_ char *pm = slurp(pids, "pids.max");
	_cleanup_free_ char *sh = slurp(cpu, "cpu.shares");
	_cleanup_free_ char *per = slurp(cpu, "cpu.cfs_period_us");
	_cleanup_free_ char *quo = slurp(cpu, "cpu.cfs_quota_us");
	_cleanup_free_ char *cs = slurp(cpuset, "cpuset.cpus");
	assert_string_equal(ml, "67108864");
	assert_string_equal(pm, "32");
	assert_string_equal(sh, "512");
	/* the spec's own quota and period, which give the limits' 0.5 CPU */
	assert_string_equal(per, "250000");
	assert_string_equal(quo, "125000");
	assert_string_equal(cs, "0,2-3");
	/* a cpuset folder made above the leaf got its parent's CPUs */
	char pod_cpuset[512];
	snprintf(pod_cpuset, sizeof(pod_cpuset), "%s/cpuset/kubepods/pod1", f.dir);
	_cleanup_free_ char *cs2 = slurp(pod_cpuset, "cpuset.cpus");
	assert_string_equal(cs2, "0-3\n");

	/* The same path again: the leaf exists and is not the new one's. */
	moat_cgroup *cg2 = NULL;
	memset(&err, 0, sizeof(err));
	assert_true(moat__cgroup_create_req(&host, &lim, &req, &cg2, &err) < 0);
	assert_null(cg2);
	assert_non_null(strstr(err.msg, "exists and is not this container's"));
	assert_true(exists(f.dir, "memory/kubepods/pod1/ctr"));

	/* destroy() removes the leaf and the folders it made, not kubepods,
	 * which was there before. */
	drop_files(f.dir);
	moat__cgroup_destroy(cg);
	static const char *const gone[] = {"memory/kubepods/pod1", "pids/kubepods", "cpu,cpuacct/kubepods",
					   "cpuset/kubepods"};
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		assert_false(exists(f.dir, gone[i]));
	assert_true(exists(f.dir, "memory/kubepods"));
	rm_rf(f.dir);
}

static void test_v1_req_relative_and_refused(void **state)
{
	(void)state;
	fake f;
	moat_cgroup_host host;
	v1_req_host(&f, &host);
	moat_limits lim;
	moat_limits_unlimited(&lim);
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	/* relative: below our own cgroup of each hierarchy (memory: svc) */
	moat_cgroup_req req = {.path = "a/b"};
	assert_int_equal(moat__cgroup_create_req(&host, &lim, &req, &cg, &err), 0);
	char mem[512];
	snprintf(mem, sizeof(mem), "%s/memory/svc/a/b", f.dir);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_MEMORY), mem);
	drop_files(f.dir);
	moat__cgroup_destroy(cg);
	assert_false(exists(f.dir, "memory/svc/a"));
	assert_true(exists(f.dir, "memory/svc"));

	/* a link on the way is not followed, and what it points to is untouched */
	char outside[512], link[512];
	snprintf(outside, sizeof(outside), "%s/outside", f.dir);
	mkdirs(outside);
	snprintf(link, sizeof(link), "%s/memory/evil", f.dir);
	assert_int_equal(symlink(outside, link), 0);
	req.path = "/evil/ctr";
	cg = NULL;
	memset(&err, 0, sizeof(err));
	assert_true(moat__cgroup_create_req(&host, &lim, &req, &cg, &err) < 0);
	assert_null(cg);
	assert_non_null(strstr(err.msg, "a link or a file"));
	assert_false(exists(outside, "ctr"));
	/* memory is walked first: no other hierarchy got a folder */
	assert_false(exists(f.dir, "pids/evil"));

	/* ".." and systemd's form never reach the file system */
	req.path = "/../outside/x";
	memset(&err, 0, sizeof(err));
	assert_true(moat__cgroup_create_req(&host, &lim, &req, &cg, &err) < 0);
	assert_false(exists(outside, "x"));
	rm_rf(f.dir);
}

static void test_v2_req(void **state)
{
	(void)state;
	fake f;
	char own[512];
	fake_v2(&f, "user.slice/run.scope", "cpuset cpu io memory pids\n", own, sizeof(own));
	char top[512];
	snprintf(top, sizeof(top), "%s/cg", f.dir);
	mkfile(top, "cgroup.controllers", "cpuset cpu io memory pids\n");
	mkfile(top, "cgroup.subtree_control", "");
	moat_cgroup_host host = {.mountinfo = f.mountinfo,
				 .self_cgroup = "0::/user.slice/run.scope\n",
				 .fake_kernel_mkdir = fake_kernel_tree,
				 .no_sweep = true};
	moat_limits lim;
	moat_limits_unlimited(&lim);
	lim.memory_bytes = 32 << 20;
	lim.pids = 8;
	lim.cpus_milli = 200;
	moat_cgroup_req req = {.path = "/pods/ctr", .cpu_shares = 2048, .cpu_quota = 20000, .cpu_period = 100000};
	moat_cgroup *cg = NULL;
	moat_error err = {0};
	assert_int_equal(moat__cgroup_create_req(&host, &lim, &req, &cg, &err), 0);
	char leaf[512], pods[512];
	snprintf(leaf, sizeof(leaf), "%s/pods/ctr", top);
	snprintf(pods, sizeof(pods), "%s/pods", top);
	assert_string_equal(moat__cgroup_path(cg, MOAT_CG_MEMORY), leaf);
	/* the controllers were enabled on the way down, from the root */
	_cleanup_free_ char *st = slurp(top, "cgroup.subtree_control");
	_cleanup_free_ char *sp = slurp(pods, "cgroup.subtree_control");
	assert_string_equal(st, "+memory +pids +cpu");
	assert_string_equal(sp, "+memory +pids +cpu");
	/* our own cgroup was left alone */
	_cleanup_free_ char *so = slurp(own, "cgroup.subtree_control");
	assert_string_equal(so, "");
	_cleanup_free_ char *mm = slurp(leaf, "memory.max");
	_cleanup_free_ char *pm = slurp(leaf, "pids.max");
	_cleanup_free_ char *cm = slurp(leaf, "cpu.max");
	_cleanup_free_ char *cw = slurp(leaf, "cpu.weight");
	assert_string_equal(mm, "33554432");
	assert_string_equal(pm, "8");
	assert_string_equal(cm, "20000 100000");
	assert_string_equal(cw, "79"); /* 1 + (2048 - 2) * 9999 / 262142 */
	/* cpus and mems: v1's cpuset only, refused here rather than dropped */
	moat_cgroup_req req2 = {.path = "/other/ctr2", .cpuset_cpus = "0"};
	moat_cgroup *cg2 = NULL;
	assert_true(moat__cgroup_create_req(&host, &lim, &req2, &cg2, &err) < 0);
	assert_non_null(strstr(err.msg, "cpuset"));
	drop_files(top);
	moat__cgroup_destroy(cg);
	assert_false(exists(top, "pods"));
	rm_rf(f.dir);
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
		cmocka_unit_test(test_v1_cpuset_unfillable),
		cmocka_unit_test(test_v2_bound),
		cmocka_unit_test(test_v1_bound),
		cmocka_unit_test(test_no_cgroupfs),
		cmocka_unit_test(test_cpu_next_check),
		cmocka_unit_test(test_req_path),
		cmocka_unit_test(test_v1_req),
		cmocka_unit_test(test_v1_req_relative_and_refused),
		cmocka_unit_test(test_v2_req),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
