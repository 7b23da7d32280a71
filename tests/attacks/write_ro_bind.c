/* ATTACK: write into a file of the read-only /attacks bind | LAYER: read-only bind, Landlock | REF: - */
#include "attack.h"

int main(void)
{
	MUST_FAIL("open /attacks/attack_write_ro_bind for writing", open("/attacks/attack_write_ro_bind", O_WRONLY | O_CLOEXEC));
	EXPECT_FAIL("create /attacks/new", open("/attacks/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
}
