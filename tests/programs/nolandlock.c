/* Runs a command as on a host whose kernel has no Landlock (not built in,
 * or left out of the boot's lsm= list): a seccomp filter answers the
 * three Landlock calls with ENOSYS, and every process the command starts
 * inherits it. Integration tests run moat under it to show what holds
 * without Landlock. Usage: nolandlock PROGRAM [ARG...] */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOSYS(nr)                                                                                  \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nolandlock PROGRAM [ARG...]\n");
		return 2;
	}
	/* The calls have the same numbers on every architecture (the
	 * generic table), 32-bit x86 included. */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		NOSYS(__NR_landlock_create_ruleset),
		NOSYS(__NR_landlock_add_rule),
		NOSYS(__NR_landlock_restrict_self),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "nolandlock: install the filter: %s\n", strerror(errno));
		return 2;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "nolandlock: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
