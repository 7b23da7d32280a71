/* ATTACK: catch SIGXCPU and spin on, to outlast the CPU limit or be reported as merely killed | LAYER: RLIMIT_CPU hard limit or the cgroup's CPU budget; the verdict is cpu_limit either way | REF: - */
/* RUN: --time 20 --cpu 1 | EXPECT: cpu_limit */
#include "attack.h"

static void ignore(int sig)
{
	(void)sig;
}

int main(void)
{
	signal(SIGXCPU, ignore);
	for (volatile unsigned long i = 0;; i++)
		;
}
