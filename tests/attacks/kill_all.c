/* ATTACK: kill(-1, SIGKILL): every process the caller may signal | LAYER: PID namespace, Landlock signal scope | REF: - */
#include "attack.h"

int main(void)
{
	signal(SIGTERM, SIG_IGN);
	kill(-1, SIGKILL);
	usleep(100000);
	BLOCKED("still running; the host side checks its processes");
}
