/* ATTACK: append a root account to /etc/passwd | LAYER: read-only rootfs, Landlock, /etc mostly absent | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("open /etc/passwd for writing", open("/etc/passwd", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
}
