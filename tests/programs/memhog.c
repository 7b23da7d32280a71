/* Allocates and touches memory one MiB at a time until it has the amount
 * asked for (argv[1], MiB; default: forever), then exits 0. Under a memory
 * limit the kernel's OOM killer ends it first. Run it only under a limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : -1;
	long got = 0;
	while (want < 0 || got < want) {
		char *p = malloc(1 << 20);
		if (!p) {
			printf("memhog: malloc failed after %ld MiB\n", got);
			return 3;
		}
		memset(p, 0x5a, 1 << 20);
		got++;
	}
	printf("memhog: holding %ld MiB\n", got);
	return 0;
}
