/* moat run: temporary placeholder while the sandbox lands. */
#include <stdarg.h>
#include "cli.h"

int moat_cli_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("moat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return MOAT_EXIT_ERROR;
}

int moat_cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return moat_cli_fail("run: not built yet");
}
