/* ATTACK: stack an empty Landlock ruleset to regain write access to / | LAYER: Landlock (domains only stack) | REF: - */
#include "attack.h"

int main(void)
{
	uint64_t attr[1] = {1ull << 1 /* WRITE_FILE handled */};
	int rs = (int)syscall(444, attr, sizeof(attr), 0);
	if (rs >= 0)
		syscall(446, rs, 0);
	EXPECT_FAIL("create /usr/pwned afterwards", open("/usr/pwned", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
}
