/* ATTACK: read the caller's secrets from /proc/1/environ, /proc/1/cmdline and its own environment | LAYER: empty environment, init not dumpable | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ", "/proc/2/environ"};
	char buf[65536];
	for (size_t i = 0; i < 4; i++)
		if (slurp(paths[i], buf, sizeof(buf)) > 0 && strstr(buf, MOAT_SECRET_MARK))
			ESCAPED("host secret found in %s", paths[i]);
	extern char **environ;
	for (char **e = environ; *e; e++)
		if (strstr(*e, MOAT_SECRET_MARK))
			ESCAPED("host secret in the environment: %s", *e);
	BLOCKED("no host secret visible");
}
