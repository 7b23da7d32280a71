/* ATTACK: reach a terminal of the host or of another sandbox through /dev/pts | LAYER: a devpts instance of the sandbox's own (newinstance) | REF: - */
#include "attack.h"
#include <dirent.h>

int main(void)
{
	/* Pseudo-terminals work inside: this attack means something only if
	 * /dev/pts is a devpts and not merely absent. */
	int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		BROKEN("no /dev/ptmx: %s", strerror(errno));
	int n = -1;
	if (ioctl(m, TIOCGPTN, &n) < 0)
		BROKEN("TIOCGPTN: %s", strerror(errno));
	/* A fresh instance numbers from 0; the host's /dev/pts would hand out
	 * the next free number after the host's own terminals. */
	DIR *d = opendir("/dev/pts");
	if (!d)
		BROKEN("opendir /dev/pts: %s", strerror(errno));
	char own[16];
	snprintf(own, sizeof(own), "%d", n);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "ptmx") &&
		    strcmp(e->d_name, own))
			ESCAPED("/dev/pts holds %s, a terminal that is not the sandbox's", e->d_name);
	closedir(d);
	char path[32];
	for (int i = 0; i < 256; i++) {
		if (i == n)
			continue;
		snprintf(path, sizeof(path), "/dev/pts/%d", i);
		int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			ESCAPED("opened %s", path);
	}
	BLOCKED("only the sandbox's own terminal (pts/%d) is in its devpts", n);
}
