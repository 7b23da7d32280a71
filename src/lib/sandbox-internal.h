/* Internal interfaces between the sandbox sequencer (sandbox.c), the init
 * that runs as pid 1 inside (init.c) and the mechanisms they call. */
#pragma once

#include "config.h"
#include "limits.h"
#include "result.h"

#include <sys/types.h>

/* The uid and gid the sandboxed command has inside its user namespace. */
#define MOAT_SANDBOX_UID 1000
#define MOAT_SANDBOX_GID 1000
/* As root, what the sandbox user is on the host: an unprivileged id, never
 * host root (see docs/security.md). */
#define MOAT_ROOT_HOST_UID 65534
#define MOAT_ROOT_HOST_GID 65534

/* Messages on the control socket between the supervisor and the init.
 * SOCK_SEQPACKET keeps each one whole. GO carries the protocol's version:
 * an init of another version refuses it (docs/architecture.md). */
#define MOAT_CTL_VERSION 1

typedef enum moat_ctl_type {
	MOAT_CTL_GO = 1,          /* sup -> init: maps written; a = version */
	MOAT_CTL_SIGNAL,          /* sup -> init: forward signal a */
	MOAT_CTL_SETUP_ERROR,     /* init -> sup: errno a, text */
	MOAT_CTL_STARTED,         /* init -> sup: command forked, pid a (in ns) */
	MOAT_CTL_EXEC_FAILED,     /* init -> sup: errno a, text = command */
	MOAT_CTL_EXITED,          /* init -> sup: wait status a of the command */
	MOAT_CTL_FD,              /* init -> sup: an fd rides along (b = kind) */
	MOAT_CTL_CGROUP_JOINED,   /* sup -> init: the init is in the run's cgroup */
	MOAT_CTL_SPAWN,           /* sup -> init: start the command; its stdin,
				   * stdout and stderr ride along (SCM_RIGHTS) */
} moat_ctl_type;

typedef enum moat_ctl_fd_kind {
	MOAT_CTL_FD_PTY_MASTER = 1,
	MOAT_CTL_FD_PROXY_LISTENER,
	MOAT_CTL_FD_NOTIFY,
	MOAT_CTL_FD_OUT_TMPFS, /* the capped /out, for the copy-out (outdir.c) */
	MOAT_CTL_FD_TRANSPARENT_LISTENER, /* redirected TCP (netnat.h) */
	MOAT_CTL_FD_DNS_STUB,             /* the DNS stub's UDP socket */
} moat_ctl_fd_kind;

typedef struct moat_ctl_msg {
	int type;
	int a;
	int b;
	char text[1024];
} moat_ctl_msg;

int moat__ctl_send(int fd, int type, int a, int b, const char *text);
int moat__ctl_send_fd(int fd, int kind, int passfd);
/* Sends len bytes of binary data in the text field (len < its size). */
int moat__ctl_send_data(int fd, int type, int a, int b, const void *data, size_t len);
/* Receives one message; *ret_fd gets a passed fd or -1. Returns 0, or
 * -EPIPE at EOF, or -errno. */
int moat__ctl_recv(int fd, moat_ctl_msg *m, int *ret_fd);
/* A message of type with a and n descriptors (n <= MOAT_CTL_MAX_FDS). */
#define MOAT_CTL_MAX_FDS 3
int moat__ctl_send_fds(int fd, int type, int a, const int *fds, size_t n);
/* Receives one message with up to max descriptors into fds (*ret_n of
 * them; any beyond max are closed). Returns as moat__ctl_recv. */
int moat__ctl_recv_fds(int fd, moat_ctl_msg *m, int *fds, size_t max, size_t *ret_n);

/* A host path the init binds, resolved by the supervisor before clone
 * (hostpath.h): inside its user namespace the init sees host root as the
 * overflow uid and could not tell a root-owned link from one the sandbox
 * planted. real is the path of what was found, free of links; the init
 * opens it with RESOLVE_NO_SYMLINKS and checks it is still the same inode. */
typedef struct moat_host_src {
	const char *path; /* as given */
	char *real;       /* NULL when missing */
	dev_t dev;
	ino_t ino;
} moat_host_src;

#define MOAT_MAX_HOST_SRCS (MOAT_MAX_BINDS + 32)

typedef struct moat_host_srcs {
	moat_host_src v[MOAT_MAX_HOST_SRCS];
	size_t n;
} moat_host_srcs;

/* mount.c, in the supervisor: resolves every host path the root
 * filesystem will bind (the system folders, --out, --ro and --rw). */
int moat__rootfs_resolve_sources(const moat_config *c, moat_host_srcs *ret, moat_error *err);
void moat__rootfs_sources_free(moat_host_srcs *s);

/* Everything the init needs, prepared by the supervisor before clone so the
 * child never allocates from state the parent might have half-built. */
typedef struct moat_init_args {
	const moat_config *config;
	int ctl_fd;            /* control socket, init side; the command's
				* streams come over it with MOAT_CTL_SPAWN */
	bool rootless;
	bool tty;
	char **envp;           /* the command's environment */
	const char *cwd;       /* inside */
	bool out_bound;
	/* limits.c: rlimits standing in for what no cgroup enforces, and
	 * whether to wait for MOAT_CTL_CGROUP_JOINED before forking the
	 * command (the supervisor joins the init to a v1 cgroup while the
	 * init sets up the root filesystem). */
	moat_rlimit_plan rlimits;
	bool wait_cgroup;
	bool file_trail;       /* install the file trail's notify filter */
	const moat_host_srcs *host_srcs;
	/* The run's own cgroup directories, bound read-only under
	 * /sys/fs/cgroup so runtimes see their limits (mount.c). */
	moat_cgroup_mount cgroup_mounts[_MOAT_CG_MAX];
	size_t n_cgroup_mounts;
} moat_init_args;

/* The body of pid 1 inside the sandbox. Never returns. */
_noreturn_ void moat__init_main(const moat_init_args *a);

/* userns.c: writes uid_map, setgroups and gid_map of pid, from the host. */
int moat__userns_write_maps(pid_t pid, bool rootless, uid_t host_uid, gid_t host_gid, moat_error *err);
/* Inside, after the maps exist: become the sandbox user, keeping the
 * capabilities the rest of setup needs. */
int moat__userns_become_sandbox_user(bool rootless, moat_error *err);

/* Limits the kernel keeps per user namespace (/proc/sys/user/NAME). The
 * sandbox's namespace belongs to the caller, so what the sandbox holds of
 * these objects is charged to the caller's host user too (as root: to host
 * root); the values below bound that. */
typedef struct moat_userns_limit {
	const char *name;
	unsigned value;
} moat_userns_limit;
/* Pure: the limits for a profile ("code" or "agent"), ending with a NULL
 * name. */
const moat_userns_limit *moat__userns_limits(const char *profile);
/* In the init, while it holds every capability of its namespace: writes
 * them into the files under sys_user_fd (/proc/sys/user). A kernel that
 * lacks one of the files lacks that kind of object. */
int moat__userns_set_limits(int sys_user_fd, const char *profile, moat_error *err);

/* mount.c: builds the read-only root and pivots into it. */
int moat__rootfs_setup(const moat_init_args *a, moat_isolation *iso, moat_error *err);
/* Part of it, callable alone (tests bind a fake tree into a scratch root):
 * binds the run's cgroup directories read-only below rootfd's
 * sys/fs/cgroup, as moat__cgroup_mounts() lists them. Needs a mount
 * namespace of its own. */
int moat__rootfs_cgroup(int rootfd, const moat_cgroup_mount *mounts, size_t n, moat_error *err);

/* net.c: brings up loopback in the new network namespace. */
int moat__net_loopback_up(moat_error *err);

/* outdir.c, after the run, from the host: makes what the run left in the
 * output directory harmless to read (links out, FIFOs, sockets, devices,
 * setuid bits): how many entries were removed and how many modes fixed. */
int moat__out_sanitize(const char *out_dir, unsigned *ret_removed, unsigned *ret_fixed, moat_error *err);

/* outdir.c, pure: whether /out is a tmpfs capped at limits.disk and
 * limits.inodes, copied out to the host's --out folder after the run
 * (true when either limit is set), or the host folder bound in place (the
 * agent profile's workspace, exec.workspace: it keeps the folder's files
 * live, and the two limits are reported as not enforced). */
bool moat__out_capped(const moat_config *c);

/* outdir.c: records in r what enforces limits.disk and limits.inodes. */
void moat__out_enforced(const moat_config *c, moat_result *r);

/* outdir.c, after the run, from the host: checks the capped /out (out_fs,
 * the tmpfs's mount descriptor, which nothing of the run can reach any
 * more) with the same hygiene walk, then copies it into the --out folder.
 * The copy writes at most limits.disk bytes and limits.inodes entries (hard
 * links and sparse files cannot make it larger than what the cap held);
 * anything that stops it is an error: the folder may then hold part of the
 * output, and the run is a setup error. */
int moat__out_copy_out(const moat_config *c, int out_fs, unsigned *ret_removed, unsigned *ret_fixed,
		       moat_error *err);
