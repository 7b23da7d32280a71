/* ATTACK: plant a link to a host file where the next run's --stdin points, so moat opens it with its own rights | LAYER: host paths resolved without following links the sandbox could own (hostpath.c) | REF: - */
/* THEN: --stdin @RW@/in */
#include "attack.h"

int main(int argc, char **argv)
{
	const char *canary = need_env("MOAT_CANARY_PATH");
	if (argc > 1 && strcmp(argv[1], "then") == 0) {
		char buf[256];
		ssize_t n = read(0, buf, sizeof(buf) - 1);
		buf[n < 0 ? 0 : n] = '\0';
		if (strstr(buf, "canary"))
			ESCAPED("read the host file %s on stdin: %s", canary, buf);
		BLOCKED("stdin is not the host file");
	}
	if (symlink(canary, "/rw/in") < 0)
		BROKEN("symlink /rw/in: %s", strerror(errno));
	BLOCKED("link planted; the next run must refuse it");
}
