/* ATTACK: leave a symlink in /out pointing at a host secret, for the host to follow later | LAYER: Landlock (no MAKE_SYM in /out) | REF: CVE-2017-1002101 class */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("symlink /out/evil -> /etc/shadow", symlink("/etc/shadow", "/out/evil"));
}
