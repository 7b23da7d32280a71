/* ATTACK: read the host's System V message queues | LAYER: IPC namespace | REF: - */
#include "attack.h"
#include <sys/msg.h>

int main(void)
{
	struct msqid_ds ds;
	int max = msgctl(0, MSG_INFO, &ds);
	if (max > 0)
		ESCAPED("%d message queues visible", max);
	BLOCKED("no message queue visible");
}
