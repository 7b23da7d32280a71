/* ATTACK: list the host's kernel keys through /proc/keys | LAYER: masked /proc | REF: - */
#include "attack.h"

int main(void)
{
	char buf[1024];
	ssize_t n = slurp("/proc/keys", buf, sizeof(buf));
	if (n > 0)
		ESCAPED("read %zd bytes of /proc/keys", n);
	BLOCKED("/proc/keys empty or unreadable");
}
