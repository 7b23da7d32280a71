/* ATTACK: write into init's mapped files through /proc/1/map_files | LAYER: init not dumpable, no CAP_SYS_ADMIN | REF: CVE-2019-5736 */
#include "attack.h"

int main(void)
{
	char buf[4096];
	ssize_t n = slurp("/proc/1/maps", buf, sizeof(buf));
	if (n > 0)
		ESCAPED("read init's memory map (%zd bytes)", n);
	int d = open("/proc/1/map_files", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d >= 0) {
		FILE *f = fdopen(d, "r");
		(void)f;
	}
	BLOCKED("init's maps and map_files are closed: %s", strerror(errno));
}
