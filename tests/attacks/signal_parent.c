/* ATTACK: signal the parent process with SIGKILL | LAYER: Landlock signal scope (pid 1 outside the domain) | REF: - */
#include "attack.h"

int main(void)
{
	pid_t pp = getppid();
	EXPECT_FAIL("kill(getppid(), SIGKILL)", pp > 0 ? kill(pp, SIGKILL) : (errno = ESRCH, -1));
}
