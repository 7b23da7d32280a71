/* ATTACK: watch the whole file system with fanotify | LAYER: seccomp (fanotify_init) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("fanotify_init", syscall(SYS_fanotify_init, 0, O_RDONLY));
}
