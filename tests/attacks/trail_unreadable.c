/* ATTACK: pass a path the supervisor cannot read, hoping the trail logs null or guesses a name | LAYER: file trail marks the event reliability: unreadable | REF: - */
#include "attack.h"

#include <sys/mman.h>

int main(void)
{
	/* A page mapped and then unmapped: its address is no one's. */
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		BROKEN("mmap: %s", strerror(errno));
	munmap(p, 4096);
	errno = 0;
	long r = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	printf("DONE: openat of an unmapped path returned %ld (%s)\n", r, strerror(errno));
	return 0;
}
