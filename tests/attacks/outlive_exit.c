/* ATTACK: exit at once, leaving a daemon that writes to /out afterwards | LAYER: PID namespace torn down when the command ends | REF: - */
#include "attack.h"

int main(void)
{
	leave_late_writer(2);
	BLOCKED("exited; the host side checks that /out/late never appears");
}
