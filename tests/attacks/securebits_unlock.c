/* ATTACK: clear the locked securebits (SECBIT_NOROOT) so that uid 0 regains capabilities at exec | LAYER: securebits locked | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("PR_SET_SECUREBITS 0", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
}
