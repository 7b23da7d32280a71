/* Drives a sandbox's keeper through libmoat's client side (keeper.h), as a
 * front would: starts one with fork and exec of moat, connects, spawns
 * commands one after another and at once, gets each one's exit report and
 * output, signals, stops; and the ways it must refuse. Prints TAP; run by
 * tests/integration/keeper.sh as root and rootless.
 *
 *   moat-keeper-drive MOAT check            the checks above
 *   moat-keeper-drive MOAT hold SECS        a keeper whose sandbox runs
 *                                           `sleep SECS`; prints "keeper PID
 *                                           ID SOCKET" and leaves it running
 *   moat-keeper-drive MOAT attack PROG DIR  a keeper whose sandbox sees DIR
 *                                           read-only runs PROG with the
 *                                           keeper's socket path in
 *                                           MOAT_KEEPER_SOCKET; prints its
 *                                           output, exits with its status
 *   moat-keeper-drive MOAT otheruid UID     (root) a keeper of root's; a
 *                                           process of UID tries its socket
 */
#include "keeper.h"

#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

static int n_test, n_fail;

static void ok(bool cond, const char *fmt, ...) _printf_(2, 3);
static void ok(bool cond, const char *fmt, ...)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - ", cond ? "" : "not ", n_test);
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void note(const moat_error *err)
{
	char buf[MOAT_ERROR_MAX + 64];
	printf("# %s\n", moat_error_format(err, buf, sizeof(buf)));
}

static const char *moat_bin;

/* A policy for the tests' sandboxes: the code profile's, living long
 * enough for the checks, with dir (or nothing) bound read-only. */
static char *policy(const char *dir, const char *extra)
{
	char *s = NULL;
	if (asprintf(&s,
		     "version: 1\nname: keeper-test\n"
		     "filesystem:\n  read_only: [%s]\n"
		     "limits: {wall: 300s, pids: 64, memory: 256M}\n%s",
		     dir ? dir : "", extra ? extra : "") < 0)
		abort();
	return s;
}

static int start(const char *yaml, moat_keeper_info *info, moat_error *err)
{
	/* The keeper's environment is empty but for a sanitizer's options,
	 * so that a sanitizer build's keeper reports where it is told to. */
	static char *envp[4];
	static bool made;
	const char *names[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
	for (size_t i = 0, n = 0; !made && i < 3; i++) {
		const char *v = getenv(names[i]);
		if (v && asprintf(&envp[n], "%s=%s", names[i], v) > 0)
			n++;
	}
	made = true;
	moat_keeper_start_opts o = {.exe = moat_bin, .envp = envp};
	return moat_keeper_start(yaml, &o, info, err);
}

/* Spawns argv with stdout (and stderr) into a pipe; *ret_out is its
 * read end. */
static int spawn_out(moat_keeper *k, char *const *argv, char *const *env, const char *cwd, int stdin_fd,
		     uint32_t *ret_id, int *ret_out, moat_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	moat_spawn_spec s;
	moat_spawn_spec_init(&s);
	s.argv = argv;
	s.env = env;
	s.cwd = cwd;
	s.stdin_fd = stdin_fd;
	s.stdout_fd = p[1];
	s.stderr_fd = p[1];
	moat_command cmd;
	int r = moat_keeper_spawn(k, &s, &cmd, err);
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		return r;
	}
	*ret_id = cmd.id;
	*ret_out = p[0];
	return 0;
}

static void read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
}

/* One raw packet to the keeper and its answer, for what the client side
 * would never send. */
static int raw(const char *path, const char *hello, const char *text, int passfd, moat_keeper_msg *ans)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	moat_error err = {0};
	int got[3];
	size_t n;
	if (hello) {
		if (send(fd, hello, strlen(hello), MSG_NOSIGNAL) < 0)
			return -errno;
		moat_keeper_msg_init(ans, _MOAT_KEEPER_MSG_INVALID);
		if (moat__keeper_recv(fd, ans, got, 3, &n, &err) < 0)
			return close(fd), -EPROTO;
		moat_keeper_msg_done(ans);
	}
	struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (passfd >= 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.b;
		msg.msg_controllen = sizeof(u.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &passfd, sizeof(int));
	}
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
		return close(fd), -errno;
	moat_keeper_msg_init(ans, _MOAT_KEEPER_MSG_INVALID);
	int r = moat__keeper_recv(fd, ans, got, 3, &n, &err);
	close(fd);
	return r;
}

static bool gone(pid_t pid)
{
	for (int i = 0; i < 400; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
		usleep(25000);
	}
	return false;
}

static int check(void)
{
	moat_error err = {0};
	moat_keeper_info info;
	_cleanup_free_ char *yaml = policy(NULL, NULL);
	int r = start(yaml, &info, &err);
	ok(r == 0 && info.pid > 0 && moat__keeper_id_valid(info.id), "start: a keeper serves a new sandbox");
	if (r < 0) {
		note(&err);
		return 1;
	}
	printf("# keeper %d sandbox %s socket %s\n", (int)info.pid, info.id, info.socket);
	ok(getppid() != info.pid && kill(info.pid, 0) == 0, "the keeper runs, apart from its creator");
	char want[PATH_MAX];
	ok(moat_keeper_socket_path(info.id, want, sizeof(want), &err) == 0 && strcmp(want, info.socket) == 0,
	   "its socket is where the id says");
	struct stat st, dst;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", info.socket);
	*strrchr(dir, '/') = '\0';
	ok(lstat(info.socket, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 077) == 0 &&
	   lstat(dir, &dst) == 0 && (dst.st_mode & 0777) == 0700 && dst.st_uid == geteuid(),
	   "socket 0600 in a folder 0700 of ours");

	_cleanup_keeper_ moat_keeper *k = NULL;
	r = moat_keeper_connect(info.socket, &k, &err);
	ok(r == 0 && strcmp(moat_keeper_sandbox_id(k), info.id) == 0 && moat_keeper_pid(k) == info.pid,
	   "connect: hello names the sandbox and the keeper");
	if (r < 0) {
		note(&err);
		return 1;
	}
	moat_keeper_msg st_msg;
	moat_keeper_msg_init(&st_msg, _MOAT_KEEPER_MSG_INVALID);
	r = moat_keeper_status(k, &st_msg, &err);
	ok(r == 0 && strcmp(st_msg.state, "running") == 0 && st_msg.n_commands == 0, "status: running, no command");
	moat_keeper_msg_done(&st_msg);

	/* One after another. */
	char out[4096];
	uint32_t id;
	int ofd;
	moat_keeper_exit ex;
	char *a1[] = {"/bin/sh", "-c", "echo one; exit 3", NULL};
	r = spawn_out(k, a1, NULL, NULL, -1, &id, &ofd, &err);
	ok(r == 0, "spawn a first command");
	if (r < 0)
		note(&err);
	else {
		r = moat_keeper_wait(k, id, &ex, &err);
		read_all(ofd, out, sizeof(out));
		ok(r == 0 && strcmp(ex.status, "exited") == 0 && ex.exit_code == 3 && ex.exit_status == 3,
		   "first command: exit status 3");
		ok(strcmp(out, "one\n") == 0, "first command: its output");
		/* A shell smaller than the init: rusage's peak would be the
		 * init's, carried over at execve, so none is claimed. */
		ok(ex.max_rss_bytes == 0, "first command: no memory peak claimed below the init's (max rss %llu)",
		   (unsigned long long)ex.max_rss_bytes);
		moat_keeper_exit again;
		ok(moat_keeper_wait(k, id, &again, &err) == 0 && again.exit_code == 3, "an ended command's report stays");
	}
	char *a2[] = {"/bin/sh", "-c", "echo \"$FOO\"; pwd", NULL};
	char *env[] = {"FOO=bar baz", NULL};
	r = spawn_out(k, a2, env, "/tmp", -1, &id, &ofd, &err);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	read_all(r == 0 ? ofd : -1, out, sizeof(out));
	ok(r == 0 && ex.exit_code == 0 && strcmp(out, "bar baz\n/tmp\n") == 0, "second command: its env and cwd");
	int in[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return 1;
	(void)!write(in[1], "piped\n", 6);
	close(in[1]);
	char *cat[] = {"/bin/cat", NULL};
	r = spawn_out(k, cat, NULL, NULL, in[0], &id, &ofd, &err);
	close(in[0]);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	read_all(r == 0 ? ofd : -1, out, sizeof(out));
	ok(r == 0 && ex.exit_code == 0 && strcmp(out, "piped\n") == 0, "stdin given as a descriptor");
	r = spawn_out(k, cat, NULL, NULL, -1, &id, &ofd, &err);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	read_all(r == 0 ? ofd : -1, out, sizeof(out));
	ok(r == 0 && ex.exit_code == 0 && out[0] == '\0', "no stdin given: /dev/null");
	char *a3[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
	r = spawn_out(k, a3, NULL, NULL, -1, &id, &ofd, &err);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	if (r == 0)
		close(ofd);
	ok(r == 0 && strcmp(ex.status, "signaled") == 0 && ex.signal == SIGTERM && ex.exit_status == 128 + SIGTERM,
	   "a command killed by a signal: signaled, 143");
	char *a4[] = {"/nonexistent/moat-command", NULL};
	r = spawn_out(k, a4, NULL, NULL, -1, &id, &ofd, &err);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	if (r == 0)
		close(ofd);
	else
		note(&err);
	ok(r == 0 && ex.exit_status == 127, "a command not found: 127");

	/* At once: A waits for what B makes, so both run together in one
	 * sandbox (its /tmp is shared); C is ended by a signal sent through
	 * the keeper while A and B run. */
	char *aa[] = {"/bin/sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.05; done; echo a", NULL};
	char *ab[] = {"/bin/sh", "-c", "sleep 0.2; touch /tmp/go; echo b", NULL};
	char *ac[] = {"/bin/sleep", "1000", NULL};
	uint32_t ia = 0, ib = 0, ic = 0;
	int fa = -1, fb = -1, fc = -1;
	r = spawn_out(k, aa, NULL, NULL, -1, &ia, &fa, &err);
	if (r == 0)
		r = spawn_out(k, ac, NULL, NULL, -1, &ic, &fc, &err);
	if (r == 0) {
		moat_keeper_msg_init(&st_msg, _MOAT_KEEPER_MSG_INVALID);
		r = moat_keeper_status(k, &st_msg, &err);
		ok(r == 0 && st_msg.n_commands == 2, "status: two commands live at once");
		moat_keeper_msg_done(&st_msg);
	}
	if (r == 0)
		r = spawn_out(k, ab, NULL, NULL, -1, &ib, &fb, &err);
	ok(r == 0 && ia != ib && ib != ic && ia != ic, "three commands spawned, each its own id");
	if (r < 0)
		note(&err);
	moat_keeper_exit ea, eb, ec;
	/* A second connection waits on B while this one waits on A. */
	_cleanup_keeper_ moat_keeper *k2 = NULL;
	r = r == 0 ? moat_keeper_connect(info.socket, &k2, &err) : r;
	if (r == 0)
		r = moat_keeper_wait(k2, ib, &eb, &err);
	if (r == 0)
		r = moat_keeper_wait(k, ia, &ea, &err);
	char oa[64] = "", ob[64] = "";
	read_all(fa >= 0 ? fa : -1, oa, sizeof(oa));
	read_all(fb >= 0 ? fb : -1, ob, sizeof(ob));
	ok(r == 0 && ea.exit_code == 0 && eb.exit_code == 0 && strcmp(oa, "a\n") == 0 && strcmp(ob, "b\n") == 0,
	   "two commands at once: each one's status and output");
	r = moat_keeper_signal(k, ic, SIGKILL, &err);
	ok(r == 0, "signal a live command through the keeper");
	r = moat_keeper_wait(k2, ic, &ec, &err);
	if (fc >= 0)
		close(fc);
	ok(r == 0 && strcmp(ec.status, "signaled") == 0 && ec.signal == SIGKILL && ec.exit_status == 137,
	   "the signalled command: signaled, 137");

	/* Refusals, each naming what is wrong. */
	r = moat_keeper_wait(k, 999999, &ex, &err);
	ok(r == -ESRCH && strstr(err.msg, "wait.id: no command 999999"), "wait on an unknown id: ESRCH, named");
	r = moat_keeper_signal(k, ic, SIGTERM, &err);
	ok(r == -ESRCH, "signal an ended command: ESRCH");
	moat_keeper_msg ans;
	const char *hello = "{\"type\":\"hello\",\"versions\":[1]}";
	r = raw(info.socket, hello, "{\"type\":\"spawn\",\"tag\":5,\"argv\":[\"/bin/true\"],\"stdio\":[true,false,false]}",
		-1, &ans);
	ok(r == 0 && ans.type == MOAT_KEEPER_ERROR && ans.tag == 5 && ans.message &&
	   strcmp(ans.message, "spawn.stdio: says 1 descriptors, 0 came along") == 0,
	   "a spawn whose descriptors do not match stdio: refused, named");
	moat_keeper_msg_done(&ans);
	r = raw(info.socket, hello, "{\"type\":\"spawn\",\"tag\":6,\"argv\":[\"/bin/true\",7]}", -1, &ans);
	ok(r == 0 && ans.type == MOAT_KEEPER_ERROR && ans.message && strcmp(ans.message, "spawn.argv[1]: not a string") == 0,
	   "a malformed request: refused, the field named");
	moat_keeper_msg_done(&ans);
	r = raw(info.socket, NULL, "{\"type\":\"status\",\"tag\":1}", -1, &ans);
	ok(r == 0 && ans.type == MOAT_KEEPER_ERROR && ans.message && strcmp(ans.message, "status: hello comes first") == 0,
	   "a request before hello: refused");
	moat_keeper_msg_done(&ans);
	r = raw(info.socket, NULL, "{\"type\":\"hello\",\"versions\":[99]}", -1, &ans);
	ok(r == 0 && ans.type == MOAT_KEEPER_ERROR && ans.message && strstr(ans.message, "hello.versions: none"),
	   "a hello of versions the keeper does not speak: refused");
	moat_keeper_msg_done(&ans);

	/* Stop: every process goes, then the keeper and its folder. */
	r = moat_keeper_stop(k, &err);
	ok(r == 0, "stop");
	ok(gone(info.pid), "after stop the keeper exits");
	ok(lstat(dir, &dst) < 0 && errno == ENOENT, "and its runtime directory is gone");

	/* A keeper that cannot create its sandbox says why. */
	_cleanup_free_ char *bad = policy("/nonexistent-moat-keeper-dir", NULL);
	r = start(bad, &info, &err);
	note(&err);
	ok(r < 0 && strstr(err.msg, "/nonexistent-moat-keeper-dir"), "a setup error comes back with its reason");
	return n_fail ? 1 : 0;
}

static int hold(const char *secs)
{
	moat_error err = {0};
	moat_keeper_info info;
	_cleanup_free_ char *yaml = policy(NULL, NULL);
	if (start(yaml, &info, &err) < 0) {
		note(&err);
		return 1;
	}
	_cleanup_keeper_ moat_keeper *k = NULL;
	moat_command cmd;
	moat_spawn_spec s;
	moat_spawn_spec_init(&s);
	char *argv[] = {"/bin/sleep", (char *)secs, NULL};
	s.argv = argv;
	if (moat_keeper_connect(info.socket, &k, &err) < 0 || moat_keeper_spawn(k, &s, &cmd, &err) < 0 ||
	    moat_keeper_spawn(k, &s, &cmd, &err) < 0) {
		note(&err);
		return 1;
	}
	printf("keeper %d %s %s\n", (int)info.pid, info.id, info.socket);
	return 0;
}

static int attack(const char *prog, const char *dir)
{
	moat_error err = {0};
	moat_keeper_info info;
	_cleanup_free_ char *yaml = policy(dir, NULL);
	if (start(yaml, &info, &err) < 0) {
		note(&err);
		return 2;
	}
	_cleanup_keeper_ moat_keeper *k = NULL;
	char envv[PATH_MAX + 32];
	snprintf(envv, sizeof(envv), "MOAT_KEEPER_SOCKET=%s", info.socket);
	char *env[] = {envv, NULL};
	char *argv[] = {(char *)prog, NULL};
	uint32_t id;
	int ofd;
	moat_keeper_exit ex;
	int r = moat_keeper_connect(info.socket, &k, &err);
	if (r == 0)
		r = spawn_out(k, argv, env, NULL, -1, &id, &ofd, &err);
	if (r == 0)
		r = moat_keeper_wait(k, id, &ex, &err);
	char out[4096] = "";
	if (r == 0)
		read_all(ofd, out, sizeof(out));
	fputs(out, stdout);
	if (r < 0)
		note(&err);
	if (k)
		(void)moat_keeper_stop(k, &err);
	gone(info.pid);
	return r < 0 ? 2 : ex.exit_status;
}

/* Becomes uid (from root), keeping in its effective set only the
 * capabilities in keep (a mask of CAP_* bits, 0: none). */
static int become(uid_t uid, uint64_t keep)
{
	if (prctl(PR_SET_KEEPCAPS, 1) < 0 || setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0)
		return -1;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (uint32_t)keep;
	data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -1;
	/* Changing uid made us undumpable, which closes our own
	 * /proc/self/fd to us: reopened, so that the descriptor path is
	 * tried for real. */
	return prctl(PR_SET_DUMPABLE, 1);
}

/* As root: a keeper of root's, and processes of uid at its socket: by its
 * path and through a descriptor opened before root was dropped (the
 * folder's mode then no longer stands in the way); and one that keeps
 * CAP_DAC_OVERRIDE, for which no file mode stands in the way, so that only
 * the keeper's own check of its peer (SO_PEERCRED) is left. */
static int otheruid(const char *uid_s)
{
	uid_t uid = (uid_t)atoi(uid_s);
	moat_error err = {0};
	moat_keeper_info info;
	char log[] = "/tmp/moat-keeper-audit.XXXXXX";
	int lfd = mkstemp(log);
	if (lfd < 0)
		return 1;
	close(lfd);
	unlink(log);
	char extra[128];
	snprintf(extra, sizeof(extra), "audit:\n  log: %s\n", log);
	_cleanup_free_ char *yaml = policy(NULL, extra);
	if (start(yaml, &info, &err) < 0) {
		note(&err);
		return 1;
	}
	int opath = open(info.socket, O_PATH | O_CLOEXEC);
	ok(opath >= 0, "root opens the socket's inode (O_PATH)");
	for (int dac = 0; dac < 2; dac++) {
		pid_t pid = fork();
		if (pid == 0) {
			if (become(uid, dac ? (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) : 0) < 0)
				_exit(3);
			moat_keeper *k = NULL;
			moat_error e2 = {0};
			char buf[MOAT_ERROR_MAX + 64];
			int by_path = moat_keeper_connect(info.socket, &k, &e2);
			printf("# by path: %s\n", moat_error_format(&e2, buf, sizeof(buf)));
			char via[64];
			snprintf(via, sizeof(via), "/proc/self/fd/%d", opath);
			int by_fd = moat_keeper_connect(via, &k, &e2);
			printf("# through the descriptor: %s\n", moat_error_format(&e2, buf, sizeof(buf)));
			fflush(stdout);
			_exit(by_path == 0 || by_fd == 0 ? 1 : 0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		if (dac)
			ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			   "uid %u with CAP_DAC_OVERRIDE reaches the socket and is refused by the keeper", (unsigned)uid);
		else
			ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "uid %u cannot use the keeper's socket", (unsigned)uid);
	}
	_cleanup_keeper_ moat_keeper *k = NULL;
	int r = moat_keeper_connect(info.socket, &k, &err);
	ok(r == 0, "the keeper still serves its own user");
	if (r == 0)
		(void)moat_keeper_stop(k, &err);
	ok(gone(info.pid), "stopped");
	/* Every refusal is in the sandbox's audit log, by uid. */
	char text[65536] = "";
	int fd = open(log, O_RDONLY | O_CLOEXEC);
	read_all(fd, text, sizeof(text));
	char want[64];
	snprintf(want, sizeof(want), "\"uid\":%u", (unsigned)uid);
	const char *ev = strstr(text, "\"keeper.refused\"");
	const char *nl = ev ? strchr(ev, '\n') : NULL;
	const char *u = ev ? strstr(ev, want) : NULL;
	ok(ev && u && (!nl || u < nl), "the refusal is audited with the peer's uid");
	if (!ev)
		printf("# audit log:\n%s\n", text);
	unlink(log);
	return n_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: moat-keeper-drive MOAT check|hold SECS|attack PROG DIR|otheruid UID\n");
		return 2;
	}
	moat_bin = argv[1];
	if (strcmp(argv[2], "check") == 0)
		return check();
	if (strcmp(argv[2], "hold") == 0 && argc == 4)
		return hold(argv[3]);
	if (strcmp(argv[2], "attack") == 0 && argc == 5)
		return attack(argv[3], argv[4]);
	if (strcmp(argv[2], "otheruid") == 0 && argc == 4)
		return otheruid(argv[3]);
	fprintf(stderr, "moat-keeper-drive: unknown use\n");
	return 2;
}
