/* The sandbox object (sandbox.h): a sandbox with a lifecycle, whose caller
 * owns the event loop and the signals. */
#include "sandbox.h"

#include <errno.h>
#include <string.h>

void moat_sandbox_opts_init(moat_sandbox_opts *o)
{
	memset(o, 0, sizeof(*o));
}

void moat_spawn_spec_init(moat_spawn_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->stdin_fd = s->stdout_fd = s->stderr_fd = -1;
}

#define NOT_YET(err) moat_error_set((err), ENOSYS, "%s: not implemented yet", __func__)

int moat_sandbox_create(const moat_config *config, const moat_sandbox_opts *opts, moat_sandbox **ret,
			moat_error *err)
{
	(void)config;
	(void)opts;
	(void)ret;
	return NOT_YET(err);
}

int moat_sandbox_spawn(moat_sandbox *sb, const moat_spawn_spec *spec, moat_command *ret, moat_error *err)
{
	(void)sb;
	(void)spec;
	(void)ret;
	return NOT_YET(err);
}

int moat_sandbox_fd(const moat_sandbox *sb)
{
	(void)sb;
	return -ENOSYS;
}

int moat_sandbox_dispatch(moat_sandbox *sb, moat_sandbox_event *ret, moat_error *err)
{
	(void)sb;
	(void)ret;
	return NOT_YET(err);
}

int moat_sandbox_wait(moat_sandbox *sb, uint32_t id, int timeout_ms, moat_command_result *ret, moat_error *err)
{
	(void)sb;
	(void)id;
	(void)timeout_ms;
	(void)ret;
	return NOT_YET(err);
}

int moat_sandbox_signal(moat_sandbox *sb, uint32_t id, int sig, moat_error *err)
{
	(void)sb;
	(void)id;
	(void)sig;
	return NOT_YET(err);
}

int moat_sandbox_stop(moat_sandbox *sb, moat_error *err)
{
	(void)sb;
	return NOT_YET(err);
}

int moat_sandbox_destroy(moat_sandbox *sb, moat_result *ret, moat_error *err)
{
	moat_error dummy;
	if (!sb)
		return 0;
	if (ret) {
		moat_result_init(ret);
		ret->status = MOAT_STATUS_SETUP_ERROR;
		ret->exit_status = 125;
	}
	return NOT_YET(err ? err : &dummy);
}
