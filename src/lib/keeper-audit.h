/* What a keeper writes in its sandbox's audit log about its clients'
 * requests (keeper.h): each command started (what, where, who asked) and
 * how it ended, each copy a front reports (copied). The sandbox object logs
 * what it sees itself (session.start, exec, limits, session.stop); these
 * add who asked, which only the keeper knows (SO_PEERCRED). */
#pragma once

#include "audit.h"
#include "keeper-proto.h"

#include <sys/types.h>

/* command.start: id, pid inside, argv, cwd (the spawn's, else default_cwd: the
 * policy's, else null: the sandbox's own), tty, attached, asked_by {uid, pid}, and record (the asciicast file
 * its front writes) when there is one. */
void moat__keeper_audit_command_start(moat_audit *a, const moat_keeper_msg *spawn, const char *default_cwd,
				      uint32_t id, pid_t pid, uid_t uid, pid_t client_pid);
/* command.end: id, status, exit_status, signal, wall_ms, cpu_ms. */
void moat__keeper_audit_command_end(moat_audit *a, const moat_keeper_exit *e);
/* session.cp: direction (in, out), host, path, files, dirs, bytes, error, asked_by. */
void moat__keeper_audit_copied(moat_audit *a, const moat_keeper_msg *m, uid_t uid, pid_t client_pid);
