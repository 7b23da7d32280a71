/* ATTACK: attach the host's System V shared memory segments | LAYER: IPC namespace | REF: - */
#include "attack.h"
#include <sys/shm.h>

int main(void)
{
	char buf[4096];
	ssize_t n = slurp("/proc/sysvipc/shm", buf, sizeof(buf));
	if (n > 0 && strchr(buf, '\n') && strchr(buf, '\n')[1] != '\0')
		ESCAPED("host shared memory listed: %.80s", strchr(buf, '\n') + 1);
	key_t key = (key_t)strtol(need_env("MOAT_CANARY_SHM_KEY"), NULL, 0);
	EXPECT_FAIL("shmget(host key)", shmget(key, 0, 0));
}
