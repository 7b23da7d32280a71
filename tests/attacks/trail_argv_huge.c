/* ATTACK: run a program with an argv over 1 MiB so the trail keeps only its size | LAYER: file trail keeps the first 4 KiB and the SHA-256 of all of it | REF: - */
#include "attack.h"

/* 12 strings of 100,000 bytes ('a', 'b', ...): 1.2 MB, within the
 * kernel's limits (128 KiB a string, 6 MiB in all).
 * tests/integration/trail_attacks.sh rebuilds the same argv to check the
 * hash. */
int main(void)
{
	static char args[12][100001];
	char *argv[14] = {"/bin/true"};
	for (int i = 0; i < 12; i++) {
		memset(args[i], 'a' + i, 100000);
		args[i][100000] = '\0';
		argv[i + 1] = args[i];
	}
	argv[13] = NULL;
	execv("/bin/true", argv);
	BROKEN("execv: %s", strerror(errno));
}
