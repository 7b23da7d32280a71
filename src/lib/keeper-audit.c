/* A keeper's own audit events (keeper-audit.h). A failed write is the
 * audit writer's to report (it refuses more events, and verify says so):
 * a client's request is not refused for it. */
#include "keeper-audit.h"

#include <jansson.h>

static json_t *asked_by(uid_t uid, pid_t pid)
{
	return json_pack("{s:i, s:i}", "uid", (int)uid, "pid", (int)pid);
}

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (; a && v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

void moat__keeper_audit_command_start(moat_audit *a, const moat_keeper_msg *spawn, const char *default_cwd,
				      uint32_t id, pid_t pid, uid_t uid, pid_t client_pid)
{
	if (!a)
		return;
	json_t *f = json_pack("{s:i, s:i, s:o, s:s?, s:b, s:b, s:o}", "id", (int)id, "pid", (int)pid, "argv",
			      strv_json(spawn->argv), "cwd", spawn->cwd ? spawn->cwd : default_cwd, "tty", spawn->tty,
			      "attached", spawn->attached, "asked_by", asked_by(uid, client_pid));
	if (f && spawn->record)
		json_object_set_new(f, "record", json_string(spawn->record));
	moat_error err = {0};
	(void)moat_audit_event(a, "command.start", f, 0, &err);
}

void moat__keeper_audit_command_end(moat_audit *a, const moat_keeper_exit *e)
{
	if (!a)
		return;
	json_t *f = json_pack("{s:i, s:s, s:i, s:i, s:I, s:I}", "id", (int)e->id, "status", e->status, "exit_status",
			      e->exit_status, "signal", e->signal, "wall_ms", (json_int_t)e->wall_ms, "cpu_ms",
			      (json_int_t)(e->cpu_user_ms + e->cpu_sys_ms));
	moat_error err = {0};
	(void)moat_audit_event(a, "command.end", f, 0, &err);
}

void moat__keeper_audit_copied(moat_audit *a, const moat_keeper_msg *m, uid_t uid, pid_t client_pid)
{
	if (!a)
		return;
	json_t *f = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:s?, s:o}", "direction", m->into ? "in" : "out", "host",
			      m->host, "path", m->path, "files", (json_int_t)m->files, "dirs", (json_int_t)m->dirs,
			      "bytes", (json_int_t)m->bytes, "error", m->message, "asked_by", asked_by(uid, client_pid));
	moat_error err = {0};
	(void)moat_audit_event(a, "session.cp", f, 0, &err);
}
