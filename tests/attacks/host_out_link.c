/* ATTACK: plant a link to a root-owned host folder where the next run's --out points, so moat chowns and binds the link's target | LAYER: host paths resolved without following links the sandbox could own (hostpath.c) | REF: CVE-2021-30465 class */
/* THEN: --out @RW@/out */
#include "attack.h"

int main(int argc, char **argv)
{
	const char *dir = need_env("MOAT_CANARY_DIR");
	if (argc > 1 && strcmp(argv[1], "then") == 0) {
		if (access("/out/marker", F_OK) == 0)
			ESCAPED("the next run got the host folder %s as /out", dir);
		BLOCKED("/out is not the host folder");
	}
	if (symlink(dir, "/rw/out") < 0)
		BROKEN("symlink /rw/out: %s", strerror(errno));
	BLOCKED("link planted; the next run must refuse it");
}
