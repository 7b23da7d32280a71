/* ATTACK: spin on the CPU forever | LAYER: CPU time and wall-clock limits | REF: - */
/* RUN: --time 2 --cpu 1 | EXPECT: cpu_limit,timeout */
#include "attack.h"

int main(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}
