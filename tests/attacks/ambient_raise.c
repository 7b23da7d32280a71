/* ATTACK: raise an ambient capability so that it survives execve | LAYER: caps dropped, SECBIT_NO_CAP_AMBIENT_RAISE | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("PR_CAP_AMBIENT_RAISE", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21 /* CAP_SYS_ADMIN */, 0, 0));
}
