/* ATTACK: hard-link a file from another mount into /out | LAYER: cross-mount links refused (EXDEV), Landlock | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("link /usr/bin/env into /out", link("/usr/bin/env", "/out/env"));
	int fd = open("/tmp/t", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	close(fd);
	EXPECT_FAIL("link /tmp/t into /out", link("/tmp/t", "/out/t"));
}
