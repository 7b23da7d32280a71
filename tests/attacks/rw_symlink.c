/* ATTACK: leave a symlink in a --rw bind pointing at a host path | LAYER: Landlock (no MAKE_SYM in --rw binds) | REF: CVE-2021-30465 class */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("symlink /rw/evil -> /", symlink("/", "/rw/evil"));
}
