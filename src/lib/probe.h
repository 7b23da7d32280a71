/* What this host lets moat enforce. moat_host_probe() looks at the running
 * kernel and the caller's rights (it forks and reads /proc and /sys); every
 * other function here is pure, so `moat doctor`, the require check and the
 * tests work on a filled-in moat_host. */
#pragma once

#include "error.h"

#include <stdbool.h>

typedef struct moat_host {
	bool is_root;
	/* User namespaces. */
	bool userns_works;               /* this caller created one */
	int userns_errno;                /* why not, when it failed */
	long max_user_namespaces;        /* user.max_user_namespaces, -1 unknown */
	int unprivileged_userns_clone;   /* kernel.unprivileged_userns_clone, -1 absent */
	int apparmor_restrict_userns;    /* kernel.apparmor_restrict_unprivileged_userns, -1 absent */
	/* seccomp. */
	bool seccomp_filter;
	bool seccomp_errno, seccomp_user_notif, seccomp_log, seccomp_kill_process;
	/* Landlock. */
	int landlock_abi;                /* 0 when unusable */
	int landlock_errno;              /* ENOSYS: not built; EOPNOTSUPP: not enabled at boot */
	/* cgroups. */
	char cgroup[8];                  /* "v2", "hybrid", "v1", "none" */
	bool cgroup_memory, cgroup_pids, cgroup_cpu; /* usable (writable) by this caller */
	char cgroup_where[96];           /* where those controllers are */
	/* Kernel interfaces moat uses when present. */
	bool overlayfs, pidfd, openat2, clone3, clone_into_cgroup;
	/* Transparent egress (--net transparent): the rules were set up in a
	 * throwaway namespace; else why not. */
	bool transparent_egress;
	char transparent_error[160];
} moat_host;

typedef enum moat_check_state {
	MOAT_CHECK_OK = 0,
	MOAT_CHECK_PARTIAL,
	MOAT_CHECK_MISSING,
	_MOAT_CHECK_MAX,
	_MOAT_CHECK_INVALID = -1,
} moat_check_state;

typedef struct moat_check {
	const char *name;     /* static */
	moat_check_state state;
	bool needed_by_code;  /* the code runner is not fully enforced without it */
	char detail[192];
	char fix[224];        /* what to change, when not OK */
} moat_check;

#define MOAT_HOST_CHECKS_MAX 16

/* Probes the running host for the calling user. Never fails: what cannot
 * be learned is reported as missing. */
void moat_host_probe(moat_host *ret);
/* Pure: the list `moat doctor` prints. Returns the number of checks. */
size_t moat_host_checks(const moat_host *h, moat_check *ret, size_t max);
/* Pure: true when every check the code runner needs is OK. */
bool moat_host_code_profile_enforced(const moat_check *checks, size_t n);
const char *moat_check_state_to_string(moat_check_state s);

/* Layers a policy may require (`require: [seccomp, landlock]`): userns,
 * netns, seccomp, landlock, landlock-net, landlock-scope, cgroup. */
bool moat_layer_name_known(const char *name);
/* Pure: fails with MOAT_EINPUT naming the first required layer this host
 * cannot give, and the fix. required is NULL-terminated. */
int moat_host_require(const moat_host *h, char *const *required, moat_error *err);
