/* ATTACK: handed the caller's stdout itself (moat run --direct-stdout, as mcp wrap asks), truncate and overwrite the host file it is redirected to | LAYER: --direct-stdout takes only a pipe (sandbox.c); a file, a socket or a terminal is refused before the run | REF: CVE-2017-5226 (a terminal handed in) */
/* RUN: --direct-stdout | EXPECT: setup_error */
#include "attack.h"

int main(void)
{
	struct stat st;
	if (fstat(1, &st) < 0)
		BLOCKED("no stdout: %s", strerror(errno));
	if (S_ISREG(st.st_mode) && (ftruncate(1, 0) == 0 || pwrite(1, "overwritten\n", 12, 0) == 12))
		ESCAPED("truncated the host file behind stdout (%lld bytes before)", (long long)st.st_size);
	if (isatty(1))
		ESCAPED("stdout is a terminal of the host");
	BLOCKED("stdout is a %s", S_ISFIFO(st.st_mode) ? "pipe" : "file it cannot write");
}
