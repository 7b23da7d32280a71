/* ATTACK: exec again at once, 30 times, so that programs that ran are folded into one exec event | LAYER: file trail tells a failed exec from one that ran | REF: - */
#include "attack.h"

/* Linked statically (tests/attacks/meson.build): each step execs the next
 * within microseconds, before moat has logged that the command started. */
int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 0;
	if (depth < 30) {
		char next[16];
		snprintf(next, sizeof(next), "%d", depth + 1);
		execl("/proc/self/exe", argv[0], next, (char *)NULL);
		BROKEN("exec: %s", strerror(errno));
	}
	printf("DONE: 31 programs ran\n");
	return 0;
}
