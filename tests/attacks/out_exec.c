/* ATTACK: write a program to /out and execute it (W^X on outputs) | LAYER: Landlock (no EXECUTE in /out) | REF: - */
#include "attack.h"

int main(void)
{
	int src = open("/attacks/attack_out_exec", O_RDONLY | O_CLOEXEC);
	int dst = open("/out/prog", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (src < 0 || dst < 0)
		BROKEN("copy: %s", strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof(buf))) > 0)
		if (write(dst, buf, (size_t)n) != n)
			BROKEN("write: %s", strerror(errno));
	close(dst);
	execl("/out/prog", "prog", (char *)NULL);
	if (errno == EACCES)
		BLOCKED("exec from /out refused: %s", strerror(errno));
	ESCAPED("exec from /out failed only with %s", strerror(errno));
}
