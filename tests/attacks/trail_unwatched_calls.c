/* ATTACK: change files with calls the trail did not watch (truncate, link, symlink, mkdir, chmod and their *at forms) | LAYER: file trail watches them | REF: - */
#include "attack.h"

int main(void)
{
	int d = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = open("/tmp/t-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (d < 0 || fd < 0 || write(fd, "0123456789", 10) != 10)
		BROKEN("set up: %s", strerror(errno));
	close(fd);
	int bad = 0;
	bad |= truncate("/tmp/t-file", 3);
	bad |= link("/tmp/t-file", "/tmp/t-hard");
	bad |= linkat(d, "t-file", d, "t-hard2", 0);
	bad |= symlink("t-file", "/tmp/t-sym");
	bad |= symlinkat("t-file", d, "t-sym2");
	bad |= mkdir("/tmp/t-dir", 0700);
	bad |= mkdirat(d, "t-dir2", 0711);
	bad |= chmod("/tmp/t-file", 0640);
	bad |= fchmodat(d, "t-file", 0604, 0);
	if (bad)
		BROKEN("one of the calls failed: %s", strerror(errno));
	printf("DONE: truncate, link, linkat, symlink, symlinkat, mkdir, mkdirat, chmod, fchmodat\n");
	return 0;
}
