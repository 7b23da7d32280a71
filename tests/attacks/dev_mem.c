/* ATTACK: open /dev/mem, /dev/kmem and /dev/port | LAYER: minimal /dev | REF: - */
#include "attack.h"

int main(void)
{
	static const char *const paths[] = {"/dev/mem", "/dev/kmem", "/dev/port"};
	for (size_t i = 0; i < 3; i++)
		if (open(paths[i], O_RDONLY | O_CLOEXEC) >= 0)
			ESCAPED("opened %s", paths[i]);
	BLOCKED("no raw memory device");
}
