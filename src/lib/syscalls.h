/* System calls glibc 2.36 does not wrap. */
#pragma once

#include <linux/openat2.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int moat__openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static inline int moat__pivot_root(const char *new_root, const char *put_old)
{
	return (int)syscall(SYS_pivot_root, new_root, put_old);
}

static inline long moat__clone3(struct clone_args *args)
{
	return syscall(SYS_clone3, args, sizeof(*args));
}

static inline int moat__pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
static inline int moat__close_range(unsigned first, unsigned last, unsigned flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}
