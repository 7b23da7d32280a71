/* ATTACK: give a file to root so it looks trusted | LAYER: user namespace maps one uid, caps dropped | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/tmp/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		BROKEN("create /tmp/f: %s", strerror(errno));
	EXPECT_FAIL("fchown(0, 0)", fchown(fd, 0, 0));
}
