/* ATTACK: classic chroot escape: chroot into a subdirectory, then walk up with .. | LAYER: seccomp (chroot), no CAP_SYS_CHROOT | REF: - */
#include "attack.h"

int main(void)
{
	mkdir("/tmp/jail", 0755);
	MUST_FAIL("chroot /tmp/jail", chroot("/tmp/jail"));
	BLOCKED("chroot refused: %s", strerror(errno));
}
