/* Shared by the attack programs. Each attack is one file that tries one
 * escape or abuse from inside moat and ends with exactly one verdict line:
 *
 *   exit 0  BLOCKED: the sandbox held
 *   exit 1  ESCAPED: the attempt worked (a failure of moat)
 *   exit 2  ERROR:   the attack could not run as intended
 *
 * The first line of every attack is a header that scripts/gen-security-doc
 * turns into the table of docs/security.md:
 *   / * ATTACK: what it tries | LAYER: what stops it | REF: CVE, incident or - * /
 * An optional second comment line, RUN: moat options [EXPECT: statuses],
 * tells tests/integration/attacks.sh how to run it.
 *
 * What the host side offers an attack to aim at (tests/integration/attacks.sh
 * passes these with --env): MOAT_CANARY_PATH (a host file), MOAT_CANARY_PORT
 * (a TCP listener on the host's loopback), MOAT_CANARY_PID (a host process),
 * MOAT_CANARY_ABSTRACT (an abstract unix socket on the host). The host also
 * holds a secret starting with MOAT_SECRET_MARK in moat's own environment,
 * never passed in. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MOAT_SECRET_MARK "moat-host-secret-"

__attribute__((noreturn, format(printf, 3, 4), unused)) static void verdict(int code, const char *tag,
									     const char *fmt, ...)
{
	va_list ap;
	printf("%s: ", tag);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	_exit(code);
}

#define BLOCKED(...) verdict(0, "BLOCKED", __VA_ARGS__)
#define ESCAPED(...) verdict(1, "ESCAPED", __VA_ARGS__)
#define BROKEN(...) verdict(2, "ERROR", __VA_ARGS__)

/* The call must fail: success is an escape; failure ends the attack. */
#define EXPECT_FAIL(what, call)                                                                    \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = (long)(call);                                                            \
		if (r_ >= 0)                                                                       \
			ESCAPED("%s succeeded (returned %ld)", what, r_);                          \
		BLOCKED("%s failed: %s", what, strerror(errno));                                   \
	} while (0)

/* The call must fail; the attack goes on to its next attempt. */
#define MUST_FAIL(what, call)                                                                      \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = (long)(call);                                                            \
		if (r_ >= 0)                                                                       \
			ESCAPED("%s succeeded (returned %ld)", what, r_);                          \
	} while (0)

/* A variable the harness sets, or the attack cannot aim. */
__attribute__((unused)) static const char *need_env(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		BROKEN("%s is not set (run by tests/integration/attacks.sh)", name);
	return v;
}

/* Reads up to len-1 bytes of a file; -1 with errno on failure. NULs become
 * spaces so that /proc/PID/environ and cmdline read as text. */
__attribute__((unused)) static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	for (size_t i = 0; i < got; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Copies a program to dst (mode 0755), then tries to execute it: the
 * verdict is BLOCKED only when execve says EACCES (Landlock's answer). */
__attribute__((noreturn, unused)) static void copy_and_exec(const char *src_path, const char *dst)
{
	int src = open(src_path, O_RDONLY | O_CLOEXEC);
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (src < 0 || out < 0)
		BROKEN("copy %s to %s: %s", src_path, dst, strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			BROKEN("write %s: %s", dst, strerror(errno));
	close(src);
	close(out);
	execl(dst, "prog", (char *)NULL);
	if (errno == EACCES)
		BLOCKED("exec of %s refused: %s", dst, strerror(errno));
	ESCAPED("exec of %s failed only with %s", dst, strerror(errno));
}

/* Leaves a daemon (new session, double fork) that writes /out/late after
 * the given number of seconds, then returns in the caller. */
__attribute__((unused)) static void leave_late_writer(unsigned seconds)
{
	pid_t k = fork();
	if (k == 0) {
		setsid();
		if (fork() == 0) {
			sleep(seconds);
			int fd = open("/out/late", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				(void)!write(fd, "late\n", 5);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(k, NULL, 0);
}

/* A clone or clone3 result: a child means the kernel created it. */
__attribute__((noreturn, unused)) static void clone_verdict(const char *what, long r)
{
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid((pid_t)r, NULL, 0);
		ESCAPED("%s made child %ld", what, r);
	}
	BLOCKED("%s failed: %s", what, strerror(errno));
}

/* struct clone_args of clone3, version 0 (64 bytes). */
struct attack_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};
