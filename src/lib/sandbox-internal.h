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
 * SOCK_SEQPACKET keeps each one whole. */
typedef enum moat_ctl_type {
	MOAT_CTL_GO = 1,          /* sup -> init: maps written, cgroup joined */
	MOAT_CTL_SIGNAL,          /* sup -> init: forward signal a */
	MOAT_CTL_SETUP_ERROR,     /* init -> sup: errno a, text */
	MOAT_CTL_STARTED,         /* init -> sup: command forked, pid a (in ns) */
	MOAT_CTL_EXEC_FAILED,     /* init -> sup: errno a, text = command */
	MOAT_CTL_EXITED,          /* init -> sup: wait status a of the command */
	MOAT_CTL_FD,              /* init -> sup: an fd rides along (b = kind) */
	MOAT_CTL_CGROUP_JOINED,   /* sup -> init: the init is in the run's cgroup */
} moat_ctl_type;

typedef enum moat_ctl_fd_kind {
	MOAT_CTL_FD_PTY_MASTER = 1,
	MOAT_CTL_FD_PROXY_LISTENER,
	MOAT_CTL_FD_NOTIFY,
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

/* Everything the init needs, prepared by the supervisor before clone so the
 * child never allocates from state the parent might have half-built. */
typedef struct moat_init_args {
	const moat_config *config;
	int ctl_fd;            /* control socket, init side */
	int stdin_fd;          /* for the command */
	int stdout_fd;
	int stderr_fd;
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

/* mount.c: builds the read-only root and pivots into it. */
int moat__rootfs_setup(const moat_init_args *a, moat_isolation *iso, moat_error *err);

/* net.c: brings up loopback in the new network namespace. */
int moat__net_loopback_up(moat_error *err);

/* outdir.c, after the run, from the host: makes what the run left in the
 * output directory harmless to read (links out, FIFOs, sockets, devices,
 * setuid bits): how many entries were removed and how many modes fixed. */
int moat__out_sanitize(const char *out_dir, unsigned *ret_removed, unsigned *ret_fixed, moat_error *err);
