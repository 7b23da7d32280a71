/* ATTACK: become uid 0 with setuid(0) and setresuid | LAYER: user namespace maps one uid, caps dropped | REF: - */
#include "attack.h"
#include <grp.h>

int main(void)
{
	MUST_FAIL("setuid(0)", getuid() != 0 ? setuid(0) : -1);
	MUST_FAIL("setresuid(0,0,0)", getuid() != 0 ? setresuid(0, 0, 0) : -1);
	MUST_FAIL("setgroups(0)", setgroups(1, (gid_t[]){0}));
	BLOCKED("uid %d, no way to uid 0", (int)getuid());
}
