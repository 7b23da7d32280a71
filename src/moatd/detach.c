/* Detached execs (POST /v1/sessions/{id}/exec?wait=false): a command in a
 * session that outlives its client and moatd itself.
 *
 * Each one is a folder in moatd's state (execs/ID: meta.json, stdout,
 * stderr, result.json, status.json, lock) and a small watcher process that
 * is moatd's grandchild, in a session of its own: it holds the folder's
 * lock, runs `moat session exec --result` with the command's output going
 * to the two files, and writes status.json when that ends. moatd only
 * reads the folder, so a moatd restarted after SIGKILL answers for execs a
 * previous moatd started as if it had started them itself: while the lock
 * is held the exec runs; once status.json is there it has ended; a folder
 * with neither lost its watcher (killed) and says so. */
#include "server.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syscalls.h"
#include "util.h"

bool moatd_exec_id_valid(const char *s)
{
	if (strlen(s) != MOATD_EXEC_ID_LEN)
		return false;
	return strspn(s, "0123456789abcdef") == MOATD_EXEC_ID_LEN;
}

/* The watcher: runs moat with its streams on the exec's files, then
 * records how it ended. Never returns. */
_noreturn_ static void watch(const moatd_detached_spec *sp, const char *dir, int in, int out, int errf, int lock)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	/* Away from moatd's session and process group: a signal meant for
	 * moatd (a terminal's ^C, systemd's stop) is not meant for this. */
	setsid();
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errf, 2) < 0 || dup2(lock, 3) < 0)
		_exit(125);
	/* Nothing else of moatd's stays open here: not its listening socket
	 * (a restarted moatd must be able to take it back), not a client's
	 * connection. */
	moat__close_range(4, ~0U, 0);
	fcntl(3, F_SETFD, FD_CLOEXEC);
	pid_t pid = fork();
	if (pid == 0) {
		/* The output files are capped like a run's: writes past the
		 * cap fail (EFBIG) and the relay drops them; the command goes
		 * on. The result.json, written last, is small. */
		struct rlimit rl = {.rlim_cur = sp->output_cap + 4096, .rlim_max = sp->output_cap + 4096};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		execv(sp->moat, sp->argv);
		dprintf(2, "moat: cannot run %s: %s\n", sp->moat, strerror(errno));
		_exit(125);
	}
	int st = 0;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	int code = pid < 0 ? 125 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	char p[PATH_MAX], tmp[PATH_MAX];
	snprintf(p, sizeof(p), "%s/status.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/status.json.tmp", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dprintf(fd, "{\"exit_code\":%d,\"ended\":%lld}\n", code, (long long)time(NULL));
		close(fd);
		rename(tmp, p);
	}
	_exit(0);
}

int moatd_detached_new_id(char ret[MOATD_EXEC_ID_LEN + 1])
{
	return moat__random_hex(MOATD_EXEC_ID_LEN / 2, ret);
}

int moatd_detached_start(const moatd_detached_spec *sp, const char *id, moat_error *err)
{
	char dir[PATH_MAX], p[PATH_MAX];
	if (!moatd_exec_id_valid(id))
		return moat_error_set(err, EINVAL, "exec id %s", id);
	snprintf(dir, sizeof(dir), "%s/execs/%s", sp->state, id);
	if (mkdir(dir, 0700) < 0)
		return moat_error_set(err, errno, "exec folder %s", dir);
	json_t *meta = json_pack("{s:s, s:s, s:s, s:I}", "id", id, "session", sp->session, "owner", sp->owner,
				 "started", (json_int_t)time(NULL));
	json_t *av = json_array();
	for (size_t i = 0; sp->command && sp->command[i]; i++)
		json_array_append_new(av, json_string(sp->command[i]));
	json_object_set_new(meta, "argv", av);
	snprintf(p, sizeof(p), "%s/meta.json", dir);
	int r = meta ? json_dump_file(meta, p, JSON_COMPACT) : -1;
	json_decref(meta);
	if (r < 0)
		return moat_error_set(err, EIO, "exec record %s", p);
	_cleanup_close_ int in = -1, out = -1, errf = -1, lock = -1;
	if (sp->stdin_data) {
		in = memfd_create("moatd-stdin", MFD_CLOEXEC);
		if (in >= 0 && (moat__write_all(in, sp->stdin_data, sp->stdin_len) < 0 || lseek(in, 0, SEEK_SET) < 0))
			return moat_error_set(err, EIO, "exec stdin");
	} else
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/stdout", dir);
	out = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	snprintf(p, sizeof(p), "%s/stderr", dir);
	errf = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	snprintf(p, sizeof(p), "%s/lock", dir);
	lock = open(p, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* Locked here, before the fork: the watcher inherits the lock, so
	 * there is no moment at which the exec looks ended before it began. */
	if (in < 0 || out < 0 || errf < 0 || lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0)
		return moat_error_set(err, errno, "exec files in %s", dir);
	/* Two forks: the watcher's parent exits at once and is reaped here,
	 * so the watcher belongs to no moatd and none has to wait for it. */
	pid_t mid = fork();
	if (mid < 0)
		return moat_error_set(err, errno, "fork");
	if (mid == 0) {
		pid_t w = fork();
		if (w == 0)
			watch(sp, dir, in, out, errf, lock);
		_exit(w < 0 ? 1 : 0);
	}
	int st = 0;
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return moat_error_set(err, EAGAIN, "exec: cannot start its watcher");
	return 0;
}

/* The first cap bytes of a file in the exec's folder, as a JSON value. */
static void set_output(json_t *o, int dfd, const char *name, uint64_t cap)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	size_t n = (uint64_t)st.st_size < cap ? (size_t)st.st_size : (size_t)cap;
	_cleanup_free_ char *buf = malloc(n + 1);
	if (!buf)
		return;
	ssize_t got = moat__read_all(fd, buf, n);
	if (got < 0)
		return;
	char k[32], kb[32], kt[32];
	snprintf(k, sizeof(k), "%s", name);
	snprintf(kb, sizeof(kb), "%s_base64", name);
	snprintf(kt, sizeof(kt), "%s_truncated", name);
	moatd_json_set_bytes(o, k, kb, buf, (size_t)got);
	json_object_set_new(o, kt, json_boolean((uint64_t)st.st_size > cap));
}

static json_t *load_json_at(int dfd, const char *name)
{
	_cleanup_free_ char *t = NULL;
	if (moat__read_file_at(dfd, name, 1u << 20, &t) < 0 || !t)
		return NULL;
	return json_loads(t, 0, NULL);
}

int moatd_detached_status(const char *state, const char *id, uint64_t output_cap, json_t **ret, moat_error *err)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/execs/%s", state, id);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(err, ENOENT, "exec %s: no such exec", id);
	json_t *o = load_json_at(dfd, "meta.json");
	if (!json_is_object(o)) {
		json_decref(o);
		return moat_error_set(err, ENOENT, "exec %s: no such exec", id);
	}
	json_t *status = load_json_at(dfd, "status.json");
	_cleanup_close_ int lock = openat(dfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool held = lock >= 0 && flock(lock, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	const char *state_s = status ? "exited" : held ? "running" : "lost";
	json_object_set_new(o, "state", json_string(state_s));
	json_t *code = json_object_get(status, "exit_code");
	json_object_set_new(o, "exit_code", json_is_integer(code) ? json_incref(code) : json_null());
	json_t *res = status ? load_json_at(dfd, "result.json") : NULL;
	json_object_set_new(o, "result", json_is_object(res) ? res : json_null());
	if (res && !json_is_object(res))
		json_decref(res);
	json_decref(status);
	set_output(o, dfd, "stdout", output_cap);
	set_output(o, dfd, "stderr", output_cap);
	*ret = o;
	return 0;
}

void moatd_detached_forget(const char *state, const char *session)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/execs", state);
	DIR *d = opendir(p);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!moatd_exec_id_valid(e->d_name))
			continue;
		_cleanup_close_ int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		json_t *m = dfd >= 0 ? load_json_at(dfd, "meta.json") : NULL;
		const char *s = json_string_value(json_object_get(m, "session"));
		bool mine = s && strcmp(s, session) == 0;
		json_decref(m);
		_cleanup_close_ int lock = mine ? openat(dfd, "lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
		/* One whose watcher still runs is left to it. */
		if (!mine || (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0))
			continue;
		static const char *const files[] = {"meta.json", "stdout", "stderr", "result.json", "status.json",
						    "status.json.tmp", "charged", "lock"};
		for (size_t i = 0; i < ELEMENTSOF(files); i++)
			unlinkat(dfd, files[i], 0);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
}
