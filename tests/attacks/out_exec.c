/* ATTACK: write a program to /out and execute it (W^X on outputs) | LAYER: Landlock (no EXECUTE in /out) | REF: - */
#include "attack.h"

int main(void)
{
	copy_and_exec("/attacks/attack_out_exec", "/out/prog");
}
