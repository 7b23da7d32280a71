/* ATTACK: leave a FIFO in /out so that the host blocks when it reads the output | LAYER: Landlock (no MAKE_FIFO in /out) | REF: - */
#include "attack.h"

int main(void)
{
	EXPECT_FAIL("mkfifo /out/fifo", mkfifo("/out/fifo", 0644));
}
