/* ATTACK: create files in /, /usr, /etc and /bin | LAYER: read-only rootfs, Landlock | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/pwned", "/usr/pwned", "/etc/pwned", "/bin/pwned", "/lib/pwned"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			ESCAPED("created %s", paths[i]);
	}
	BLOCKED("no file could be created on the root filesystem");
}
