/* seccomp: the system calls a sandboxed program never needs and that carry
 * most of the kernel's escape history. The filter allows by default and
 * denies a list, built with libseccomp (no hand-written BPF). A denied call
 * fails with EPERM (ENOSYS where programs need it to fall back), so a program
 * sees an ordinary error instead of dying without a word.
 *
 * Counting denials: an ERRNO action leaves no trace the supervisor can read.
 * Two ways exist: SCMP_FLTATR_CTL_LOG makes the kernel log every non-allow
 * action to the audit log (host-wide, rate-limited, and readable only by the
 * host's root), and a SCMP_ACT_NOTIFY filter hands each denied call to a
 * supervisor over a file descriptor, which answers with the error and counts.
 * moat leaves both off by default: the first floods the host's log on demand
 * of the sandboxed code, the second puts a round trip to the supervisor on a
 * path the code controls. See docs/security.md. */
#include "confine.h"
#include "seccomp-profile.h"

#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static void ctx_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}
#define _cleanup_seccomp_ _cleanup_(ctx_releasep)

/* Denied outright with EPERM in every profile. */
static const char *const deny_eperm[] = {
	/* Mounts and the new mount API: the rootfs is moat's, not the code's. */
	"mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
	"open_tree", "move_mount", "mount_setattr",
	/* Namespaces: nested user namespaces reopen the kernel's attack surface
	 * to an unprivileged user (CVE-2022-0185, CVE-2023-32233). */
	"unshare", "setns",
	/* Other processes' memory. */
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
	/* The kernel keyring is not namespaced. */
	"keyctl", "add_key", "request_key",
	/* Large, often exploited kernel interfaces. */
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"fanotify_init", "lookup_dcookie", "move_pages", "migrate_pages",
	/* Memory that even the kernel's own /proc/PID/mem refuses to read:
	 * the file trail reads paths from the caller's memory, and a path kept
	 * there would go unrecorded. Nothing a sandboxed program does needs it. */
	"memfd_secret",
	/* The kernel itself. */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "create_module",
	"reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "quotactl_fd", "iopl", "ioperm",
	"uselib", "nfsservctl", "vhangup", "_sysctl", "sysfs", "ustat",
	/* File handles bypass the mount namespace (the "shocker" escape). */
	"open_by_handle_at", "name_to_handle_at",
	/* Clocks are global. */
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	/* Names of the host (the uts namespace hides them; this keeps it so). */
	"sethostname", "setdomainname",
};

/* Denied with EPERM in the code profile only (see moat__seccomp_build). */
static const char *const deny_code_eperm[] = {"inotify_init", "inotify_init1", "inotify_add_watch"};

/* Denied with ENOSYS: glibc falls back to clone(), whose flags the filter can
 * read; clone3 passes them in memory, out of seccomp's reach. */
static const char *const deny_enosys[] = {"clone3"};

static const char *const profile_names[] = {"code", "agent"};

bool moat__seccomp_profile_known(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(profile_names); i++)
		if (moat__streq(name, profile_names[i]))
			return true;
	return false;
}

typedef struct builder {
	scmp_filter_ctx ctx;
	unsigned rules;
	moat_error *err;
} builder;

static int add(builder *b, int err_no, const char *name, unsigned n, const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);
	/* A name libseccomp does not know, or knows only as a pseudo-number
	 * (negative), is a call the native architecture lacks; the bad-arch
	 * action covers the ABIs that have it. */
	if (nr == __NR_SCMP_ERROR || nr < 0)
		return 0;
	int r = seccomp_rule_add_array(b->ctx, SCMP_ACT_ERRNO((uint32_t)err_no), nr, n, cmp);
	if (r < 0)
		return moat_error_set(b->err, r, "seccomp rule for %s", name);
	b->rules++;
	return 0;
}

static int add_masked(builder *b, int err_no, const char *name, unsigned arg, uint64_t mask, uint64_t value)
{
	struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, mask, value);
	return add(b, err_no, name, 1, &cmp);
}

static int add_socket_rules(builder *b, bool netlink_route)
{
	/* The kernel reads the family as an int: compare the low 32 bits only, so
	 * high bits in the register change nothing. Families are enumerated
	 * because libseccomp cannot say "not one of"; the kernel refuses any
	 * family past AF_MAX (46 today) on its own. */
	for (uint64_t fam = 0; fam < 64; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6)
			continue;
		if (fam == AF_NETLINK && netlink_route)
			continue;
		int r = add_masked(b, EAFNOSUPPORT, "socket", 0, 0xffffffffu, fam);
		if (r >= 0)
			r = add_masked(b, EAFNOSUPPORT, "socketpair", 0, 0xffffffffu, fam);
		if (r < 0)
			return r;
	}
	if (!netlink_route)
		return 0;
	/* NETLINK_ROUTE (protocol 0) only: getifaddrs() needs it (glibc's
	 * getaddrinfo with AI_ADDRCONFIG, Node's and Go's interface lists). In a
	 * network namespace holding only loopback, and without CAP_NET_ADMIN, it
	 * can only read. Every other netlink protocol (audit, netfilter, uevent,
	 * crypto...) stays closed; the kernel has at most 32. */
	for (uint64_t proto = 1; proto < 32; proto++) {
		struct scmp_arg_cmp cmp[2] = {
			SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_NETLINK),
			SCMP_CMP(2, SCMP_CMP_MASKED_EQ, 0xffffffffu, proto),
		};
		int r = add(b, EPROTONOSUPPORT, "socket", 2, cmp);
		if (r < 0)
			return r;
	}
	return 0;
}

static int add_personality_rules(builder *b)
{
	/* Only PER_LINUX (0) and the query 0xffffffff are allowed: the other
	 * values weaken ASLR (ADDR_NO_RANDOMIZE), make data executable
	 * (READ_IMPLIES_EXEC) or map page zero. libseccomp allows one comparison
	 * per argument in a rule, so "v is neither 0 nor all ones" is written bit
	 * by bit on the low 32 bits the kernel reads: bit 31 clear with another
	 * bit set, or bit 31 set with another bit clear. */
	for (unsigned i = 0; i < 31; i++) {
		uint64_t mask = (1ull << 31) | (1ull << i);
		int r = add_masked(b, EPERM, "personality", 0, mask, 1ull << i);
		if (r >= 0)
			r = add_masked(b, EPERM, "personality", 0, mask, 1ull << 31);
		if (r < 0)
			return r;
	}
	return 0;
}

static int add_clone_rules(builder *b)
{
	/* clone's first argument holds the flags: any namespace flag is refused.
	 * CLONE_NEWTIME shares its bit with the exit signal in clone() and is
	 * only meaningful to clone3 and unshare, both denied above. */
	static const uint64_t ns_flags[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
					    CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP};
	for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
		int r = add_masked(b, EPERM, "clone", 0, ns_flags[i], ns_flags[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int add_ioctl_rules(builder *b)
{
	/* TIOCSTI pushes bytes into the terminal's input, to be read by the
	 * shell outside once the sandbox exits; TIOCLINUX can do the same on a
	 * virtual console; TIOCSETD changes the line discipline (CVE-2017-2636).
	 * The kernel reads the request as an unsigned int, so the comparison
	 * masks the low 32 bits: comparing the whole 64-bit register let a
	 * request with high bits set through (CVE-2019-10063). */
	static const uint64_t reqs[] = {TIOCSTI, TIOCLINUX, TIOCSETD};
	for (size_t i = 0; i < ELEMENTSOF(reqs); i++) {
		int r = add_masked(b, EPERM, "ioctl", 1, 0xffffffffu, reqs[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int moat__seccomp_build(const char *profile, void **ret_ctx, unsigned *ret_rules, moat_error *err)
{
	if (!profile)
		profile = "code";
	if (!moat__seccomp_profile_known(profile))
		return moat_error_set(err, MOAT_EINPUT, "unknown seccomp profile '%s' (expected code or agent)", profile);

	_cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return moat_error_set(err, ENOMEM, "seccomp filter");
	/* Only the native ABI is in the filter. A call through another one
	 * (int 0x80 for i386, the x32 bit) is a different syscall table the rules
	 * above do not describe, so it fails as "no such call". libseccomp also
	 * sends x32 numbers on x86_64 to this action. */
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
	if (r < 0)
		return moat_error_set(err, r, "seccomp: refuse foreign ABIs");
	/* A binary tree keeps the cost of the long socket and personality lists
	 * off every other call; older libseccomp lacks it and stays linear. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	builder b = {.ctx = ctx, .rules = 0, .err = err};
	for (size_t i = 0; i < ELEMENTSOF(deny_eperm); i++)
		if ((r = add(&b, EPERM, deny_eperm[i], 0, NULL)) < 0)
			return r;
	for (size_t i = 0; i < ELEMENTSOF(deny_enosys); i++)
		if ((r = add(&b, ENOSYS, deny_enosys[i], 0, NULL)) < 0)
			return r;
	/* The code runner has nothing to list (loopback only) and glibc copes
	 * without netlink; the agent runs tools that enumerate interfaces. */
	bool netlink_route = strcmp(profile, "agent") == 0;
	/* inotify watches inodes, and the sandbox's /usr, /bin and /lib are
	 * the host's own inodes: a watch on them shows, live, every program
	 * and library any host user opens. The strict runner has no use for
	 * it. The agent profile keeps it for its tools (file watchers, dev
	 * servers), bounded by the per-namespace limits (userns.c); see
	 * docs/security.md. fanotify is denied in every profile above. */
	if (strcmp(profile, "code") == 0)
		for (size_t i = 0; i < ELEMENTSOF(deny_code_eperm); i++)
			if ((r = add(&b, EPERM, deny_code_eperm[i], 0, NULL)) < 0)
				return r;
	if ((r = add_clone_rules(&b)) < 0 || (r = add_ioctl_rules(&b)) < 0 ||
	    (r = add_personality_rules(&b)) < 0 || (r = add_socket_rules(&b, netlink_route)) < 0)
		return r;

	*ret_ctx = TAKE_PTR(ctx);
	*ret_rules = b.rules;
	return 0;
}

void moat__seccomp_free(void *ctx)
{
	if (ctx)
		seccomp_release(ctx);
}

const char *moat__confine_profile(const moat_config *c)
{
	/* A policy file without a built-in profile behind it gets the agent's
	 * filter when it has egress (its tools list interfaces), else the
	 * code runner's. */
	return c->profile ? c->profile : moat_net_uses_gateway(c->net) ? "agent" : "code";
}

int moat__seccomp_compile(const moat_config *c, moat_seccomp_prog *ret, moat_error *err)
{
	const char *profile = moat__confine_profile(c);
	_cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
	unsigned rules = 0;
	int r = moat__seccomp_build(profile, &ctx, &rules, err);
	if (r < 0)
		return r;
	/* libseccomp 2.5 exports only to a descriptor: the program goes
	 * through a memfd, whose size then is the program's. */
	_cleanup_close_ int fd = memfd_create("moat-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "seccomp filter '%s': memfd", profile);
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return moat_error_set(err, -r, "compile seccomp filter '%s'", profile);
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
		return moat_error_set(err, EOVERFLOW, "seccomp filter '%s': a program of %lld bytes", profile,
				      (long long)size);
	_cleanup_free_ struct sock_filter *insns = malloc((size_t)size);
	if (!insns)
		return moat_error_set(err, ENOMEM, "seccomp filter '%s'", profile);
	errno = 0;
	if (pread(fd, insns, (size_t)size, 0) != size)
		return moat_error_set(err, errno ? errno : EIO, "seccomp filter '%s': read it back", profile);
	ret->insns = TAKE_PTR(insns);
	ret->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
	ret->rules = rules;
	snprintf(ret->profile, sizeof(ret->profile), "%s", profile);
	return 0;
}

int moat__seccomp_load(const moat_seccomp_prog *p, moat_isolation *iso, moat_error *err)
{
	if (!p->insns || !p->len)
		return moat_error_set(err, EINVAL, "no seccomp filter compiled");
	/* What seccomp_load does with the attributes moat__seccomp_build
	 * leaves at their defaults: no_new_privs on (SCMP_FLTATR_CTL_NNP),
	 * and none of TSYNC, LOG, SPEC_ALLOW or a listener. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return moat_error_set(err, errno, "set no_new_privs");
	struct sock_fprog prog = {.len = p->len, .filter = p->insns};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return moat_error_set(err, errno, "load seccomp filter '%s'", p->profile);
	iso->seccomp = true;
	snprintf(iso->seccomp_profile, sizeof(iso->seccomp_profile), "%s", p->profile);
	iso->seccomp_rules = p->rules;
	return 0;
}

void moat__seccomp_prog_done(moat_seccomp_prog *p)
{
	free(p->insns);
	p->insns = NULL;
	p->len = 0;
}

int moat__seccomp_apply(const moat_config *c, moat_isolation *iso, moat_error *err)
{
	moat_seccomp_prog p = {0};
	int r = moat__seccomp_compile(c, &p, err);
	if (r >= 0)
		r = moat__seccomp_load(&p, iso, err);
	moat__seccomp_prog_done(&p);
	return r;
}
