/* ATTACK: name a file with terminal escapes so that moat audit show clears and retitles the auditor's screen | LAYER: audit show escapes control characters | REF: CVE-2021-25743 class (escapes in logs) */
#include "attack.h"

int main(void)
{
	const char *name = "/tmp/\x1b[2J\x1b[H\x1b]0;all clear\x07\xc2\x9b" "31mlooks-fine";
	int fd = open(name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		BROKEN("create: %s", strerror(errno));
	close(fd);
	printf("DONE: created a file named with escapes\n");
	return 0;
}
