/* An OCI container's own seccomp filter (config.json linux.seccomp),
 * compiled with libseccomp into a BPF program that the sandbox's command
 * loads on top of moat's filter just before exec (init.c). The kernel runs
 * every filter a process has stacked and keeps the strictest verdict, so
 * whatever this one allows, moat's filter still denies what it denies: the
 * spec can only narrow. */
#include "oci-seccomp.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void ctx_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static uint32_t action(moat_oci_seccomp_action a, unsigned eno)
{
	switch (a) {
	case MOAT_OCI_SCMP_KILL:
		return SCMP_ACT_KILL_THREAD;
	case MOAT_OCI_SCMP_KILL_PROCESS:
		return SCMP_ACT_KILL_PROCESS;
	case MOAT_OCI_SCMP_TRAP:
		return SCMP_ACT_TRAP;
	case MOAT_OCI_SCMP_ERRNO:
		return SCMP_ACT_ERRNO(eno);
	case MOAT_OCI_SCMP_TRACE:
		/* No tracer can attach (moat denies ptrace): the call fails
		 * with ENOSYS, as the kernel does for TRACE without one. */
		return SCMP_ACT_TRACE(eno);
	case MOAT_OCI_SCMP_LOG:
		return SCMP_ACT_LOG;
	case MOAT_OCI_SCMP_ALLOW:
	default:
		return SCMP_ACT_ALLOW;
	}
}

static const enum scmp_compare ops[_MOAT_OCI_SCMP_CMP_MAX] = {
	[MOAT_OCI_SCMP_CMP_NE] = SCMP_CMP_NE, [MOAT_OCI_SCMP_CMP_LT] = SCMP_CMP_LT,
	[MOAT_OCI_SCMP_CMP_LE] = SCMP_CMP_LE, [MOAT_OCI_SCMP_CMP_EQ] = SCMP_CMP_EQ,
	[MOAT_OCI_SCMP_CMP_GE] = SCMP_CMP_GE, [MOAT_OCI_SCMP_CMP_GT] = SCMP_CMP_GT,
	[MOAT_OCI_SCMP_CMP_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
};

/* "SCMP_ARCH_X86_64" -> libseccomp's token; 0 when it does not know it. */
static uint32_t arch_token(const char *name)
{
	if (strncmp(name, "SCMP_ARCH_", 10) != 0)
		return 0;
	char lower[32];
	size_t n = strlen(name + 10);
	if (n == 0 || n >= sizeof(lower))
		return 0;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)name[10 + i]);
	return seccomp_arch_resolve_name(lower);
}

int moat__oci_seccomp_compile(const moat_oci_seccomp *sc, void **ret_prog, size_t *ret_len, moat_error *err)
{
	const char *f = "linux.seccomp";
	uint32_t def = action(sc->default_action, sc->default_errno_ret);
	_cleanup_(ctx_releasep) scmp_filter_ctx ctx = seccomp_init(def);
	if (!ctx)
		return moat_error_set(err, ENOMEM, "%s", f);
	/* The command sets no_new_privs itself (caps.c) before this loads. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	int r;
	for (size_t i = 0; sc->architectures && sc->architectures[i]; i++) {
		uint32_t a = arch_token(sc->architectures[i]);
		/* An architecture this libseccomp does not know cannot run
		 * here either: nothing to filter. */
		if (a == 0)
			continue;
		r = seccomp_arch_add(ctx, a);
		if (r < 0 && r != -EEXIST)
			return moat_error_set(err, -r, "%s.architectures[%zu]: %s", f, i, sc->architectures[i]);
	}
	for (size_t i = 0; i < sc->n_rules; i++) {
		const moat_oci_seccomp_rule *rule = &sc->rules[i];
		uint32_t act = action(rule->action, rule->errno_ret);
		/* A rule whose action is the default adds nothing (libseccomp
		 * refuses it). */
		if (act == def)
			continue;
		struct scmp_arg_cmp cmp[MOAT_OCI_MAX_SECCOMP_ARGS];
		for (size_t k = 0; k < rule->n_args; k++)
			cmp[k] = (struct scmp_arg_cmp){.arg = rule->args[k].index,
						       .op = ops[rule->args[k].op],
						       .datum_a = rule->args[k].value,
						       .datum_b = rule->args[k].value_two};
		for (char **name = rule->names; name && *name; name++) {
			/* A name this kernel's libseccomp does not know (profiles
			 * list calls of every version and architecture) has no
			 * number to match: skipped, as runc does. */
			int nr = seccomp_syscall_resolve_name(*name);
			if (nr == __NR_SCMP_ERROR)
				continue;
			r = seccomp_rule_add_array(ctx, act, nr, (unsigned)rule->n_args, cmp);
			if (r == -EINVAL && rule->n_args > 1) {
				/* libseccomp takes one comparison per argument
				 * in a rule: several on one argument become a
				 * rule each, as runc does. */
				r = 0;
				for (size_t k = 0; k < rule->n_args && r >= 0; k++)
					r = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[k]);
			}
			if (r < 0)
				return moat_error_set(err, -r, "%s.syscalls[%zu]: %s", f, i, *name);
		}
	}
	_cleanup_close_ int fd = memfd_create("moat-oci-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return moat_error_set(err, errno, "%s: memfd", f);
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		return moat_error_set(err, -r, "%s: compile the filter", f);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return moat_error_set(err, errno, "%s", f);
	size_t len = (size_t)st.st_size;
	if (len == 0 || len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return moat_error_set(err, MOAT_EINPUT, "%s: the compiled filter has %zu bytes, over the kernel's %d instructions",
				      f, len, BPF_MAXINSNS);
	_cleanup_free_ void *prog = malloc(len);
	if (!prog)
		return moat_error_set(err, ENOMEM, "%s", f);
	if (pread(fd, prog, len, 0) != (ssize_t)len)
		return moat_error_set(err, EIO, "%s: read the compiled filter", f);
	*ret_prog = TAKE_PTR(prog);
	*ret_len = len;
	return 0;
}
