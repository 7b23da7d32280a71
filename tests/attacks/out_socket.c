/* ATTACK: bind a unix socket in /out for host tools to connect to | LAYER: Landlock (no MAKE_SOCK in /out) | REF: - */
#include "attack.h"
#include <sys/un.h>

int main(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/out/sock"};
	EXPECT_FAIL("bind /out/sock", bind(s, (struct sockaddr *)&a, sizeof(a)));
}
