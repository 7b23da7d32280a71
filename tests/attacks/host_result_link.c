/* ATTACK: plant a link in a parent folder of the next run's --result file, so moat creates it in a host folder the sandbox chose | LAYER: every component of a host path resolved without following links the sandbox could own (hostpath.c) | REF: - */
/* THEN: --result @RW@/d/result.json */
#include "attack.h"

int main(int argc, char **argv)
{
	const char *dir = need_env("MOAT_CANARY_DIR");
	if (argc > 1 && strcmp(argv[1], "then") == 0)
		BLOCKED("the host must find nothing new in %s", dir);
	if (symlink(dir, "/rw/d") < 0)
		BROKEN("symlink /rw/d: %s", strerror(errno));
	BLOCKED("link planted; the next run must refuse it");
}
