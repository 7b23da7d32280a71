/* ATTACK: execute a program written to a --rw bind | LAYER: Landlock (no EXECUTE in --rw binds) | REF: - */
#include "attack.h"

int main(void)
{
	int src = open("/bin/true", O_RDONLY | O_CLOEXEC);
	int dst = open("/rw/prog", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (src < 0 || dst < 0)
		BROKEN("copy: %s", strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(src, buf, sizeof(buf))) > 0)
		if (write(dst, buf, (size_t)n) != n)
			BROKEN("write: %s", strerror(errno));
	close(dst);
	execl("/rw/prog", "prog", (char *)NULL);
	if (errno == EACCES)
		BLOCKED("exec from /rw refused");
	ESCAPED("exec from /rw failed only with %s", strerror(errno));
}
