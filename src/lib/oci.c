/* The OCI runtime: container state, the keeper of one container, and the
 * commands that drive it (oci.h). */
#include "oci.h"
#include "audit.h"
#include "cgroup.h"
#include "egress.h"
#include "oci-netns.h"
#include "oci-seccomp.h"
#include "oci-spec.h"
#include "policy.h"
#include "sandbox.h"
#include "sandbox-internal.h"
#include "syscalls.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <linux/nsfs.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#define STATE_FILE "state.json"
#define INIT_PID_FILE "init.pid" /* the sandbox's init, for a pod (join_resolve) */
#define MSG_MAX 65536
#define MAX_EXECS 32

static void jsonp(json_t **j)
{
	json_decref(*j);
}
#define _cleanup_json_ _cleanup_(jsonp)

bool moat_oci_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > MOAT_OCI_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '_' && c != '-' && c != '.' && c != '+')))
			return false;
	}
	return true;
}

int moat_oci_signal_from_string(const char *s)
{
	if (!s || !*s)
		return -1;
	if (s[0] >= '0' && s[0] <= '9') {
		char *end = NULL;
		long v = strtol(s, &end, 10);
		return *end || v <= 0 || v >= NSIG ? -1 : (int)v;
	}
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && strcmp(abbrev, s) == 0)
			return i;
	}
	return -1;
}

int moat_oci_default_root(char *ret, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	/* Root of a user namespace (rootless podman runs its runtime as
	 * such) cannot write /run: its runtime folder is the user's. */
	bool host_root = moat__userns_host_root();
	if (host_root || !xdg || xdg[0] != '/')
		n = snprintf(ret, len, "%s", host_root ? MOAT_OCI_DEFAULT_ROOT : "/tmp/moat-oci");
	else
		n = snprintf(ret, len, "%s/moat-oci", xdg);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- the state folder ---- */

/* Opens root, making it (and missing parents) with mode 0700. */
static int root_open(const char *root, bool create, moat_error *err)
{
	if (!root || root[0] != '/' || strlen(root) >= PATH_MAX)
		return moat_error_set(err, MOAT_EINPUT, "--root: %s: expected an absolute path", root ? root : "");
	if (create) {
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s", root);
		for (char *s = p + 1;; s++) {
			if (*s == '/' || *s == '\0') {
				char c = *s;
				*s = '\0';
				if (mkdir(p, 0700) < 0 && errno != EEXIST)
					return moat_error_set(err, errno, "--root: make %s", p);
				*s = c;
				if (!c)
					break;
			}
		}
	}
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "--root: open %s", root);
	return fd;
}

/* Opens ROOT/ID and takes its lock (released when *ret_lock closes). */
static int container_open(const char *root, const char *id, int *ret_lock, moat_error *err)
{
	if (!moat_oci_id_valid(id))
		return moat_error_set(err, MOAT_EINPUT, "container id \"%.64s\" is not valid (letters, digits, '_', '-', "
							"'.', '+', at most %d)",
				      id ? id : "", MOAT_OCI_ID_MAX);
	_cleanup_close_ int rootfd = root_open(root, false, err);
	if (rootfd < 0)
		return rootfd == -ENOENT ? moat_error_set(err, MOAT_EINPUT, "container %s does not exist", id) : rootfd;
	_cleanup_close_ int dfd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? moat_error_set(err, MOAT_EINPUT, "container %s does not exist", id)
				       : moat_error_set(err, errno, "container %s", id);
	_cleanup_close_ int lock = openat(dfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0)
		return moat_error_set(err, errno, "container %s: lock", id);
	while (flock(lock, LOCK_EX) < 0)
		if (errno != EINTR)
			return moat_error_set(err, errno, "container %s: lock", id);
	*ret_lock = TAKE_FD(lock);
	return TAKE_FD(dfd);
}

/* Whether the container's keeper lives: it holds keeper.lock for its
 * whole life. */
static bool keeper_alive(int dfd)
{
	_cleanup_close_ int fd = openat(dfd, "keeper.lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	return false;
}

/* Waits until the keeper has gone (its lock is free). */
static void keeper_wait_gone(int dfd)
{
	_cleanup_close_ int fd = openat(dfd, "keeper.lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
		;
}

/* Whether the keeper has gone within ms milliseconds. */
static bool keeper_gone_within(int dfd, int ms)
{
	for (int waited = 0; keeper_alive(dfd); waited += 10) {
		if (waited >= ms)
			return false;
		(void)nanosleep(&(struct timespec){.tv_nsec = 10 * 1000000}, NULL);
	}
	return true;
}

static int state_read(int dfd, json_t **ret, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r = moat__read_file_at(dfd, STATE_FILE, MSG_MAX, &text);
	if (r < 0)
		return moat_error_set(err, r, "read the container's state");
	json_t *j = json_loads(text, 0, NULL);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return moat_error_set(err, EIO, "the container's state is damaged");
	}
	/* A keeper that died (killed, or its container ended) leaves its
	 * last word; whatever it said, the container is stopped now. */
	if (!keeper_alive(dfd))
		json_object_set_new(j, "status", json_string("stopped"));
	*ret = j;
	return 0;
}

static int state_write(int dfd, json_t *state, moat_error *err)
{
	_cleanup_free_ char *text = json_dumps(state, JSON_COMPACT);
	if (!text)
		return moat_error_set(err, ENOMEM, "state");
	int r = moat__write_file_at(dfd, STATE_FILE ".tmp", text, 0600);
	if (r < 0)
		return moat_error_set(err, r, "write the container's state");
	if (renameat(dfd, STATE_FILE ".tmp", dfd, STATE_FILE) < 0)
		return moat_error_set(err, errno, "write the container's state");
	return 0;
}

static void container_remove(int rootfd, const char *id, int dfd)
{
	static const char *const files[] = {STATE_FILE, STATE_FILE ".tmp", "ctl", "keeper.lock", "lock", INIT_PID_FILE};
	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		(void)unlinkat(dfd, files[i], 0);
	(void)unlinkat(rootfd, id, AT_REMOVEDIR);
}

/* ---- the keeper's socket ---- */

/* sun_path holds 108 bytes and a runtime root can be deeper than that:
 * every socket is reached through its folder's descriptor. */
static int sock_addr(int dfd, const char *name, struct sockaddr_un *sa, moat_error *err)
{
	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dfd, name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return moat_error_set(err, ENAMETOOLONG, "socket %s", name);
	return 0;
}

static int send_msg(int fd, const char *text, const int *fds, size_t n_fds)
{
	struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n_fds) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t r;
	do
		r = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r < 0 ? moat__neg_errno() : 0;
}

/* Receives one message (NUL-terminated into buf) and up to 4 fds (the
 * rest -1). Returns its length, 0 at the end of the connection. */
static ssize_t recv_msg(int fd, char *buf, size_t len, int fds[4])
{
	for (int i = 0; i < 4; i++)
		fds[i] = -1;
	struct iovec iov = {.iov_base = buf, .iov_len = len - 1};
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t r;
	do
		r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return moat__neg_errno();
	buf[r] = '\0';
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int got[4];
		memcpy(got, CMSG_DATA(c), sizeof(int) * (n < 4 ? n : 4));
		for (size_t i = 0; i < n && i < 4; i++)
			fds[i] = got[i];
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (int i = 0; i < 4; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return -EMSGSIZE;
	}
	return r;
}

static int keeper_connect(int dfd, const char *id, moat_error *err)
{
	struct sockaddr_un sa;
	int r = sock_addr(dfd, "ctl", &sa, err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return moat_error_set(err, errno, "container %s: socket", id);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno, "container %s: reach its keeper", id);
	return TAKE_FD(fd);
}

/* Sends one request and reads the reply: "ok[ REST]" -> 0 with REST in
 * ret (may be NULL), "err MESSAGE" -> the message as the error. */
static int keeper_call(int fd, const char *id, const char *req, const int *fds, size_t n_fds, char *ret, size_t len,
		       int *ret_fd, moat_error *err)
{
	int r = send_msg(fd, req, fds, n_fds);
	if (r < 0)
		return moat_error_set(err, r, "container %s: talk to its keeper", id);
	char buf[1024];
	int got[4];
	ssize_t n = recv_msg(fd, buf, sizeof(buf), got);
	if (n <= 0)
		return moat_error_set(err, n < 0 ? (int)n : EPIPE, "container %s: its keeper did not answer", id);
	for (int i = ret_fd ? 1 : 0; i < 4; i++)
		if (got[i] >= 0)
			close(got[i]);
	if (strncmp(buf, "err ", 4) == 0) {
		if (ret_fd && got[0] >= 0)
			close(got[0]);
		return moat_error_set(err, MOAT_EINPUT, "%s", buf + 4);
	}
	if (strncmp(buf, "ok", 2) != 0) {
		if (ret_fd && got[0] >= 0)
			close(got[0]);
		return moat_error_set(err, EPROTO, "container %s: its keeper said \"%.64s\"", id, buf);
	}
	if (ret)
		snprintf(ret, len, "%s", buf[2] == ' ' ? buf + 3 : "");
	if (ret_fd)
		*ret_fd = got[0];
	return 0;
}

/* Sends a pty master to a console socket, as runc does: the message is
 * the terminal's name, the descriptor rides along. */
static int console_send(const char *path, int master, moat_error *err)
{
	_cleanup_free_ char *dir = strdup(path);
	if (!dir)
		return moat_error_set(err, ENOMEM, "--console-socket");
	char *slash = strrchr(dir, '/');
	const char *name = path;
	_cleanup_close_ int dfd = -1;
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		dfd = open(slash == dir ? "/" : dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return moat_error_set(err, errno, "--console-socket %s", path);
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = dfd >= 0 ? snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, name)
			 : snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return moat_error_set(err, ENAMETOOLONG, "--console-socket %s", path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return moat_error_set(err, errno, "--console-socket %s: connect", path);
	int r = send_msg(fd, "/dev/pts/0", &master, 1);
	return r < 0 ? moat_error_set(err, r, "--console-socket %s: send the terminal", path) : 0;
}

/* ---- building the sandbox from the bundle ---- */

static int read_config(const char *bundle, char **ret, size_t *ret_len, moat_error *err)
{
	_cleanup_close_ int bfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return moat_error_set(err, errno, "bundle %s", bundle);
	char *text = NULL;
	int r = moat__read_file_at(bfd, "config.json", MOAT_OCI_MAX_CONFIG_BYTES, &text);
	if (r < 0)
		return moat_error_set(err, r, "bundle %s: read config.json", bundle);
	*ret_len = strlen(text);
	*ret = text;
	return 0;
}

/* Mounts moat makes itself whatever the spec says: proc, the /dev tree,
 * sysfs (moat shows none), cgroup and mqueue. */
static bool mount_is_moats(const moat_oci_mount *m)
{
	return moat_path_is_reserved_target(m->destination) ||
	       (m->type && (strcmp(m->type, "proc") == 0 || strcmp(m->type, "sysfs") == 0 ||
			    strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0 ||
			    strcmp(m->type, "mqueue") == 0 || strcmp(m->type, "devpts") == 0));
}

/* A spec's mount of what moat mounts itself: /dev/shm (a tmpfs of its
 * own, with the spec's size capped as every tmpfs's) and /dev/mqueue
 * (the ipc namespace's queues) are made as asked; of /proc, /dev,
 * /dev/pts, /dev/shm and /dev/mqueue the source name the spec gives is
 * the one mountinfo shows (a label only: none of these file systems
 * reads it). Anything else of moat's is moat's as it is. */
static int own_mount(const moat_oci_mount *m, const moat_policy *p, const char *field, moat_config *c,
		     moat_error *err)
{
	static const struct {
		const char *dst, *type;
		moat_own_fs fs;
	} own[] = {
		{"/proc", "proc", MOAT_FS_PROC},	  {"/dev", "tmpfs", MOAT_FS_DEV},
		{"/dev/pts", "devpts", MOAT_FS_DEVPTS},	  {"/dev/shm", "tmpfs", MOAT_FS_SHM},
		{"/dev/mqueue", "mqueue", MOAT_FS_MQUEUE},
	};
	size_t k = 0;
	while (k < ELEMENTSOF(own) && !(strcmp(m->destination, own[k].dst) == 0 && m->type &&
					strcmp(m->type, own[k].type) == 0 && !m->bind))
		k++;
	if (k == ELEMENTSOF(own))
		return 0;
	if (own[k].fs == MOAT_FS_SHM) {
		uint64_t cap = p->limits.tmp_bytes != MOAT_UNLIMITED && p->limits.tmp_bytes < MOAT_OCI_MAX_TMPFS
				       ? p->limits.tmp_bytes
				       : MOAT_OCI_MAX_TMPFS;
		_cleanup_free_ moat_tmpfs_mount *t = calloc(1, sizeof(*t));
		if (!t)
			return moat_error_set(err, ENOMEM, "%s", field);
		int r = moat_oci_tmpfs_options(m, cap, field, t, err);
		if (r < 0)
			return r;
		if (c->dev_shm) {
			free(c->dev_shm->dst);
			free(c->dev_shm);
		}
		c->dev_shm = TAKE_PTR(t);
	} else if (own[k].fs == MOAT_FS_MQUEUE) {
		c->dev_mqueue = true;
	}
	const char *src = m->source ? m->source : "";
	size_t n = strlen(src);
	bool plain = n < sizeof(c->fs_source[0]);
	for (size_t i = 0; plain && i < n; i++)
		plain = (src[i] >= 'a' && src[i] <= 'z') || (src[i] >= 'A' && src[i] <= 'Z') ||
			(src[i] >= '0' && src[i] <= '9') || src[i] == '-' || src[i] == '_' || src[i] == '.';
	if (!plain)
		return moat_error_set(err, MOAT_EINPUT,
				      "%s.source: \"%.64s\" is not a plain name (letters, digits, '-', '_', '.', at most "
				      "%zu)",
				      field, src, sizeof(c->fs_source[0]) - 1);
	memcpy(c->fs_source[own[k].fs], src, n + 1);
	return 0;
}

/* Makes mount point path (absolute inside) in the bundle's root, as the
 * runtime's user, before the sandbox exists: the sandbox's init may not
 * write a root-owned image. Each component is opened beneath the root
 * without following any link: an image may plant links to send a mount
 * point, and what is made there, onto the host (runc CVE-2021-30465). */
static int rootfs_mkpoint(int rootfd, const char *path, bool is_dir, const char *field, moat_error *err)
{
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return moat_error_set(err, ENOMEM, "%s", field);
	_cleanup_close_ int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return moat_error_set(err, errno, "%s", field);
	char *save = NULL;
	for (char *comp = strtok_r(copy, "/", &save); comp;) {
		char *next = strtok_r(NULL, "/", &save);
		const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		int fd = moat__openat2(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, resolve);
		if (fd < 0 && errno == ENOENT) {
			if (!next && !is_dir) {
				int f = openat(cur, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
				if (f >= 0) {
					(void)fchmod(f, 0644); /* whatever the umask */
					close(f);
				}
			} else if (mkdirat(cur, comp, 0755) == 0 && fchmodat(cur, comp, 0755, 0) < 0) {
				return moat_error_set(err, errno, "%s: make %s in the container's root", field, path);
			}
			fd = moat__openat2(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, resolve);
		}
		if (fd < 0 && errno == ELOOP)
			return moat_error_set(err, MOAT_EINPUT,
					      "%s: %s in the container's root goes through a symbolic link; refused", field,
					      path);
		if (fd < 0)
			return moat_error_set(err, errno, "%s: make %s in the container's root", field, path);
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
			close(fd);
			return moat_error_set(err, MOAT_EINPUT,
					      "%s: %s in the container's root goes through a symbolic link; refused", field,
					      path);
		}
		if (fstat(fd, &st) < 0 || (next && !S_ISDIR(st.st_mode))) {
			close(fd);
			return moat_error_set(err, MOAT_EINPUT, "%s: %s in the container's root is not a folder path",
					      field, path);
		}
		close(cur);
		cur = fd;
		comp = next;
	}
	return 0;
}

/* A bind's source relative to the bundle stays beneath it: a link in the
 * bundle (or in the image, for a source in its root) that leads out is
 * refused rather than followed to the host. Returns the source's real
 * path. */
static int bundle_source(const char *bundle, const char *src, const char *field, char **ret, moat_error *err)
{
	_cleanup_close_ int bfd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return moat_error_set(err, errno, "bundle %s", bundle);
	_cleanup_close_ int fd =
		moat__openat2(bfd, src, O_PATH | O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
	if (fd < 0 && errno == EXDEV)
		return moat_error_set(err, MOAT_EINPUT, "%s.source: %s leads out of the bundle; refused", field, src);
	if (fd < 0)
		return moat_error_set(err, errno, "%s.source: %s", field, src);
	char proc[64], real[PATH_MAX];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, real, sizeof(real) - 1);
	if (n <= 0)
		return moat_error_set(err, errno, "%s.source: %s", field, src);
	real[n] = '\0';
	*ret = strdup(real);
	return *ret ? 0 : moat_error_set(err, ENOMEM, "%s", field);
}

/* The effective policy (the annotation's, else the code profile) narrowed
 * by the spec, and the run specification compiled from it. */
static int build(const moat_oci_spec *s, const char *bundle, moat_policy **ret_p, moat_config **ret_c,
		 moat_error *err)
{
	const char *profile = NULL, *path = NULL;
	if (s->policy && s->policy[0] == '/')
		path = s->policy;
	else
		profile = s->policy ? s->policy : "code";
	_cleanup_policy_ moat_policy *p = NULL;
	int r = moat_policy_load_base(profile, path, &p, err);
	if (r < 0)
		return moat_error_wrap(err, "annotations.%s", MOAT_OCI_ANNOTATION_POLICY);
	/* A container lives until it is stopped: the runner's wall, CPU time
	 * and output defaults do not apply unless the policy set them (the
	 * memory, pids and /tmp defaults do, narrowed by the spec). */
	if (!(p->limits_set & MOAT_LIMIT_WALL))
		p->limits.wall_ms = MOAT_UNLIMITED;
	if (!(p->limits_set & MOAT_LIMIT_CPU_TIME))
		p->limits.cpu_ms = MOAT_UNLIMITED;
	if (!(p->limits_set & MOAT_LIMIT_OUTPUT))
		p->limits.output_bytes = MOAT_UNLIMITED;
	/* Nor the runner's open-files default: process.rlimits (set in the
	 * keeper, only lowered) says what a container may open. */
	if (!(p->limits_set & MOAT_LIMIT_FILES))
		p->limits.files = MOAT_UNLIMITED;
	moat_oci_spec_narrow_limits(s, &p->limits);
	if (s->audit_path) {
		free(p->audit_log);
		if (!(p->audit_log = strdup(s->audit_path)))
			return moat_error_set(err, ENOMEM, "audit");
	}
	if (s->hostname) {
		free(p->hostname);
		if (!(p->hostname = strdup(s->hostname)))
			return moat_error_set(err, ENOMEM, "hostname");
	}
	_cleanup_config_ moat_config *c = NULL;
	if ((r = moat_policy_compile(p, NULL, &c, err)) < 0)
		return r;
	if (!(c->rootfs = strdup(s->root_path)))
		return moat_error_set(err, ENOMEM, "root.path");
	c->rootfs_writable = !s->root_readonly;
	/* process.user names the ids of moat's one mapped user: whatever
	 * they read inside, they are the one unprivileged host id, with no
	 * capability (oci-spec.h). */
	c->sandbox_uid = s->uid;
	c->sandbox_gid = s->gid;
	if (s->seccomp && (r = moat__oci_seccomp_compile(s->seccomp, &c->seccomp_extra, &c->seccomp_extra_len, err)) < 0)
		return r;
	_cleanup_close_ int rootfd = open(s->root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return moat_error_set(err, errno, "root.path: %s", s->root_path);
	/* moat's own mounts over the image. */
	static const char *const points[] = {"/proc", "/dev", "/sys", "/tmp"};
	for (size_t i = 0; i < ELEMENTSOF(points); i++)
		if ((r = rootfs_mkpoint(rootfd, points[i], true, "root.path", err)) < 0)
			return r;
	for (size_t i = 0; i < s->n_mounts; i++) {
		const moat_oci_mount *m = &s->mounts[i];
		char field[64];
		snprintf(field, sizeof(field), "mounts[%zu]", i);
		if (mount_is_moats(m)) {
			if ((r = own_mount(m, p, field, c, err)) < 0)
				return r;
			continue;
		}
		/* A tmpfs elsewhere (containerd's /run): mounted by the init
		 * as asked, size capped by the policy's /tmp limit (or
		 * MOAT_OCI_MAX_TMPFS), nosuid and nodev. */
		if (!m->bind && m->type && strcmp(m->type, "tmpfs") == 0) {
			if (c->n_tmpfs >= MOAT_OCI_MAX_MOUNTS)
				return moat_error_set(err, MOAT_EINPUT, "%s: too many tmpfs mounts", field);
			moat_tmpfs_mount *t = reallocarray(c->tmpfs, c->n_tmpfs + 1, sizeof(*t));
			if (!t)
				return moat_error_set(err, ENOMEM, "%s", field);
			c->tmpfs = t;
			uint64_t cap = p->limits.tmp_bytes != MOAT_UNLIMITED && p->limits.tmp_bytes < MOAT_OCI_MAX_TMPFS
					       ? p->limits.tmp_bytes
					       : MOAT_OCI_MAX_TMPFS;
			if ((r = moat_oci_tmpfs_options(m, cap, field, &c->tmpfs[c->n_tmpfs], err)) < 0)
				return r;
			c->n_tmpfs++;
			if ((r = rootfs_mkpoint(rootfd, m->destination, true, field, err)) < 0)
				return r;
			continue;
		}
		if (!m->bind) {
			/* Other file systems: refused, not dropped. */
			return moat_error_set(err, MOAT_EINPUT, "%s: a %s mount at %s is not supported (only binds)",
					      field, m->type, m->destination);
		}
		_cleanup_free_ char *src = NULL;
		if (m->source[0] == '/')
			src = strdup(m->source);
		else if ((r = bundle_source(bundle, m->source, field, &src, err)) < 0)
			return r;
		if (!src)
			return moat_error_set(err, ENOMEM, "%s", field);
		struct stat st;
		if (stat(src, &st) < 0)
			return moat_error_set(err, errno, "%s.source: %s", field, src);
		if ((r = rootfs_mkpoint(rootfd, m->destination, S_ISDIR(st.st_mode), field, err)) < 0)
			return r;
		/* Files a caller binds (podman's /etc/hosts, /etc/resolv.conf,
		 * /etc/hostname) are bound read-only: in the root mode, moat's
		 * sandbox user could not write the caller's files anyway. */
		bool rw = !m->readonly && S_ISDIR(st.st_mode);
		r = moat_config_add_bind(c, src, m->destination, rw ? MOAT_BIND_RW : 0, err);
		if (r < 0)
			return moat_error_wrap(err, "%s", field);
	}
	/* Applied by the init in the sandbox's namespaces (mount.c,
	 * sysctl.c). */
	if ((s->masked_paths && !(c->masked_paths = moat__strv_copy(s->masked_paths))) ||
	    (s->readonly_paths && !(c->readonly_paths = moat__strv_copy(s->readonly_paths))))
		return moat_error_set(err, ENOMEM, "linux.maskedPaths");
	if (s->n_sysctls > 0) {
		if (!(c->sysctls = calloc(s->n_sysctls + 1, sizeof(char *))))
			return moat_error_set(err, ENOMEM, "linux.sysctl");
		for (size_t i = 0; i < s->n_sysctls; i++)
			if (asprintf(&c->sysctls[i], "%s=%s", s->sysctls[i].key, s->sysctls[i].value) < 0) {
				c->sysctls[i] = NULL;
				return moat_error_set(err, ENOMEM, "linux.sysctl");
			}
	}
	*ret_p = TAKE_PTR(p);
	*ret_c = TAKE_PTR(c);
	return 0;
}

/* ---- the process, looked up before it starts ---- */

/* Resolves path (absolute) inside the sandbox's root, as the container
 * will see it: no link leaves that root, no magic link is followed. */
static int sandbox_lookup(int rootfd, const char *path, struct stat *st)
{
	_cleanup_close_ int fd =
		moat__openat2(rootfd, path, O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return -errno;
	return fstat(fd, st) < 0 ? -errno : 0;
}

/* What runc's init checks before it says the container is created: the
 * working directory exists, and args[0] names a file that may run (found
 * on the process's PATH when it has no '/'). The messages are runc's, so
 * that podman and containerd read them alike ("no such file or
 * directory", "executable file not found in $PATH": 127; "permission
 * denied": 126). Looked up in the sandbox's own root (its init's
 * /proc/PID/root, binds and tmpfs mounts included); where that cannot be
 * opened (a rootless keeper may not open a non-dumpable init's), nothing
 * is checked here, and start reports the failed execve instead. */
static int process_check(const moat_oci_spec *s, pid_t init, moat_error *err)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d/root", (int)init);
	_cleanup_close_ int rootfd = init > 0 ? open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (rootfd < 0)
		return 0;
	struct stat st;
	int r = sandbox_lookup(rootfd, s->cwd, &st);
	if (r == 0 && !S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	if (r < 0)
		return moat_error_set(err, -r, "process.cwd: chdir to cwd (\"%s\") set in config.json failed", s->cwd);
	const char *cmd = s->args[0];
	char buf[PATH_MAX];
	if (strchr(cmd, '/')) {
		int n = cmd[0] == '/' ? snprintf(buf, sizeof(buf), "%s", cmd)
				      : snprintf(buf, sizeof(buf), "%s/%s", s->cwd, cmd);
		if (n < 0 || (size_t)n >= sizeof(buf))
			return moat_error_set(err, ENAMETOOLONG, "process.args[0]: exec: \"%.64s\"", cmd);
		if ((r = sandbox_lookup(rootfd, buf, &st)) < 0)
			return moat_error_set(err, -r, "process.args[0]: exec: \"%s\": stat %s", cmd, cmd);
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			return moat_error_set(err, EACCES, "process.args[0]: exec: \"%s\"", cmd);
		return 0;
	}
	/* The PATH the init searches (init.c) when the process sets none. */
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (char **e = s->env; e && *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	bool denied = false;
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		/* An empty or relative entry is the working directory's. */
		int w = n > 0 && path[0] == '/' ? snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, cmd)
						: snprintf(buf, sizeof(buf), "%s/%.*s/%s", s->cwd, (int)n, path, cmd);
		if (w > 0 && (size_t)w < sizeof(buf) && sandbox_lookup(rootfd, buf, &st) == 0) {
			if (S_ISREG(st.st_mode) && (st.st_mode & 0111))
				return 0;
			denied = true;
		}
		if (!end)
			break;
		path = end + 1;
	}
	if (denied)
		return moat_error_set(err, EACCES, "process.args[0]: exec: \"%s\"", cmd);
	return moat_error_set(err, MOAT_EINPUT, "process.args[0]: exec: \"%s\": executable file not found in $PATH",
			      cmd);
}

/* ---- the keeper ---- */

typedef struct exec_wait {
	int conn;
	uint32_t cmd;
} exec_wait;

typedef struct keeper {
	int dfd;
	const char *id;
	json_t *state;
	moat_sandbox *sb;
	moat_oci_spec *spec;
	int listen_fd;
	bool started, ended;
	uint32_t main_cmd;
	int exit_status;
	/* With a terminal: the host side we hold (its master went to the
	 * console socket) and the sandbox's own pty master, relayed. */
	int host_pty, sb_pty;
	exec_wait execs[MAX_EXECS];
	size_t n_execs;
	/* Its sandbox's user, network, ipc and uts namespaces, opened when
	 * its init was cloned (sandbox.h, keep_ns_fds): for a container of
	 * the same user that joins them, which could not open them itself
	 * (the init is not dumpable; a rootless keeper has no
	 * CAP_SYS_PTRACE). */
	int ns[4];
	/* The gateway's upstream side is in the pod's network namespace
	 * (join_resolve): said in state.json. */
	bool upstream_pod;
} keeper;

/* ---- a pod: namespaces of another container, joined by path ---- */

static const struct {
	moat_oci_ns ns;
	const char *proc; /* its name under /proc/PID/ns */
	int type;         /* its CLONE_NEW* */
} joinable[] = {
	{MOAT_OCI_NS_NETWORK, "net", CLONE_NEWNET},
	{MOAT_OCI_NS_IPC, "ipc", CLONE_NEWIPC},
	{MOAT_OCI_NS_UTS, "uts", CLONE_NEWUTS},
};

/* The init pid of container dfd (written by its keeper once its sandbox
 * exists), or 0 when it has none or its keeper is gone. */
static pid_t container_init_pid(int dfd)
{
	_cleanup_free_ char *text = NULL;
	if (!keeper_alive(dfd) || moat__read_file_at(dfd, INIT_PID_FILE, 32, &text) < 0)
		return 0;
	long pid = strtol(text, NULL, 10);
	return pid > 1 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Finds, under the runtime's root, the live container (other than us)
 * whose init has the namespace st (of /proc/PID/ns/proc): its init pid
 * and id, or 0. The namespace is compared, not the path: whatever name a
 * caller gives (a bind under /run/netns, /proc/PID/ns/net of any process
 * in it), what counts is which namespace it is. */
static pid_t ns_owner(int rootfd, const char *self, const char *proc, const struct stat *st, char *ret_id,
		      size_t len)
{
	/* A descriptor of its own: a dup would share the read offset, and a
	 * second lookup would start where the first ended. */
	int dup = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return 0;
	}
	pid_t found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0 || !moat_oci_id_valid(e->d_name))
			continue;
		_cleanup_close_ int cfd = openat(rootfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		pid_t pid = cfd >= 0 ? container_init_pid(cfd) : 0;
		char path[64];
		struct stat other;
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, proc);
		if (pid > 0 && stat(path, &other) == 0 && same_file(st, &other)) {
			found = pid;
			snprintf(ret_id, len, "%s", e->d_name);
		}
	}
	closedir(d);
	return found;
}

/* When path is /proc/N/ns/proc and N is the pid a live container under
 * the runtime's root reports (its keeper's, which `state` gives and podman
 * builds its paths from): that container's init pid and id, else 0. The
 * keeper's own namespaces are not the container's; the path names the
 * container, and its init's are. */
static pid_t keeper_pid_owner(int rootfd, const char *self, const char *path, const char *proc, char *ret_id,
			      size_t len)
{
	int n = 0, end = 0;
	char tail[16];
	if (sscanf(path, "/proc/%d/ns/%15[a-z]%n", &n, tail, &end) != 2 || path[end] != '\0' || n <= 1 ||
	    strcmp(tail, proc) != 0)
		return 0;
	_cleanup_close_ int dir = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	if (!d)
		return 0;
	dir = -1;
	pid_t found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0 || !moat_oci_id_valid(e->d_name))
			continue;
		_cleanup_close_ int cfd = openat(rootfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_json_ json_t *st = NULL;
		moat_error err = {0};
		if (cfd < 0 || state_read(cfd, &st, &err) < 0)
			continue;
		if (json_integer_value(json_object_get(st, "pid")) != n)
			continue;
		found = container_init_pid(cfd);
		if (found)
			snprintf(ret_id, len, "%s", e->d_name);
	}
	closedir(d);
	return found;
}

/* The id /proc/PID/{uid,gid}_map maps inside its namespace when it maps
 * exactly one, as every container of this runtime does (userns.c writes
 * one line of one id); -1 for a map of more lines or wider ranges, which
 * no container of this runtime has. The kernel caps a map at 340 lines of
 * at most 33 bytes ("%10u %10u %10u\n"), so the cap below reads any map
 * whole: its first line is never taken for all of it. */
#define ID_MAP_READ_MAX (340 * 33 + 1)
static long map_inside_id(pid_t pid, const char *map)
{
	char path[64];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, map);
	unsigned long inside, outside, count;
	int n = 0;
	if (moat__read_file_at(AT_FDCWD, path, ID_MAP_READ_MAX, &text) < 0 ||
	    sscanf(text, "%lu %lu %lu%n", &inside, &outside, &count, &n) != 3 || count != 1)
		return -1;
	for (const char *p = text + n; *p; p++)
		if (*p != '\n' && *p != ' ')
			return -1;
	return (long)inside;
}

static void ns_fds_close(int (*fds)[4])
{
	for (int i = 0; i < 4; i++)
		if ((*fds)[i] >= 0)
			close((*fds)[i]);
}

/* The live container under the runtime's root (other than self) whose
 * keeper or init has pid n: its init's pid and its id, or 0. */
static pid_t pid_container(int rootfd, const char *self, pid_t n, char *ret_id, size_t len)
{
	_cleanup_close_ int dir = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	if (!d)
		return false;
	dir = -1;
	pid_t found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, self) == 0 || !moat_oci_id_valid(e->d_name))
			continue;
		_cleanup_close_ int cfd = openat(rootfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_json_ json_t *st = NULL;
		moat_error err = {0};
		pid_t init = cfd >= 0 ? container_init_pid(cfd) : 0;
		if (init <= 0)
			continue;
		bool keeper_is = state_read(cfd, &st, &err) == 0 && json_integer_value(json_object_get(st, "pid")) == n;
		if (keeper_is || init == n) {
			found = init;
			snprintf(ret_id, len, "%s", e->d_name);
		}
	}
	closedir(d);
	return found;
}

/* Asks container id's keeper for its sandbox's namespaces (user, net,
 * ipc, uts; keeper.ns). 0 with all four open, or a negative errno. */
static int ask_ns(int rootfd, const char *id, int fds[4], moat_error *err)
{
	_cleanup_close_ int cfd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0)
		return moat_error_set(err, errno, "container %s", id);
	_cleanup_close_ int conn = keeper_connect(cfd, id, err);
	if (conn < 0)
		return conn;
	int r = send_msg(conn, "ns", NULL, 0);
	if (r < 0)
		return moat_error_set(err, r, "container %s: talk to its keeper", id);
	char buf[512];
	ssize_t n = recv_msg(conn, buf, sizeof(buf), fds);
	bool all = n > 0 && strcmp(buf, "ok") == 0;
	for (int i = 0; i < 4; i++)
		all = all && fds[i] >= 0;
	if (!all) {
		for (int i = 0; i < 4; i++)
			if (fds[i] >= 0)
				close(fds[i]), fds[i] = -1;
		return moat_error_set(err, n < 0 ? (int)n : MOAT_EINPUT, "container %s: %.200s", id,
				      n > 4 && strncmp(buf, "err ", 4) == 0 ? buf + 4 : "its keeper handed over no namespaces");
	}
	return 0;
}

/* linux.namespaces[].path (network, ipc, uts): allowed only when the path
 * is a namespace of another moat-oci container under the same --root
 * (its init's, compared by inode), all of them one container's; the
 * sandbox then joins that container's user namespace too, which maps one
 * user, so process.user must be that container's. The one exception is a
 * Kubernetes pod's network namespace (made by the CNI plugin; the pause
 * container gets its path, the others the pause container's
 * /proc/PID/ns/net): joined only with the policy's network.mode: pod and
 * never the host's (oci-netns.h), entered by the runtime before the
 * sandbox's own user namespace is made (net_foreign). Anything else (the
 * host's namespaces, another user's, a runtime's of another root, a
 * stopped container's, a file that is not a namespace of the entry's
 * type) is refused, naming the field. j gets the open namespaces (-1
 * where none), the caller's to close. */
/* A pod's container whose network path names a container of this root
 * (the pause container's /proc/PID/ns/net, as containerd's CRI writes it)
 * that keeps its own network with moat's gateway in front of the pod's
 * (its state: "upstream_netns": "pod"): with a gateway of its own, this
 * container does the same, its gateway's upstream in the pod's network
 * namespace, opened from the path that container was given and checked
 * as that was. 1 with j->upstream_netns_fd set, 0 when id is no such
 * container, or a negative errno. */
static int pod_upstream_of(int rootfd, const char *id, moat_net_mode mode, const char *field, moat_sandbox_join *j,
			   moat_error *err)
{
	_cleanup_close_ int cfd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_json_ json_t *st = NULL;
	moat_error ignored = {0};
	if (cfd < 0 || state_read(cfd, &st, &ignored) < 0)
		return 0;
	json_t *net = json_object_get(st, "network");
	const char *up = json_string_value(json_object_get(net, "upstream_netns"));
	const char *path = json_string_value(json_object_get(net, "path"));
	if (!up || strcmp(up, "pod") != 0 || !path)
		return 0;
	_cleanup_close_ int fd = moat__oci_ns_open(path, CLONE_NEWNET, field, err);
	if (fd < 0)
		return moat_error_wrap(err, "container %s's pod network", id);
	int r = moat__oci_netns_not_host(fd, field, path, err);
	if (r >= 0)
		r = moat__oci_podnet_allowed(fd, mode, field, path, err);
	if (r < 0)
		return moat_error_wrap(err, "container %s's pod network", id);
	j->upstream_netns_fd = TAKE_FD(fd);
	return 1;
}

static int join_resolve(keeper *k, moat_net_mode mode, moat_sandbox_join *j, moat_error *err)
{
	*j = (moat_sandbox_join){
		.userns_fd = -1, .netns_fd = -1, .ipcns_fd = -1, .utsns_fd = -1, .upstream_netns_fd = -1};
	_cleanup_close_ int rootfd = openat(k->dfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return moat_error_set(err, errno, "--root");
	pid_t owner = 0;
	char owner_id[MOAT_OCI_ID_MAX + 1] = "";
	int any = -1;
	/* Namespaces a container's keeper handed over (ask_ns): user, net,
	 * ipc, uts, in joinable's order after the user. */
	_cleanup_(ns_fds_close) int kns[4] = {-1, -1, -1, -1};
	char kns_id[MOAT_OCI_ID_MAX + 1] = "";
	for (size_t t = 0; t < ELEMENTSOF(joinable); t++) {
		const char *path = k->spec->ns_paths[joinable[t].ns];
		if (!path)
			continue;
		char field[64];
		snprintf(field, sizeof(field), "linux.namespaces[%zu].path", k->spec->ns_path_index[joinable[t].ns]);
		bool net = joinable[t].type == CLONE_NEWNET;
		int *slot = net ? &j->netns_fd : joinable[t].type == CLONE_NEWIPC ? &j->ipcns_fd : &j->utsns_fd;
		char id[MOAT_OCI_ID_MAX + 1] = "", byname[64] = "";
		pid_t kpid = keeper_pid_owner(rootfd, k->id, path, joinable[t].proc, id, sizeof(id));
		if (kpid > 0)
			snprintf(byname, sizeof(byname), "/proc/%d/ns/%s", (int)kpid, joinable[t].proc);
		int fd = moat__oci_ns_open(kpid > 0 ? byname : path, joinable[t].type, field, err);
		/* Rootless, another sandbox's namespaces cannot be opened
		 * (its init is not dumpable): a /proc/N/ns path naming a
		 * container of this root (its keeper's pid or its init's)
		 * gets them from that container's keeper, which opened them
		 * when it cloned the init. */
		pid_t from_keeper = 0;
		int n = 0, end = 0;
		char name[16] = "";
		if (fd == -EACCES && sscanf(path, "/proc/%d/ns/%15[a-z]%n", &n, name, &end) == 2 && path[end] == '\0' &&
		    (from_keeper = pid_container(rootfd, k->id, n, id, sizeof(id))) > 0) {
			if (strcmp(kns_id, id) != 0) {
				for (int i = 0; i < 4; i++)
					if (kns[i] >= 0)
						close(kns[i]), kns[i] = -1;
				int r = ask_ns(rootfd, id, kns, err);
				if (r < 0)
					return moat_error_wrap(err, "%s: %.256s", field, path);
				snprintf(kns_id, sizeof(kns_id), "%s", id);
			}
			/* The one the path names (user, net, ipc, uts), then
			 * checked to be of the entry's type. */
			static const char *const kns_names[] = {"user", "net", "ipc", "uts"};
			size_t which = 0;
			while (which < ELEMENTSOF(kns_names) && strcmp(kns_names[which], name) != 0)
				which++;
			fd = which < ELEMENTSOF(kns_names) ? fcntl(kns[which], F_DUPFD_CLOEXEC, 3) : -1;
			if (fd < 0 && which < ELEMENTSOF(kns_names))
				return moat_error_set(err, errno, "%s: %.256s", field, path);
			int got = fd >= 0 ? ioctl(fd, NS_GET_NSTYPE) : -1;
			if (got != joinable[t].type) {
				if (fd >= 0)
					close(fd);
				if (got < 0)
					return moat_error_set(err, MOAT_EINPUT, "%s: %.256s is not a %s namespace", field,
							      path, joinable[t].proc);
				return moat_error_set(err, MOAT_EINPUT, "%s: %.256s is a namespace of type %s, not %s",
						      field, path, moat__oci_ns_type_name(got), joinable[t].proc);
			}
		}
		if (fd < 0)
			return fd;
		*slot = fd;
		if (net) {
			int r = moat__oci_netns_not_host(fd, field, path, err);
			if (r < 0)
				return r;
		}
		struct stat st;
		if (fstat(fd, &st) < 0)
			return moat_error_set(err, errno, "%s: %.256s", field, path);
		pid_t pid = from_keeper ? from_keeper : ns_owner(rootfd, k->id, joinable[t].proc, &st, id, sizeof(id));
		if (net) {
			/* A container's own network namespace is owned by its
			 * user namespace; one it joined as a pod's is not. */
			char upath[64];
			struct stat us;
			snprintf(upath, sizeof(upath), "/proc/%d/ns/user", (int)pid);
			bool us_ok = from_keeper ? fstat(kns[0], &us) == 0 : stat(upath, &us) == 0;
			if (pid == 0 || !us_ok || !moat__oci_ns_owned_by(fd, &us)) {
				int r = moat__oci_podnet_allowed(fd, mode, field, path, err);
				if (r < 0)
					return r;
				/* With a gateway the container is not put there:
				 * it keeps a namespace of its own, with only the
				 * gateway's port, and the gateway's upstream side
				 * (its connections out, its DNS) is made in the
				 * pod's. */
				if (moat_net_uses_gateway(mode))
					j->upstream_netns_fd = TAKE_FD(*slot);
				else
					j->net_foreign = true;
				continue;
			}
			/* The pause container's own network, with its gateway
			 * in front of the pod's: this container gets its own,
			 * with a gateway of its own there. */
			int r = moat_net_uses_gateway(mode) ? pod_upstream_of(rootfd, id, mode, field, j, err) : 0;
			if (r < 0)
				return r;
			if (r > 0) {
				close(*slot);
				*slot = -1;
				continue;
			}
		}
		if (pid == 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "%s: %.256s is not the %s namespace of a running moat-oci container under "
					      "this --root; joining it is refused (a container may join only another "
					      "moat-oci container's network, ipc and uts namespaces, and with network.mode: "
					      "pod a pod's network namespace)",
					      field, path, joinable[t].proc);
		if (owner && strcmp(id, owner_id) != 0)
			return moat_error_set(err, MOAT_EINPUT,
					      "%s: %.256s is container %s's, another namespace joined is %s's; the "
					      "namespaces joined must all be one container's",
					      field, path, id, owner_id);
		owner = pid;
		snprintf(owner_id, sizeof(owner_id), "%s", id);
		any = fd;
	}
	if (any < 0)
		return 0;
	/* The user namespace that owns what is joined, from the namespace
	 * itself: it must be that container's own. */
	j->userns_fd = ioctl(any, NS_GET_USERNS);
	struct stat us, theirs;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)owner);
	bool theirs_ok = strcmp(kns_id, owner_id) == 0 ? fstat(kns[0], &theirs) == 0 : stat(path, &theirs) == 0;
	if (j->userns_fd < 0 || fstat(j->userns_fd, &us) < 0 || !theirs_ok || !same_file(&us, &theirs))
		return moat_error_set(err, EPERM, "linux.namespaces: the namespaces of container %s are not owned by its "
						  "own user namespace; joining them is refused",
				      owner_id);
	if (map_inside_id(owner, "uid_map") != (long)k->spec->uid || map_inside_id(owner, "gid_map") != (long)k->spec->gid)
		return moat_error_set(err, MOAT_EINPUT,
				      "process.user: joining container %s's namespaces takes its user namespace, which "
				      "maps only its user (uid %ld gid %ld, -1: not one id); uid %u gid %u is refused",
				      owner_id, map_inside_id(owner, "uid_map"), map_inside_id(owner, "gid_map"),
				      (unsigned)k->spec->uid, (unsigned)k->spec->gid);
	return 0;
}

static void join_close(moat_sandbox_join *j)
{
	int *fds[] = {&j->userns_fd, &j->netns_fd, &j->ipcns_fd, &j->utsns_fd, &j->upstream_netns_fd};
	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		if (*fds[i] >= 0)
			close(*fds[i]), *fds[i] = -1;
}

/* What the container's isolation is (its sandbox's own report, filled by
 * the mechanisms that took effect), in state.json beside the spec's
 * fields: "isolation", and "network": how its traffic leaves ("none",
 * "proxy", "transparent", or "pod": the pod's network namespace, NOT
 * through moat's gateway), the path it was given, if any, and with a
 * gateway and a pod's path "upstream_netns": "pod" (the gateway connects
 * from the pod's namespace). */
static void state_isolation(keeper *k)
{
	if (!k->sb)
		return;
	const moat_isolation *iso = moat__sandbox_isolation(k->sb);
	json_t *net = json_pack("{s:s}", "mode", iso->egress[0] ? iso->egress : "none");
	const char *path = k->spec->ns_paths[MOAT_OCI_NS_NETWORK];
	if (net && path)
		json_object_set_new(net, "path", json_string(path));
	json_t *isojson = moat_isolation_to_json(iso);
	/* The pod's namespace is where the gateway connects from, not the
	 * container's network. */
	if (k->upstream_pod) {
		if (net)
			json_object_set_new(net, "upstream_netns", json_string("pod"));
		if (isojson)
			json_object_set_new(isojson, "upstream_netns", json_string("pod"));
	}
	json_object_set_new(k->state, "isolation", isojson);
	json_object_set_new(k->state, "network", net ? net : json_null());
}

static void keeper_set_status(keeper *k, const char *status)
{
	moat_error err = {0};
	state_isolation(k);
	json_object_set_new(k->state, "status", json_string(status));
	(void)state_write(k->dfd, k->state, &err);
}

static int reply(int conn, const char *fmt, ...) _printf_(2, 3);
static int reply(int conn, const char *fmt, ...)
{
	char buf[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return send_msg(conn, buf, NULL, 0);
}

static int reply_err(int conn, const moat_error *err)
{
	char m[MOAT_ERROR_MAX + 64];
	return reply(conn, "err %s", moat_error_format(err, m, sizeof(m)));
}

static void keeper_start(keeper *k, int conn)
{
	if (k->started || k->ended) {
		reply(conn, "err container %s is %s, not created", k->id, k->ended ? "stopped" : "running");
		return;
	}
	moat_spawn_spec sp;
	moat_spawn_spec_init(&sp);
	sp.argv = k->spec->args;
	sp.env = k->spec->env;
	sp.cwd = k->spec->cwd;
	if (k->host_pty >= 0)
		sp.tty = true;
	else
		sp.stdin_fd = 0, sp.stdout_fd = 1, sp.stderr_fd = 2;
	moat_command cmd;
	moat_error err = {0};
	if (moat_sandbox_spawn(k->sb, &sp, &cmd, &err) < 0) {
		reply_err(conn, &err);
		return;
	}
	k->main_cmd = cmd.id;
	k->sb_pty = cmd.pty_fd;
	k->started = true;
	if (cmd.pid == 0) {
		/* It never ran (its execve or its confinement failed): start
		 * fails with the reason, as runc's does, and the container is
		 * stopped with the process's status (127, 126). */
		moat_command_result res;
		if (moat_sandbox_wait(k->sb, cmd.id, 10000, &res, &err) == 0) {
			/* Worded as runc words it (process_check). */
			const char *a0 = k->spec->args[0];
			k->exit_status = res.exit_status;
			if (res.status == MOAT_STATUS_EXITED && res.exit_code == 127 && strchr(a0, '/'))
				moat_error_set(&err, MOAT_EINPUT,
					       "process.args[0]: exec: \"%s\": stat %s: no such file or directory", a0, a0);
			else if (res.status == MOAT_STATUS_EXITED && res.exit_code == 127)
				moat_error_set(&err, MOAT_EINPUT,
					       "process.args[0]: exec: \"%s\": executable file not found in $PATH", a0);
			else if (res.status == MOAT_STATUS_EXITED)
				moat_error_set(&err, MOAT_EINPUT, "process.args[0]: exec: %s", res.error);
			else
				moat_error_set(&err, MOAT_EINPUT, "%s", res.error[0] ? res.error : "the process did not start");
		}
		(void)moat_sandbox_stop(k->sb, NULL);
		keeper_set_status(k, "stopped");
		reply_err(conn, &err);
		return;
	}
	/* The streams are the process's now. */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		close(null);
	}
	keeper_set_status(k, "running");
	reply(conn, "ok");
}

static void keeper_kill(keeper *k, int conn, const char *args)
{
	int sig = 0, all = 0;
	if (sscanf(args, "%d %d", &sig, &all) != 2 || sig <= 0 || sig >= NSIG) {
		reply(conn, "err bad kill request");
		return;
	}
	moat_error err = {0};
	if (!k->started || ((all || sig == SIGKILL) && !k->ended)) {
		/* Not started: the container ends, as runc's does; with --all
		 * or SIGKILL, every process of it. */
		if (!k->started)
			k->exit_status = 128 + sig;
		if (moat_sandbox_stop(k->sb, &err) < 0) {
			reply_err(conn, &err);
			return;
		}
		reply(conn, "ok");
		return;
	}
	if (k->ended) {
		reply(conn, "err container %s is not running", k->id);
		return;
	}
	int r = moat_sandbox_signal(k->sb, k->main_cmd, sig, &err);
	for (size_t i = 0; all && i < k->n_execs; i++)
		(void)moat_sandbox_signal(k->sb, k->execs[i].cmd, sig, &err);
	if (r < 0 && r != -ESRCH) {
		reply_err(conn, &err);
		return;
	}
	reply(conn, "ok");
}

static void keeper_exec(keeper *k, int conn, const char *json, int fds[4])
{
	_cleanup_close_ int in = fds[0], out = fds[1], errfd = fds[2];
	if (!k->started || k->ended) {
		reply(conn, "err container %s is not running", k->id);
		return;
	}
	if (k->n_execs >= MAX_EXECS) {
		reply(conn, "err container %s: %d processes are being executed already", k->id, MAX_EXECS);
		return;
	}
	_cleanup_oci_spec_ moat_oci_spec *p = NULL;
	moat_error err = {0};
	if (moat_oci_process_parse(json, strlen(json), &p, &err) < 0) {
		reply_err(conn, &err);
		return;
	}
	/* The sandbox maps one user: a process of another cannot be made. */
	if (p->user_set && (p->uid != k->spec->uid || p->gid != k->spec->gid)) {
		reply(conn,
		      "err process.user: uid %u gid %u is not the container's user (uid %u gid %u), the one user "
		      "moat's sandbox maps; refused",
		      (unsigned)p->uid, (unsigned)p->gid, (unsigned)k->spec->uid, (unsigned)k->spec->gid);
		return;
	}
	moat_spawn_spec sp;
	moat_spawn_spec_init(&sp);
	sp.argv = p->args;
	sp.env = p->env;
	sp.cwd = p->cwd;
	sp.tty = p->terminal;
	if (!sp.tty)
		sp.stdin_fd = in, sp.stdout_fd = out, sp.stderr_fd = errfd;
	moat_command cmd;
	if (moat_sandbox_spawn(k->sb, &sp, &cmd, &err) < 0) {
		reply_err(conn, &err);
		return;
	}
	int pty = cmd.pty_fd;
	if (send_msg(conn, "ok", pty >= 0 ? &pty : NULL, pty >= 0 ? 1 : 0) < 0) {
		if (pty >= 0)
			close(pty);
		(void)moat_sandbox_signal(k->sb, cmd.id, SIGKILL, &err);
		return;
	}
	if (pty >= 0)
		close(pty);
	int keep = fcntl(conn, F_DUPFD_CLOEXEC, 3);
	if (keep < 0)
		return;
	k->execs[k->n_execs++] = (exec_wait){.conn = keep, .cmd = cmd.id};
}

static void keeper_serve(keeper *k, int conn)
{
	/* Only the keeper's own user or root (SO_PEERCRED): the folder's
	 * mode says the same, this holds if it is ever loosened. */
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || (cred.uid != 0 && cred.uid != geteuid()))
		return;
	_cleanup_free_ char *buf = malloc(MSG_MAX);
	if (!buf)
		return;
	int fds[4];
	ssize_t n = recv_msg(conn, buf, MSG_MAX, fds);
	if (n <= 0)
		return;
	if (strcmp(buf, "start") == 0)
		keeper_start(k, conn);
	else if (strncmp(buf, "kill ", 5) == 0)
		keeper_kill(k, conn, buf + 5);
	else if (strcmp(buf, "ns") == 0) {
		/* Same user or root only (above): the namespaces of a
		 * sandbox of that user, for a container joining them. */
		bool all = k->sb && !k->ended;
		for (size_t i = 0; i < ELEMENTSOF(k->ns); i++)
			all = all && k->ns[i] >= 0;
		if (all)
			send_msg(conn, "ok", k->ns, ELEMENTSOF(k->ns));
		else
			reply(conn, "err container %s has no namespaces to hand over", k->id);
	} else if (strncmp(buf, "exec ", 5) == 0) {
		keeper_exec(k, conn, buf + 5, fds);
		fds[0] = fds[1] = fds[2] = -1;
	} else
		reply(conn, "err unknown request");
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void relay(int from, int to, bool *open_)
{
	char buf[4096];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			*open_ = false;
		return;
	}
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += w;
	}
}

static void keeper_events(keeper *k)
{
	moat_sandbox_event ev;
	moat_error err = {0};
	while (moat_sandbox_dispatch(k->sb, &ev, &err) == 1) {
		if (ev.type == MOAT_SANDBOX_EVENT_EXITED) {
			if (k->started && ev.command.id == k->main_cmd) {
				k->exit_status = ev.command.exit_status;
				/* Stopped now that its process has ended (as
				 * runc's state says once its init is gone), not
				 * only once the sandbox is torn down: a caller
				 * polling for it under load does not wait on
				 * the teardown. */
				keeper_set_status(k, "stopped");
				/* Every other process of the container ends
				 * with its first one, as in a pid namespace. */
				(void)moat_sandbox_stop(k->sb, &err);
				continue;
			}
			for (size_t i = 0; i < k->n_execs; i++) {
				if (k->execs[i].cmd != ev.command.id)
					continue;
				reply(k->execs[i].conn, "exit %d", ev.command.exit_status);
				close(k->execs[i].conn);
				k->execs[i] = k->execs[--k->n_execs];
				break;
			}
		} else if (ev.type == MOAT_SANDBOX_EVENT_ENDED) {
			k->ended = true;
			if (!k->started && !k->exit_status)
				k->exit_status = 137;
		}
	}
}

static int keeper_loop(keeper *k)
{
	bool host_open = true, sb_open = true;
	while (!k->ended) {
		struct pollfd p[4] = {
			{.fd = k->listen_fd, .events = POLLIN},
			{.fd = moat_sandbox_fd(k->sb), .events = POLLIN},
			{.fd = host_open && k->sb_pty >= 0 ? k->host_pty : -1, .events = POLLIN},
			{.fd = sb_open && k->sb_pty >= 0 ? k->sb_pty : -1, .events = POLLIN},
		};
		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents & POLLIN) {
			int conn = accept4(k->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (conn >= 0) {
				keeper_serve(k, conn);
				close(conn);
			}
		}
		if (p[2].revents & (POLLIN | POLLHUP))
			relay(k->host_pty, k->sb_pty, &host_open);
		if (p[3].revents & (POLLIN | POLLHUP))
			relay(k->sb_pty, k->host_pty, &sb_open);
		if (p[1].revents)
			keeper_events(k);
	}
	return 0;
}

/* With process.terminal: a pty pair of the host, its master to the
 * console socket; the keeper relays its other side to the sandbox's own
 * terminal once the process starts. The sandbox's side is never the
 * host's: the container gets a pty of its own devpts (sandbox.h). */
static int keeper_console(keeper *k, const char *console_socket, moat_error *err)
{
	if (!console_socket)
		return moat_error_set(err, MOAT_EINPUT, "process.terminal is true but no --console-socket was given");
	_cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return moat_error_set(err, errno, "make a terminal");
	char name[64];
	if (ptsname_r(master, name, sizeof(name)) != 0)
		return moat_error_set(err, errno, "make a terminal");
	k->host_pty = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (k->host_pty < 0)
		return moat_error_set(err, errno, "open %s", name);
	/* Bytes pass through untouched: the sandbox's terminal has the line
	 * discipline. */
	struct termios t;
	if (tcgetattr(k->host_pty, &t) == 0) {
		cfmakeraw(&t);
		(void)tcsetattr(k->host_pty, TCSANOW, &t);
	}
	return console_send(console_socket, master, err);
}

/* Where a root keeper stages the sources (keeper_stage_sources): a folder
 * of the host's that stays empty there, with a tmpfs over it in each
 * keeper's own mount namespace. */
#define STAGE_DIR "/run/moat-oci-stage"

/* In the root mode moat's sandbox user is not root on the host, and the
 * paths of a root-run caller's files cross folders only root may enter
 * (/var/lib/containers/storage/overlay, /run/containerd/runc are 0700).
 * The keeper, as root, binds the container's root and bind sources below
 * STAGE_DIR (mode 0711: entered, not listed) inside a mount namespace of
 * its own, which the sandbox's init is cloned into and which ends with
 * the keeper: the host's mounts do not change. */
/* A user namespace whose maps say that uid and gid (the container's
 * process.user) are the sandbox user's host ids: the idmap of the
 * container's root (keeper_stage_root). Made by a child that unshares it
 * and waits; its /proc/PID/ns/user is kept, the child ends. */
static int idmap_userns(uid_t uid, gid_t gid, moat_error *err)
{
	/* hold: the child waits on it until the parent closes its end;
	 * ready: the child says it has unshared (EOF: it failed). */
	int hold[2], ready[2];
	if (pipe2(hold, O_CLOEXEC) < 0)
		return moat_error_set(err, errno, "keeper: pipe");
	if (pipe2(ready, O_CLOEXEC) < 0) {
		int e = errno;
		close(hold[0]), close(hold[1]);
		return moat_error_set(err, e, "keeper: pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		char c = 'u';
		close(hold[1]), close(ready[0]);
		if (unshare(CLONE_NEWUSER) < 0 || write(ready[1], &c, 1) != 1)
			_exit(1);
		(void)!read(hold[0], &c, 1);
		_exit(0);
	}
	int e = errno;
	close(hold[0]), close(ready[1]);
	int fd = -1, r = 0;
	char c, path[64];
	if (pid < 0)
		r = moat_error_set(err, e, "keeper: fork");
	else if (read(ready[0], &c, 1) != 1)
		r = moat_error_set(err, EPERM, "keeper: make the root's id map");
	else if ((r = moat__userns_write_maps(pid, false, uid, gid, MOAT_ROOT_HOST_UID, MOAT_ROOT_HOST_GID, err)) >= 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			r = moat_error_set(err, errno, "keeper: %s", path);
	}
	close(hold[1]), close(ready[0]);
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	return r < 0 ? r : fd;
}

/* Binds the container's root at path, idmapped so that its files owned by
 * process.user (on disk) are the sandbox user's (host uid 65534 outside,
 * process.user inside) and the rest nobody's: the container's user owns
 * its own root, as it does under runc, and on disk what it writes is
 * owned by that user. Only in the keeper's own mount namespace, which
 * nothing but the container sees; nothing outside the root changes
 * hands. A file system that cannot be idmapped gets a plain bind (its
 * root-owned files stay out of the container's reach, as before). */
static int keeper_stage_root(const char *src, const char *path, uid_t uid, gid_t gid, moat_error *err)
{
	_cleanup_close_ int tree = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return moat_error_set(err, errno, "keeper: stage %s", src);
	_cleanup_close_ int ns = idmap_userns(uid, gid, err);
	if (ns < 0)
		return ns;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)ns};
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0 &&
	    errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS)
		return moat_error_set(err, errno, "keeper: idmap %s", src);
	if (move_mount(tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return moat_error_set(err, errno, "keeper: stage %s", src);
	return 0;
}

static int keeper_stage_sources(moat_config *c, moat_error *err)
{
	if (!moat__userns_host_root())
		return 0;
	if (unshare(CLONE_NEWNS) < 0)
		return moat_error_set(err, errno, "keeper: mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return moat_error_set(err, errno, "keeper: make mounts private");
	if (mkdir(STAGE_DIR, 0711) < 0 && errno != EEXIST)
		return moat_error_set(err, errno, "keeper: make %s", STAGE_DIR);
	if (mount("moat-oci-stage", STAGE_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711,size=64k") < 0)
		return moat_error_set(err, errno, "keeper: mount a tmpfs on %s", STAGE_DIR);
	_cleanup_close_ int dfd = open(STAGE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(err, errno, "keeper: open %s", STAGE_DIR);
	for (size_t i = 0; i <= c->n_binds; i++) {
		char **src = i < c->n_binds ? &c->binds[i].src : &c->rootfs;
		struct stat st;
		if (stat(*src, &st) < 0)
			return moat_error_set(err, errno, "%s", *src);
		char name[32], *path = NULL;
		snprintf(name, sizeof(name), "%zu", i);
		/* (umask 077 would take the x bits away: modes set plainly.) */
		if (S_ISDIR(st.st_mode) ? mkdirat(dfd, name, 0711) < 0 || fchmodat(dfd, name, 0711, 0) < 0
					: mknodat(dfd, name, S_IFREG | 0600, 0) < 0)
			return moat_error_set(err, errno, "keeper: stage %s", *src);
		if (asprintf(&path, "%s/%s", STAGE_DIR, name) < 0)
			return moat_error_set(err, ENOMEM, "keeper");
		if (i == c->n_binds) {
			int r = keeper_stage_root(*src, path, c->sandbox_uid, c->sandbox_gid, err);
			if (r < 0) {
				free(path);
				return r;
			}
		} else if (mount(*src, path, NULL, MS_BIND | MS_REC, NULL) < 0) {
			int e = errno;
			free(path);
			return moat_error_set(err, e, "keeper: stage %s", *src);
		}
		free(*src);
		*src = path;
	}
	return 0;
}

static int keeper_setup(keeper *k, const char *bundle, const char *console_socket, moat_policy **ret_p,
			moat_config **ret_c, moat_egress *egress, moat_audit **ret_audit, moat_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = read_config(bundle, &text, &len, err);
	if (r < 0)
		return r;
	if ((r = moat_oci_spec_parse(text, len, bundle, &k->spec, err)) < 0)
		return moat_error_wrap(err, "%s/config.json", bundle);
	_cleanup_json_ json_t *raw = json_loads(text, 0, NULL);
	json_t *ann = raw ? json_object_get(raw, "annotations") : NULL;
	/* "o" takes the reference this holds. */
	json_t *annotations = ann && json_is_object(ann) ? json_incref(ann) : json_object();
	k->state = json_pack("{s:s, s:s, s:s, s:i, s:s, s:o}", "ociVersion", MOAT_OCI_VERSION, "id", k->id, "status",
			     "creating", "pid", (int)getpid(), "bundle", bundle, "annotations", annotations);
	if (!k->state)
		return moat_error_set(err, ENOMEM, "state");
	if ((r = build(k->spec, bundle, ret_p, ret_c, err)) < 0 || (r = keeper_stage_sources(*ret_c, err)) < 0)
		return r;
	if ((*ret_p)->audit_log) {
		if ((r = moat_audit_open((*ret_p)->audit_log, k->id, ret_audit, err)) < 0)
			return moat_error_wrap(err, "annotations.%s", MOAT_OCI_ANNOTATION_AUDIT);
		uint64_t max = (*ret_p)->audit_max_size ? (*ret_p)->audit_max_size : MOAT_AUDIT_DEFAULT_MAX_SIZE;
		if ((r = moat_audit_set_max_size(*ret_audit, max, err)) < 0)
			return r;
	}
	if ((r = moat_egress_from_policy(*ret_p, NULL, *ret_audit, egress, err)) < 0)
		return r;
	if (k->spec->terminal && (r = keeper_console(k, console_socket, err)) < 0)
		return r;
	/* process.rlimits: the sandbox's init is cloned from this process
	 * and passes its limits on, so they are set here, and only ever
	 * lowered (a hard limit raised would be a privilege of the runtime's
	 * user given to the container). moat's own limits apply over them. */
	for (size_t i = 0; i < k->spec->n_rlimits; i++) {
		const moat_oci_rlimit *rl = &k->spec->rlimits[i];
		struct rlimit cur;
		if (getrlimit(rl->resource, &cur) < 0)
			return moat_error_set(err, errno, "process.rlimits[%zu]", i);
		struct rlimit want = {.rlim_max = rl->hard < cur.rlim_max ? rl->hard : cur.rlim_max};
		want.rlim_cur = rl->soft < want.rlim_max ? rl->soft : want.rlim_max;
		if (setrlimit(rl->resource, &want) < 0)
			return moat_error_set(err, errno, "process.rlimits[%zu]: %s", i,
					      moat_oci_rlimit_to_string(rl->resource));
	}
	/* process.oomScoreAdj: like the rlimits, passed on to the init and
	 * every process of the container. Raising it is anyone's; lowering
	 * it takes CAP_SYS_RESOURCE, which a rootless keeper lacks: the
	 * kernel's refusal fails create, naming the field. */
	if (k->spec->oom_score_adj_set) {
		char v[16];
		snprintf(v, sizeof(v), "%d", k->spec->oom_score_adj);
		if ((r = moat__write_string("/proc/self/oom_score_adj", v)) < 0)
			return moat_error_set(err, r, "process.oomScoreAdj: set %d", k->spec->oom_score_adj);
	}
	moat_sandbox_join join;
	if ((r = join_resolve(k, (*ret_c)->net, &join, err)) < 0) {
		join_close(&join);
		return r;
	}
	/* A pod's network sysctls go into the pod's namespace, written by
	 * the runtime: the sandbox's init has no privilege there. */
	if (join.net_foreign && (r = moat__oci_podnet_sysctls(join.netns_fd, (*ret_c)->sysctls, err)) < 0) {
		join_close(&join);
		return r;
	}
	if (join.netns_fd >= 0 && !join.net_foreign && moat_net_uses_gateway((*ret_c)->net)) {
		join_close(&join);
		return moat_error_set(err, MOAT_EINPUT,
				      "linux.namespaces[%zu].path: a joined network namespace is its container's, with "
				      "that container's egress; a policy with an egress gateway of its own is refused",
				      k->spec->ns_path_index[MOAT_OCI_NS_NETWORK]);
	}
	moat_sandbox_opts o;
	moat_sandbox_opts_init(&o);
	o.audit = *ret_audit;
	o.gateway = moat_egress_gateway(egress);
	if (join.userns_fd >= 0 || join.netns_fd >= 0)
		o.join = &join;
	o.upstream_netns_fd = join.upstream_netns_fd;
	k->upstream_pod = join.upstream_netns_fd >= 0;
	o.keep_ns_fds = k->ns;
	/* linux.cgroupsPath: the container's cgroup there (kubelet and
	 * podman account a pod's containers so), with the spec's cpu
	 * settings; without it, moat's own beside the keeper's cgroup. */
	moat_cgroup_req cgreq = {
		.path = k->spec->cgroups_path,
		.cpu_shares = k->spec->cpu_shares,
		.cpu_quota = k->spec->cpu_quota,
		.cpu_period = k->spec->cpu_period,
		.cpuset_cpus = k->spec->cpuset_cpus,
		.cpuset_mems = k->spec->cpuset_mems,
	};
	if (cgreq.path && cgreq.path[0])
		o.cgroup = &cgreq;
	/* The container's processes start with runc's umask (0022), not the
	 * keeper's own 077: the init is cloned from here and passes it on. */
	mode_t keep_umask = umask(022);
	r = moat_sandbox_create(*ret_c, &o, &k->sb, err);
	umask(keep_umask);
	join_close(&join);
	if (r < 0)
		return r;
	/* For a container that joins this one's namespaces (join_resolve). */
	char pidtext[32];
	snprintf(pidtext, sizeof(pidtext), "%d", (int)moat_sandbox_init_pid(k->sb));
	if ((r = moat__write_file_at(k->dfd, INIT_PID_FILE, pidtext, 0600)) < 0)
		return moat_error_set(err, r, "container %s: write %s", k->id, INIT_PID_FILE);
	if ((r = process_check(k->spec, moat_sandbox_init_pid(k->sb), err)) < 0)
		return r;
	/* Made after the sandbox, so that its init, cloned from us, never
	 * held the listening socket. */
	struct sockaddr_un sa;
	if ((r = sock_addr(k->dfd, "ctl", &sa, err)) < 0)
		return r;
	(void)unlinkat(k->dfd, "ctl", 0);
	k->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (k->listen_fd < 0 || bind(k->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(k->listen_fd, 16) < 0)
		return moat_error_set(err, errno, "control socket");
	json_object_set_new(k->state, "status", json_string("created"));
	state_isolation(k);
	return state_write(k->dfd, k->state, err);
}

int moat__oci_keeper_main(const char *root, const char *id, const char *bundle, const char *console_socket,
			  int setup_fd)
{
	keeper k = {.id = id, .listen_fd = -1, .host_pty = -1, .sb_pty = -1, .dfd = -1, .ns = {-1, -1, -1, -1}};
	moat_error err = {0};
	_cleanup_policy_ moat_policy *p = NULL;
	_cleanup_config_ moat_config *c = NULL;
	moat_egress egress = {0};
	moat_audit *audit = NULL;
	int status = 125;
	(void)setsid();
	umask(077);
	_cleanup_close_ int rootfd = root_open(root, false, &err);
	_cleanup_close_ int klock = -1;
	if (rootfd >= 0 && (k.dfd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		moat_error_set(&err, errno, "container %s", id);
	if (k.dfd >= 0) {
		klock = openat(k.dfd, "keeper.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (klock < 0 || flock(klock, LOCK_EX | LOCK_NB) < 0)
			moat_error_set(&err, errno, "container %s: keeper lock", id);
	}
	int r = err.code ? -err.code
			 : keeper_setup(&k, bundle, console_socket && strcmp(console_socket, "-") != 0 ? console_socket : NULL,
					&p, &c, &egress, &audit, &err);
	char m[MOAT_ERROR_MAX + 64];
	const char *msg = r < 0 ? moat_error_format(&err, m, sizeof(m)) : "ok";
	ssize_t w = write(setup_fd, msg, strlen(msg));
	close(setup_fd);
	if (r >= 0 && w > 0) {
		keeper_loop(&k);
		status = k.exit_status;
	}
	if (k.sb) {
		moat_sandbox_destroy(k.sb, NULL, NULL);
		if (k.state) {
			json_object_set_new(k.state, "status", json_string("stopped"));
			(void)state_write(k.dfd, k.state, &err);
		}
	}
	for (size_t i = 0; i < k.n_execs; i++)
		close(k.execs[i].conn);
	if (k.listen_fd >= 0)
		close(k.listen_fd);
	if (k.host_pty >= 0)
		close(k.host_pty);
	if (k.sb_pty >= 0)
		close(k.sb_pty);
	for (size_t i = 0; i < ELEMENTSOF(k.ns); i++)
		if (k.ns[i] >= 0)
			close(k.ns[i]);
	moat_egress_done(&egress);
	moat_audit_close(audit);
	moat_oci_spec_free(k.spec);
	json_decref(k.state);
	if (k.dfd >= 0)
		close(k.dfd);
	return status;
}

/* ---- the commands ---- */

static int write_pid_file(const char *path, pid_t pid, moat_error *err)
{
	char tmp[PATH_MAX], text[32];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return moat_error_set(err, ENAMETOOLONG, "--pid-file %s", path);
	snprintf(text, sizeof(text), "%d", (int)pid);
	int r = moat__write_file_at(AT_FDCWD, tmp, text, 0644);
	if (r < 0)
		return moat_error_set(err, r, "--pid-file %s", path);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return moat_error_set(err, e, "--pid-file %s", path);
	}
	return 0;
}

int moat_oci_create(const char *root, const char *id, const moat_oci_create_opts *o, pid_t *ret_pid,
		    moat_error *err)
{
	if (!moat_oci_id_valid(id))
		return moat_error_set(err, MOAT_EINPUT, "container id \"%.64s\" is not valid", id ? id : "");
	char bundle[PATH_MAX];
	if (!realpath(o->bundle ? o->bundle : ".", bundle))
		return moat_error_set(err, errno, "--bundle %s", o->bundle ? o->bundle : ".");
	_cleanup_close_ int rootfd = root_open(root, true, err);
	if (rootfd < 0)
		return rootfd;
	if (mkdirat(rootfd, id, 0700) < 0)
		return errno == EEXIST ? moat_error_set(err, MOAT_EINPUT, "container %s exists already", id)
				       : moat_error_set(err, errno, "container %s: make its folder", id);
	int lock = -1;
	_cleanup_close_ int dfd = container_open(root, id, &lock, err);
	_cleanup_close_ int lockfd = lock;
	if (dfd < 0) {
		(void)unlinkat(rootfd, id, AT_REMOVEDIR);
		return dfd;
	}
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		container_remove(rootfd, id, dfd);
		return moat_error_set(err, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]), close(pipefd[1]);
		container_remove(rootfd, id, dfd);
		return moat_error_set(err, errno, "fork");
	}
	if (pid == 0) {
		/* The keeper starts from moat's binary, not from this heap. */
		if (dup2(pipefd[1], 3) < 0)
			_exit(125);
		const char *exe = o->exe ? o->exe : "/proc/self/exe";
		char *const argv[] = {"moat", "__oci-keeper", (char *)root, (char *)id, bundle,
				      (char *)(o->console_socket ? o->console_socket : "-"), NULL};
		char *const envp[] = {NULL};
		execve(exe, argv, envp);
		_exit(125);
	}
	close(pipefd[1]);
	char msg[MOAT_ERROR_MAX + 64];
	ssize_t n;
	do
		n = read(pipefd[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (n <= 0 || strcmp(msg, "ok") != 0) {
		(void)waitpid(pid, NULL, 0);
		container_remove(rootfd, id, dfd);
		if (n <= 0)
			return moat_error_set(err, EIO, "container %s: its keeper did not start", id);
		return moat_error_set_said(err, MOAT_EINPUT, "%s", msg);
	}
	if (o->pid_file) {
		int r = write_pid_file(o->pid_file, pid, err);
		if (r < 0) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			container_remove(rootfd, id, dfd);
			return r;
		}
	}
	*ret_pid = pid;
	return 0;
}

/* Opens the container and its keeper's connection, with the lock held. */
static int live_open(const char *root, const char *id, int *ret_lock, int *ret_conn, json_t **ret_state,
		     moat_error *err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_close_ int dfd = container_open(root, id, &lock, err);
	if (dfd < 0)
		return dfd;
	_cleanup_json_ json_t *st = NULL;
	int r = state_read(dfd, &st, err);
	if (r < 0)
		return r;
	const char *status = json_string_value(json_object_get(st, "status"));
	if (!status || strcmp(status, "stopped") == 0)
		return moat_error_set(err, MOAT_EINPUT, "container %s is not running", id);
	int conn = keeper_connect(dfd, id, err);
	if (conn < 0)
		return conn;
	*ret_conn = conn;
	*ret_lock = TAKE_FD(lock);
	if (ret_state)
		*ret_state = TAKE_PTR(st);
	return TAKE_FD(dfd);
}

int moat_oci_start(const char *root, const char *id, moat_error *err)
{
	int lock = -1, conn = -1;
	_cleanup_json_ json_t *st = NULL;
	_cleanup_close_ int dfd = live_open(root, id, &lock, &conn, &st, err);
	_cleanup_close_ int lockfd = lock, connfd = conn;
	if (dfd < 0)
		return dfd;
	const char *status = json_string_value(json_object_get(st, "status"));
	if (strcmp(status, "created") != 0)
		return moat_error_set(err, MOAT_EINPUT, "container %s is %s, not created", id, status);
	return keeper_call(connfd, id, "start", NULL, 0, NULL, 0, NULL, err);
}

int moat_oci_state(const char *root, const char *id, char **ret_json, moat_error *err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_close_ int dfd = container_open(root, id, &lock, err);
	if (dfd < 0)
		return dfd;
	_cleanup_json_ json_t *st = NULL;
	int r = state_read(dfd, &st, err);
	if (r < 0)
		return r;
	*ret_json = json_dumps(st, JSON_INDENT(2));
	return *ret_json ? 0 : moat_error_set(err, ENOMEM, "state");
}

int moat_oci_kill(const char *root, const char *id, int sig, bool all, moat_error *err)
{
	if (sig <= 0 || sig >= NSIG)
		return moat_error_set(err, MOAT_EINPUT, "signal %d is not one", sig);
	int lock = -1, conn = -1;
	_cleanup_close_ int dfd = live_open(root, id, &lock, &conn, NULL, err);
	_cleanup_close_ int lockfd = lock, connfd = conn;
	if (dfd < 0)
		return dfd;
	char req[64];
	snprintf(req, sizeof(req), "kill %d %d", sig, all ? 1 : 0);
	return keeper_call(connfd, id, req, NULL, 0, NULL, 0, NULL, err);
}

int moat_oci_delete(const char *root, const char *id, bool force, moat_error *err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_close_ int dfd = container_open(root, id, &lock, err);
	if (dfd < 0 && force && moat_oci_id_valid(id)) {
		/* With --force, a container that is not there is deleted
		 * already, as runc has it (podman cleans up so after a create
		 * that failed). */
		_cleanup_close_ int rfd = root_open(root, false, NULL);
		struct stat st;
		if (rfd == -ENOENT || (rfd >= 0 && fstatat(rfd, id, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)) {
			moat_error_clear(err);
			return 0;
		}
	}
	if (dfd < 0)
		return dfd;
	_cleanup_close_ int rootfd = root_open(root, false, err);
	if (rootfd < 0)
		return rootfd;
	_cleanup_json_ json_t *st = NULL;
	if (state_read(dfd, &st, err) < 0)
		moat_error_clear(err); /* a folder without state: a create that died */
	const char *status = st ? json_string_value(json_object_get(st, "status")) : NULL;
	if (keeper_alive(dfd)) {
		if (status && strcmp(status, "running") == 0 && !force)
			return moat_error_set(err, MOAT_EINPUT,
					      "container %s is running: stop it first, or delete it with --force", id);
		_cleanup_close_ int conn = keeper_connect(dfd, id, err);
		if (conn >= 0) {
			int r = keeper_call(conn, id, "kill 9 1", NULL, 0, NULL, 0, NULL, err);
			/* A keeper whose container just ended may close
			 * without an answer: it is on its way out. */
			if (r < 0 && !keeper_gone_within(dfd, 10000))
				return r;
			moat_error_clear(err);
		} else {
			moat_error_clear(err);
		}
		keeper_wait_gone(dfd);
	}
	container_remove(rootfd, id, dfd);
	return 0;
}

int moat_oci_list(const char *root, char **ret_json, moat_error *err)
{
	_cleanup_json_ json_t *list = json_array();
	if (!list)
		return moat_error_set(err, ENOMEM, "list");
	int rootfd = root_open(root, false, err);
	if (rootfd == -ENOENT) {
		moat_error_clear(err);
		*ret_json = json_dumps(list, 0);
		return 0;
	}
	if (rootfd < 0)
		return rootfd;
	DIR *d = fdopendir(rootfd);
	if (!d) {
		close(rootfd);
		return moat_error_set(err, errno, "--root %s", root);
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!moat_oci_id_valid(e->d_name))
			continue;
		_cleanup_close_ int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		json_t *st = NULL;
		moat_error sub = {0};
		if (dfd >= 0 && state_read(dfd, &st, &sub) == 0)
			json_array_append_new(list, st);
	}
	closedir(d);
	*ret_json = json_dumps(list, JSON_INDENT(2));
	return *ret_json ? 0 : moat_error_set(err, ENOMEM, "list");
}

/* The process JSON for an exec from argv (and the container's cwd). */
static int exec_process_json(const moat_oci_exec_opts *o, char **ret, moat_error *err)
{
	if (o->process_file) {
		_cleanup_free_ char *text = NULL;
		int r = moat__read_file_at(AT_FDCWD, o->process_file, MSG_MAX - 16, &text);
		if (r < 0)
			return moat_error_set(err, r, "--process %s", o->process_file);
		/* Parsed here too, so that a bad file is named before the
		 * keeper is asked. */
		_cleanup_oci_spec_ moat_oci_spec *p = NULL;
		if ((r = moat_oci_process_parse(text, strlen(text), &p, err)) < 0)
			return moat_error_wrap(err, "--process %s", o->process_file);
		if (o->tty && !p->terminal) {
			_cleanup_json_ json_t *j = json_loads(text, 0, NULL);
			json_object_set_new(j, "terminal", json_true());
			*ret = json_dumps(j, JSON_COMPACT);
		} else {
			*ret = TAKE_PTR(text);
		}
		return *ret ? 0 : moat_error_set(err, ENOMEM, "exec");
	}
	if (!o->argv || !o->argv[0])
		return moat_error_set(err, MOAT_EINPUT, "exec: no command given (--process FILE or COMMAND [ARG...])");
	_cleanup_json_ json_t *args = json_array(), *env = json_array();
	for (char *const *a = o->argv; *a; a++)
		json_array_append_new(args, json_string(*a));
	json_array_append_new(env, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
	for (char *const *e = o->env; e && *e; e++)
		json_array_append_new(env, json_string(*e));
	_cleanup_json_ json_t *p = json_pack("{s:O, s:O, s:s, s:b}", "args", args, "env", env, "cwd",
					     o->cwd ? o->cwd : "/", "terminal", o->tty);
	*ret = p ? json_dumps(p, JSON_COMPACT) : NULL;
	return *ret ? 0 : moat_error_set(err, ENOMEM, "exec");
}

static int exec_wait_status(int conn)
{
	char buf[128];
	int fds[4];
	ssize_t n = recv_msg(conn, buf, sizeof(buf), fds);
	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	int status = 0;
	if (n > 0 && sscanf(buf, "exit %d", &status) == 1)
		return status;
	return 137; /* the container ended under it */
}

int moat_oci_exec(const char *root, const char *id, const moat_oci_exec_opts *o, int *ret_status, moat_error *err)
{
	_cleanup_free_ char *process = NULL;
	int r = exec_process_json(o, &process, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *req = NULL;
	if (asprintf(&req, "exec %s", process) < 0)
		return moat_error_set(err, ENOMEM, "exec");
	if (strlen(req) >= MSG_MAX)
		return moat_error_set(err, MOAT_EINPUT, "exec: the process is larger than %d bytes", MSG_MAX);
	int conn = -1;
	{
		int lock = -1;
		_cleanup_close_ int dfd = live_open(root, id, &lock, &conn, NULL, err);
		_cleanup_close_ int lockfd = lock;
		if (dfd < 0)
			return dfd;
	}
	_cleanup_close_ int connfd = conn;
	int fds[3] = {0, 1, 2};
	bool tty = strstr(process, "\"terminal\":true") || strstr(process, "\"terminal\": true");
	int pty = -1;
	r = keeper_call(connfd, id, req, tty ? NULL : fds, tty ? 0 : 3, NULL, 0, &pty, err);
	if (r < 0)
		return r;
	_cleanup_close_ int ptyfd = pty;
	if (ptyfd >= 0) {
		if (!o->console_socket)
			return moat_error_set(err, MOAT_EINPUT, "exec --tty needs --console-socket");
		if ((r = console_send(o->console_socket, ptyfd, err)) < 0)
			return r;
	}
	if (!o->detach) {
		*ret_status = exec_wait_status(connfd);
		return 0;
	}
	pid_t pid = fork();
	if (pid < 0)
		return moat_error_set(err, errno, "fork");
	if (pid == 0)
		_exit(exec_wait_status(connfd));
	if (o->pid_file && (r = write_pid_file(o->pid_file, pid, err)) < 0) {
		kill(pid, SIGKILL);
		return r;
	}
	*ret_status = 0;
	return 0;
}

char *moat_oci_features_json(void)
{
	_cleanup_json_ json_t *ns = json_array(), *caps = json_array(), *acts = json_array(), *ops = json_array();
	for (int i = 0; i < _MOAT_OCI_NS_MAX; i++)
		if (i != MOAT_OCI_NS_TIME)
			json_array_append_new(ns, json_string(moat_oci_ns_to_string((moat_oci_ns)i)));
	/* Only what moat may grant: nothing. */
	for (unsigned c = 0; moat_oci_cap_to_string(c); c++)
		if (MOAT_OCI_CAPS_ALLOWED & (UINT64_C(1) << c))
			json_array_append_new(caps, json_string(moat_oci_cap_to_string(c)));
	for (int i = 0; i < _MOAT_OCI_SCMP_MAX; i++)
		json_array_append_new(acts, json_string(moat_oci_seccomp_action_to_string((moat_oci_seccomp_action)i)));
	for (int i = 0; i < _MOAT_OCI_SCMP_CMP_MAX; i++)
		json_array_append_new(ops, json_string(moat_oci_seccomp_op_to_string((moat_oci_seccomp_op)i)));
	/* No hooks are run (oci-spec.h): the list is empty. */
	_cleanup_json_ json_t *f = json_pack(
		"{s:s, s:s, s:[], s:[s,s,s,s], s:{s:O, s:O, s:{s:b, s:b}, s:{s:b, s:O, s:O}, s:{s:b}}, s:{s:s}}",
		"ociVersionMin", "1.0.0", "ociVersionMax", MOAT_OCI_VERSION, "hooks", "mountOptions", "bind", "rbind",
		"ro", "rw", "linux", "namespaces", ns, "capabilities", caps, "cgroup", "v1", true, "v2", true, "seccomp",
		"enabled", true, "actions", acts, "operators", ops, "apparmor", "enabled", false, "annotations",
		"dev.moat.runtime", "moat");
	return f ? json_dumps(f, JSON_INDENT(2)) : NULL;
}
