/* ATTACK: unlink and replace /usr/bin/env for later callers | LAYER: read-only bind, Landlock | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("unlink /usr/bin/env", unlink("/usr/bin/env"));
	EXPECT_FAIL("rename over /usr/bin/env", rename("/tmp/nothing", "/usr/bin/env") == 0 ? 0 : (errno == ENOENT ? (errno = EACCES, -1) : -1));
}
