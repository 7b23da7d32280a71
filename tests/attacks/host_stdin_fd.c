/* ATTACK: given a host file as --stdin, change it through the descriptor: fchmod, reopen /proc/self/fd/0 for writing, truncate | LAYER: --stdin is a sealed copy, never a descriptor on the host file (sandbox.c) | REF: - */
/* THEN: --stdin @CANARY@ */
#include "attack.h"

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "then") != 0)
		BLOCKED("nothing to plant; the next run gets the canary as --stdin");
	char buf[256];
	ssize_t n = read(0, buf, sizeof(buf) - 1);
	buf[n < 0 ? 0 : n] = '\0';
	if (!strstr(buf, "canary"))
		BROKEN("stdin is not the file given: %s", buf);
	/* What succeeds here may only touch moat's copy; the harness checks
	 * that the host file kept its content and its mode. */
	int tried = 0;
	tried += fchmod(0, 0777) == 0;
	int w = open("/proc/self/fd/0", O_WRONLY | O_TRUNC);
	if (w >= 0) {
		tried += write(w, "owned\n", 6) == 6;
		close(w);
	}
	tried += ftruncate(0, 0) == 0;
	BLOCKED("%d changes went through to what stdin is; the host file must show none", tried);
}
