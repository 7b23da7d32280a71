/* ATTACK: switch no_new_privs off to let setuid binaries work again | LAYER: no_new_privs (one-way) | REF: - */
#include "attack.h"

int main(void)
{
	prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0);
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		ESCAPED("no_new_privs is off");
	BLOCKED("no_new_privs stays on");
}
