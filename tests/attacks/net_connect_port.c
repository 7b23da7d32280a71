/* ATTACK: CONNECT to the allowed host on a port the rules do not list (22) | LAYER: gateway rules: ports | REF: - */
#include "netattack.h"

int main(void)
{
	const char *probe = "SSH-2.0-x\r\n";
	return na_connect("CONNECT up.test:22", "up.test:22", probe, strlen(probe));
}
