/* ATTACK: leave a daemon behind that writes to /out after the time limit | LAYER: PID namespace torn down with init, cgroup kill | REF: - */
/* RUN: --time 1 | EXPECT: timeout */
#include "attack.h"

int main(void)
{
	leave_late_writer(3);
	for (;;)
		pause();
}
