/* Drives libmoat's sandbox API directly, as a program embedding it would
 * (not through the CLI): several sandboxes one after another in one
 * process, each command's exit status, output and accounting, the stdin
 * default, and the errno of a setup error. Prints TAP; run by
 * tests/integration/api.sh as root and rootless, with a pipe holding
 * bytes on its fd 0. */
#include "config.h"
#include "error.h"
#include "result.h"
#include "sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_test, n_fail;

static void ok(bool cond, const char *what)
{
	n_test++;
	if (!cond)
		n_fail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n_test, what);
}

typedef struct captured {
	char out[4096];
	size_t len;
} captured;

static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	captured *c = userdata;
	if (stream != 1)
		return;
	size_t room = sizeof(c->out) - 1 - c->len;
	if (len > room)
		len = room;
	memcpy(c->out + c->len, buf, len);
	c->len += len;
	c->out[c->len] = '\0';
}

/* One sandbox for argv; its result in *res and its stdout in *cap. */
static int run(char **argv, bool inherit, moat_result *res, captured *cap, moat_error *err)
{
	moat_config *c = moat_config_new();
	if (!c)
		return -ENOMEM;
	moat_limits_default_code(&c->limits);
	for (char **a = argv; *a; a++)
		if (moat__strv_push(&c->argv, *a) < 0) {
			moat_config_free(c);
			return -ENOMEM;
		}
	moat_run_io io;
	moat_run_io_init(&io);
	io.forward_stdout_fd = -1;
	io.forward_stderr_fd = -1;
	io.on_output = on_output;
	io.userdata = cap;
	io.stdin_inherit = inherit;
	memset(cap, 0, sizeof(*cap));
	int r = moat_sandbox_run(c, &io, res, err);
	moat_config_free(c);
	return r;
}

/* "hold SECS": one sandbox whose command says it started, then sleeps
 * (SECS, a number the caller can look for) until its creator is killed (api.sh does that with SIGKILL and looks for what is
 * left). */
static int hold(const char *secs)
{
	char script[128];
	snprintf(script, sizeof(script), "echo started; exec sleep %s", secs);
	moat_config *c = moat_config_new();
	if (!c)
		return 1;
	moat_limits_default_code(&c->limits);
	c->limits.wall_ms = 120000;
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	for (char **a = argv; *a; a++)
		moat__strv_push(&c->argv, *a);
	moat_run_io io;
	moat_run_io_init(&io);
	moat_result res;
	moat_error err = {0};
	moat_sandbox_run(c, &io, &res, &err);
	moat_config_free(c);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "hold") == 0)
		return hold(argv[2]);
	moat_result res;
	captured cap;
	moat_error err = {0};
	char *a1[] = {"/bin/sh", "-c", "echo one; exit 3", NULL};
	char *a2[] = {"/bin/sh", "-c", "echo two", NULL};
	char *cat[] = {"/bin/cat", NULL};

	int r = run(a1, false, &res, &cap, &err);
	ok(r == 0 && res.status == MOAT_STATUS_EXITED && res.exit_code == 3, "first sandbox: exit status 3");
	ok(strcmp(cap.out, "one\n") == 0 && res.stdout_bytes == 4, "first sandbox: its output");
	ok(res.wall_ms < 600000 && res.isolation.pidns, "first sandbox: accounted, in its own pid namespace");

	r = run(a2, false, &res, &cap, &err);
	ok(r == 0 && res.status == MOAT_STATUS_EXITED && res.exit_code == 0, "second sandbox of the process: exit 0");
	ok(strcmp(cap.out, "two\n") == 0, "second sandbox: its own output only");

	/* fd 0 is a pipe with bytes in it (api.sh): a library caller's fd 0
	 * is not the command's unless asked. */
	r = run(cat, false, &res, &cap, &err);
	ok(r == 0 && res.exit_code == 0 && cap.len == 0, "stdin defaults to /dev/null, not the caller's fd 0");
	r = run(cat, true, &res, &cap, &err);
	ok(r == 0 && res.exit_code == 0 && strcmp(cap.out, "piped\n") == 0, "stdin_inherit: the caller's fd 0");

	/* A setup error met inside (a working directory that does not
	 * exist there) keeps its errno for the caller, and the reason is said
	 * once in the text. */
	moat_config *c = moat_config_new();
	moat_limits_default_code(&c->limits);
	moat__strv_push(&c->argv, "/bin/true");
	c->cwd = strdup("/nonexistent-moat-api-test");
	moat_run_io io;
	moat_run_io_init(&io);
	moat_error_clear(&err);
	r = moat_sandbox_run(c, &io, &res, &err);
	moat_config_free(c);
	char buf[MOAT_ERROR_MAX + 64];
	moat_error_format(&err, buf, sizeof(buf));
	printf("# setup error: code %d: %s\n", err.code, buf);
	ok(r < 0 && res.status == MOAT_STATUS_SETUP_ERROR && res.exit_status == 125, "a missing working directory: setup error 125");
	ok(err.code == ENOENT, "the setup error keeps its errno (ENOENT)");
	const char *why = strerror(ENOENT), *at = strstr(buf, why);
	ok(at && !strstr(at + strlen(why), why), "the reason is said once");
	printf("1..%d\n", n_test);
	return n_fail ? 1 : 0;
}
