/* ATTACK: plant a link to a host file where the next run's --ro source points, to read what nobody gave the sandbox | LAYER: host paths resolved without following links the sandbox could own (hostpath.c) | REF: - */
/* THEN: --ro @RW@/in:/data */
#include "attack.h"

int main(int argc, char **argv)
{
	const char *canary = need_env("MOAT_CANARY_PATH");
	if (argc > 1 && strcmp(argv[1], "then") == 0) {
		char buf[256];
		if (slurp("/data", buf, sizeof(buf)) >= 0 && strstr(buf, "canary"))
			ESCAPED("read the host file %s through the planted link: %s", canary, buf);
		BLOCKED("the host file was not bound");
	}
	if (symlink(canary, "/rw/in") < 0)
		BROKEN("symlink /rw/in: %s", strerror(errno));
	BLOCKED("link planted; the next run must refuse it");
}
