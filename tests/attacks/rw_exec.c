/* ATTACK: execute a program written to a --rw bind | LAYER: Landlock (no EXECUTE in --rw binds) | REF: - */
#include "attack.h"

int main(void)
{
	copy_and_exec("/bin/true", "/rw/prog");
}
