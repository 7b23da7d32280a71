/* The file trail's race-free source: fanotify on the sandbox's mounts.
 *
 * The seccomp trail (filetrail.c) reads each path from the caller's memory,
 * which another thread can rewrite before the kernel reads it. fanotify
 * reports, after the fact, the file the kernel actually opened: a
 * descriptor on it, whose path is read back with readlink. Mount marks need
 * CAP_SYS_ADMIN in the host's user namespace, so this source exists only
 * when moat runs as root; rootless, the trail has the seccomp source alone
 * and says so. Notification only: the sandbox is never held up by it. */
#pragma once

#include <jansson.h>
#include <sys/types.h>

/* Marks every mount of pid's mount namespace that holds files (not /proc,
 * /sys, /dev and the like) for opens, executions and closes after writing.
 * Returns the fanotify descriptor (O_CLOEXEC, non-blocking), or -errno
 * (-EPERM when not privileged). */
int moat__fanwatch_open(pid_t pid);

/* Reads the events queued on fd and calls emit for each: type is "exec"
 * (FAN_OPEN_EXEC), "file.open" (FAN_OPEN) or "file.write"
 * (FAN_CLOSE_WRITE); fields hold "path", "event", "source": "fanotify" and
 * "host_pid"; emit takes them. Events of processes outside pidns_ino's pid
 * namespace are dropped. Returns the number of events lost by the kernel's
 * queue (FAN_Q_OVERFLOW), 0 usually. */
typedef void (*moat_fanwatch_emit)(void *ctx, const char *type, json_t *fields);
unsigned moat__fanwatch_drain(int fd, ino_t pidns_ino, moat_fanwatch_emit emit, void *ctx);

/* Pure: the mount points of a /proc/PID/mountinfo text worth marking, with
 * their octal escapes undone, as a NULL-terminated vector (free with
 * moat__strv_free). */
char **moat__fanwatch_mounts(const char *mountinfo);
