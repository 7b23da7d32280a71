/* Unit tests: capabilities, seccomp and Landlock, each applied for real in a
 * forked child that then checks the kernel refuses what it should (and still
 * allows what programs need). The parent only reads the child's verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "confine.h"
#include "sandbox-internal.h"
#include "landlock.h"
#include "landlock-compat.h"
#include "seccomp-profile.h"

/* In the child: report the first failed check on stderr and exit 1. */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child check failed at line %d: %s (errno %d %s)\n", __LINE__, \
				#cond, errno, strerror(errno));                                    \
			_exit(1);                                                                  \
		}                                                                                  \
	} while (0)

/* A call that must fail with exactly this errno. */
#define DENIED(call, e) CHECK((errno = 0, (call)) < 0 && errno == (e))

static void run_child(void (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Unprivileged callers get capabilities in a user namespace of their own. */
static void ensure_caps(void)
{
	if (geteuid() != 0)
		CHECK(unshare(CLONE_NEWUSER) == 0);
}

static void caps_child(void *arg)
{
	(void)arg;
	ensure_caps();
	moat_isolation iso = {0};
	moat_error err = {0};
	CHECK(moat__caps_drop(&iso, &err) == 0);
	CHECK(iso.no_new_privs && iso.caps_dropped);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	CHECK(syscall(SYS_capget, &hdr, data) == 0);
	CHECK(data[0].effective == 0 && data[0].permitted == 0 && data[0].inheritable == 0);
	CHECK(data[1].effective == 0 && data[1].permitted == 0 && data[1].inheritable == 0);
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		CHECK(prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0);
	/* The securebits are locked: clearing them is refused. */
	DENIED(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0), EPERM);
	DENIED(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0), EPERM);
	DENIED(prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), EINVAL);
	/* A privileged operation fails although uid may still be 0. */
	DENIED(sethostname("x", 1), EPERM);
}

static void test_caps_drop(void **state)
{
	(void)state;
	run_child(caps_child, NULL);
}

static void seccomp_common_checks(void)
{
	DENIED(unshare(CLONE_NEWUSER), EPERM);
	DENIED(unshare(CLONE_NEWNS), EPERM);
	DENIED(setns(0, 0), EPERM);
	DENIED(mount("none", "/", "tmpfs", 0, NULL), EPERM);
	DENIED(umount2("/", 0), EPERM);
	DENIED(syscall(SYS_pivot_root, "/", "/"), EPERM);
	DENIED(chroot("/"), EPERM);
	DENIED(syscall(SYS_ptrace, 0, 0, 0, 0), EPERM);
	DENIED(syscall(SYS_bpf, 0, 0, 0), EPERM);
	DENIED(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	DENIED(syscall(SYS_userfaultfd, 0), EPERM);
	DENIED(syscall(SYS_io_uring_setup, 1, NULL), EPERM);
	DENIED(syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
	DENIED(syscall(SYS_add_key, "user", "x", "y", 1, 0), EPERM);
	DENIED(syscall(SYS_open_by_handle_at, 0, NULL, 0), EPERM);
	DENIED(syscall(SYS_init_module, NULL, 0, ""), EPERM);
	DENIED(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
	DENIED(syscall(SYS_syslog, 3, NULL, 0), EPERM);
	DENIED(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	DENIED(syscall(SYS_settimeofday, NULL, NULL), EPERM);
	/* clone3 answers ENOSYS so libc falls back to clone, where namespace
	 * flags are visible and refused. */
	DENIED(syscall(SYS_clone3, NULL, 0), ENOSYS);
	DENIED(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	DENIED(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0)
		_exit(7);
	int st;
	CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	/* personality: query and PER_LINUX pass, ASLR-weakening values do not,
	 * with or without high bits. */
	CHECK(syscall(SYS_personality, 0xffffffffUL) >= 0);
	CHECK(syscall(SYS_personality, (unsigned long)PER_LINUX) >= 0);
	DENIED(syscall(SYS_personality, (unsigned long)ADDR_NO_RANDOMIZE), EPERM);
	DENIED(syscall(SYS_personality, (unsigned long)READ_IMPLIES_EXEC), EPERM);
	DENIED(syscall(SYS_personality, (1UL << 32) | ADDR_NO_RANDOMIZE), EPERM);
	DENIED(syscall(SYS_personality, 0x80000000UL), EPERM);
	DENIED(syscall(SYS_personality, 0xfffffffeUL), EPERM);
	/* TIOCSTI with and without high bits (CVE-2019-10063); an unrelated
	 * ioctl still reaches the kernel (which says ENOTTY on a pipe). */
	int p[2];
	CHECK(pipe(p) == 0);
	char ch = 'x';
	DENIED(syscall(SYS_ioctl, p[0], (unsigned long)TIOCSTI, &ch), EPERM);
	DENIED(syscall(SYS_ioctl, p[0], (1UL << 32) | TIOCSTI, &ch), EPERM);
	DENIED(syscall(SYS_ioctl, p[0], 0x541CUL /* TIOCLINUX */, &ch), EPERM);
	struct winsize ws;
	DENIED(ioctl(p[0], TIOCGWINSZ, &ws), ENOTTY);
	/* Sockets: the three families programs use work, others do not. */
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	close(s);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	close(s);
	DENIED(socket(AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
	DENIED(syscall(SYS_socket, (1UL << 32) | AF_PACKET, SOCK_RAW, 0), EAFNOSUPPORT);
	DENIED(socket(AF_VSOCK, SOCK_STREAM, 0), EAFNOSUPPORT);
	DENIED(socket(AF_ALG, SOCK_SEQPACKET, 0), EAFNOSUPPORT);
	DENIED(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), errno == EAFNOSUPPORT ? EAFNOSUPPORT : EPROTONOSUPPORT);
	/* x32 system calls are refused as a foreign ABI. */
	DENIED(syscall(0x40000000 | SYS_getpid), ENOSYS);
}

static void seccomp_child(void *arg)
{
	const char *profile = arg;
	ensure_caps();
	moat_isolation iso = {0};
	moat_error err = {0};
	CHECK(moat__caps_drop(&iso, &err) == 0);
	moat_config c = {0};
	c.profile = (char *)profile;
	CHECK(moat__seccomp_apply(&c, &iso, &err) == 0);
	CHECK(iso.seccomp && strcmp(iso.seccomp_profile, profile) == 0 && iso.seccomp_rules > 100);
	seccomp_common_checks();
	DENIED(syscall(SYS_fanotify_init, 0, O_RDONLY), EPERM);
	if (strcmp(profile, "agent") == 0) {
		int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		CHECK(s >= 0);
		close(s);
		/* The agent's tools watch files (docs/security.md). */
		s = (int)syscall(SYS_inotify_init1, O_CLOEXEC);
		CHECK(s >= 0);
		close(s);
	} else {
		DENIED(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), EAFNOSUPPORT);
		/* The code runner sees nothing of the host's shared inodes. */
		DENIED(syscall(SYS_inotify_init1, O_CLOEXEC), EPERM);
		DENIED(syscall(SYS_inotify_init), EPERM);
		DENIED(syscall(SYS_inotify_add_watch, 0, "/usr/bin", 0x20), EPERM);
	}
}

/* Per-namespace limits: no namespaces and no fanotify in any profile, no
 * inotify in the code runner, a few watchers for the agent. */
static void test_userns_limits(void **state)
{
	(void)state;
	static const char *const known[] = {
		"max_user_namespaces", "max_mnt_namespaces", "max_pid_namespaces", "max_net_namespaces",
		"max_ipc_namespaces", "max_uts_namespaces", "max_cgroup_namespaces", "max_time_namespaces",
		"max_fanotify_groups", "max_fanotify_marks", "max_inotify_instances", "max_inotify_watches",
	};
	const char *profiles[] = {"code", "agent", NULL};
	for (size_t p = 0; p < ELEMENTSOF(profiles); p++) {
		const moat_userns_limit *l = moat__userns_limits(profiles[p]);
		size_t n = 0;
		for (; l[n].name; n++) {
			bool ok = false;
			for (size_t k = 0; k < ELEMENTSOF(known); k++)
				ok |= strcmp(l[n].name, known[k]) == 0;
			assert_true(ok);
			bool inotify = strncmp(l[n].name, "max_inotify_", 12) == 0;
			if (!inotify || !profiles[p] || strcmp(profiles[p], "agent") != 0)
				assert_int_equal(l[n].value, 0);
			else
				assert_true(l[n].value > 0 && l[n].value <= 8192);
		}
		assert_int_equal(n, ELEMENTSOF(known));
	}
}

static void test_seccomp_code(void **state)
{
	(void)state;
	run_child(seccomp_child, "code");
}

static void test_seccomp_agent(void **state)
{
	(void)state;
	run_child(seccomp_child, "agent");
}

static void test_seccomp_unknown_profile(void **state)
{
	(void)state;
	void *ctx = NULL;
	unsigned n = 0;
	moat_error err = {0};
	assert_true(moat__seccomp_build("bogus", &ctx, &n, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
	assert_non_null(strstr(err.msg, "bogus"));
	assert_int_equal(moat__seccomp_build(NULL, &ctx, &n, &err), 0);
	assert_true(n > 100);
	moat__seccomp_free(ctx);
}

/* The program compiled once per sandbox: a BPF program of the profile,
 * named and counted as the report says; an unknown profile compiles
 * nothing. Loading it is what seccomp_child checks (apply compiles and
 * loads). */
static void test_seccomp_compile(void **state)
{
	(void)state;
	moat_config c = {0};
	moat_seccomp_prog p = {0};
	moat_error err = {0};
	c.profile = "agent";
	assert_int_equal(moat__seccomp_compile(&c, &p, &err), 0);
	assert_non_null(p.insns);
	assert_true(p.len > 100 && p.len <= BPF_MAXINSNS);
	assert_string_equal(p.profile, "agent");
	assert_true(p.rules > 100);
	moat__seccomp_prog_done(&p);
	assert_null(p.insns);
	c.profile = "bogus";
	assert_true(moat__seccomp_compile(&c, &p, &err) < 0);
	assert_int_equal(err.code, MOAT_EINPUT);
	assert_null(p.insns);
	moat_isolation iso = {0};
	assert_true(moat__seccomp_load(&p, &iso, &err) < 0);
	assert_false(iso.seccomp);
}

static const moat_ll_path_rule *find_rule(const moat_ll_plan *p, const char *path)
{
	for (size_t i = 0; i < p->n_paths; i++)
		if (strcmp(p->paths[i].path, path) == 0)
			return &p->paths[i];
	return NULL;
}

/* The access of the rule for path; a missing rule fails the test. */
static uint64_t access_of(const moat_ll_plan *p, const char *path)
{
	const moat_ll_path_rule *r = find_rule(p, path);
	if (!r)
		fail_msg("no Landlock rule for %s", path);
	return r ? r->access : 0;
}

static void test_landlock_plan(void **state)
{
	(void)state;
	moat_error err = {0};
	_cleanup_config_ moat_config *c = moat_config_new();
	_cleanup_free_ moat_ll_plan *p = calloc(1, sizeof(*p));
	assert_non_null(p);
	assert_int_equal(moat_config_add_bind(c, "/srv", "/data", 0, &err), 0);
	assert_int_equal(moat_config_add_bind(c, "/srv/w", "/work", MOAT_BIND_RW, &err), 0);
	c->out_dir = strdup("/somewhere");

	assert_int_equal(moat__landlock_plan(c, 0, p, &err), 0);
	assert_int_equal(p->n_paths, 0);

	/* ABI 3: filesystem only, truncate handled, no scope. */
	assert_int_equal(moat__landlock_plan(c, 3, p, &err), 0);
	assert_true(p->handled_fs & MOAT_LL_FS_TRUNCATE);
	assert_false(p->handled_fs & MOAT_LL_FS_IOCTL_DEV);
	assert_int_equal(p->scoped, 0);
	assert_int_equal(access_of(p, "/"), MOAT_LL_FS_READ_FILE | MOAT_LL_FS_READ_DIR);
	uint64_t a;
	a = access_of(p, "/usr");
	assert_true((a & MOAT_LL_FS_EXECUTE) && !(a & MOAT_LL_FS_WRITE_FILE));
	a = access_of(p, "/data");
	assert_true((a & MOAT_LL_FS_EXECUTE) && !(a & MOAT_LL_FS_WRITE_FILE));
	a = access_of(p, "/work");
	assert_true(!(a & MOAT_LL_FS_EXECUTE) && (a & MOAT_LL_FS_WRITE_FILE));
	a = access_of(p, "/out");
	assert_true(!(a & MOAT_LL_FS_EXECUTE) && (a & MOAT_LL_FS_MAKE_REG));
	/* Nothing the host reads back may be a FIFO, socket or device. */
	assert_false(a & (MOAT_LL_FS_MAKE_FIFO | MOAT_LL_FS_MAKE_SOCK |
				  MOAT_LL_FS_MAKE_CHAR | MOAT_LL_FS_MAKE_BLOCK));
	a = access_of(p, "/tmp");
	assert_true((a & MOAT_LL_FS_EXECUTE) && (a & MOAT_LL_FS_MAKE_SYM));

	/* ABI 9 is used as 7: scopes, and no TCP rules (the network namespace
	 * confines TCP, so loopback servers work inside), with or without a
	 * proxy. */
	assert_int_equal(moat__landlock_plan(c, 9, p, &err), 0);
	assert_int_equal(p->abi, 7);
	assert_true(p->handled_fs & MOAT_LL_FS_IOCTL_DEV);
	assert_int_equal(p->scoped, MOAT_LL_SCOPE_ABSTRACT_UNIX_SOCKET | MOAT_LL_SCOPE_SIGNAL);
	char desc[96];
	moat__landlock_describe(p, desc, sizeof(desc));
	assert_string_equal(desc, "fs,scope");
	c->net = MOAT_NET_PROXY;
	assert_int_equal(moat__landlock_plan(c, 7, p, &err), 0);
	moat__landlock_describe(p, desc, sizeof(desc));
	assert_string_equal(desc, "fs,scope");

	/* exec.workspace: /out and writable binds may hold programs. */
	c->exec_workspace = 1;
	assert_int_equal(moat__landlock_plan(c, 7, p, &err), 0);
	assert_true(access_of(p, "/out") & MOAT_LL_FS_EXECUTE);
	assert_true(access_of(p, "/work") & MOAT_LL_FS_EXECUTE);
	c->exec_workspace = 0;

	/* exec_deny_tmp: /tmp stays writable but not executable. */
	c->exec_deny_tmp = 1;
	assert_int_equal(moat__landlock_plan(c, 7, p, &err), 0);
	a = access_of(p, "/tmp");
	assert_true(!(a & MOAT_LL_FS_EXECUTE));

	/* An allowlist replaces the system directories. */
	assert_int_equal(moat__strv_push(&c->exec_allow, "/usr/bin/python3"), 0);
	assert_int_equal(moat__landlock_plan(c, 7, p, &err), 0);
	assert_true(p->exec_allowlist);
	assert_null(find_rule(p, "/usr"));
	a = access_of(p, "/usr/bin/python3");
	assert_true((a & MOAT_LL_FS_EXECUTE));
	a = access_of(p, "/data");
	assert_true(!(a & MOAT_LL_FS_EXECUTE));
	moat__landlock_describe(p, desc, sizeof(desc));
	assert_string_equal(desc, "fs(exec-allowlist),scope");
}

typedef struct ll_dirs {
	char rw[64], other[64];
} ll_dirs;

static void landlock_child(void *arg)
{
	ll_dirs *d = arg;
	ensure_caps();
	moat_isolation iso = {0};
	moat_error err = {0};
	moat_config c = {0};
	moat_bind b = {.src = d->rw, .dst = d->rw, .flags = MOAT_BIND_RW};
	c.binds = &b;
	c.n_binds = 1;
	CHECK(moat__caps_drop(&iso, &err) == 0);
	if (moat__landlock_apply(&c, &iso, &err) < 0) {
		fprintf(stderr, "landlock: %s\n", err.msg);
		_exit(1);
	}
	CHECK(iso.landlock_abi == moat__landlock_abi() || (iso.landlock_abi == MOAT_LANDLOCK_ABI_MAX));
	char path[128];
	snprintf(path, sizeof(path), "%s/ok", d->rw);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	CHECK(fd >= 0);
	/* A copy of /bin/true in the writable bind: written, but not executable. */
	int src = open("/bin/true", O_RDONLY | O_CLOEXEC);
	CHECK(src >= 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof(buf))) > 0)
		CHECK(write(fd, buf, (size_t)n) == n);
	close(src);
	close(fd);
	snprintf(path, sizeof(path), "%s/x", d->other);
	DENIED(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	DENIED(mkdir(path, 0755), EACCES);
	snprintf(path, sizeof(path), "%s/link", d->rw);
	CHECK(symlink("ok", path) == 0);
	snprintf(path, sizeof(path), "%s/link", d->other);
	DENIED(symlink("/etc/passwd", path), EACCES);
	snprintf(path, sizeof(path), "%s/fifo", d->rw);
	DENIED(mkfifo(path, 0644), EACCES);
	CHECK(open("/etc/hostname", O_RDONLY | O_CLOEXEC) >= 0 || errno == ENOENT);
	DENIED(open("/etc/hostname", O_WRONLY | O_CLOEXEC), EACCES);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		snprintf(path, sizeof(path), "%s/ok", d->rw);
		char *argv[] = {path, NULL};
		execv(path, argv);
		_exit(errno == EACCES ? 42 : 43);
	}
	int st;
	CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 42);
	kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		char *argv[] = {"/bin/true", NULL};
		execv("/bin/true", argv);
		_exit(44);
	}
	CHECK(waitpid(kid, &st, 0) == kid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* TCP is the network namespace's to confine, not Landlock's: a closed
	 * port is refused as on any host, not EACCES. */
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	DENIED(connect(s, (struct sockaddr *)&sin, sizeof(sin)), ECONNREFUSED);
	close(s);
	if (iso.landlock_abi >= 6)
		DENIED(kill(getppid(), 0), EPERM);
}

static void test_landlock_apply(void **state)
{
	(void)state;
	if (moat__landlock_abi() <= 0) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
			fail_msg("Landlock is not available and CI requires it");
		skip();
	}
	ll_dirs d;
	snprintf(d.rw, sizeof(d.rw), "/var/tmp/landlock-rw.XXXXXX");
	snprintf(d.other, sizeof(d.other), "/var/tmp/landlock-other.XXXXXX");
	assert_non_null(mkdtemp(d.rw));
	assert_non_null(mkdtemp(d.other));
	run_child(landlock_child, &d);
	char path[128];
	snprintf(path, sizeof(path), "%s/ok", d.rw);
	unlink(path);
	snprintf(path, sizeof(path), "%s/link", d.rw);
	unlink(path);
	rmdir(d.rw);
	rmdir(d.other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_drop),
		cmocka_unit_test(test_seccomp_code),
		cmocka_unit_test(test_seccomp_agent),
		cmocka_unit_test(test_seccomp_unknown_profile),
		cmocka_unit_test(test_seccomp_compile),
		cmocka_unit_test(test_userns_limits),
		cmocka_unit_test(test_landlock_plan),
		cmocka_unit_test(test_landlock_apply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
