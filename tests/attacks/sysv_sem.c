/* ATTACK: find and lock the host's System V semaphores | LAYER: IPC namespace | REF: - */
#include "attack.h"
#include <sys/sem.h>

int main(void)
{
	for (int id = 0; id < 64; id++) {
		struct sembuf op = {0, -1, IPC_NOWAIT};
		if (semop(id, &op, 1) == 0 || errno == EAGAIN)
			ESCAPED("semaphore id %d exists", id);
	}
	BLOCKED("no semaphore visible");
}
