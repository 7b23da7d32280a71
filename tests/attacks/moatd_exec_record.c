/* ATTACK: a detached exec rewrites the record moatd keeps of it (its status, result or output) or another's, to report a run it did not have | LAYER: mount namespace (moatd's state folder not bound in; the record is written outside the sandbox by the exec's watcher) | REF: - */
#include "attack.h"
#include <dirent.h>
#include <fcntl.h>

/* Run by tests/integration/moatd_detach.sh as a detached exec, with its own
 * record's folder (STATE/execs/ID) as argv[1]; alone, moatd's default
 * state folders. */
int main(int argc, char **argv)
{
	char xdg[128];
	snprintf(xdg, sizeof(xdg), "/run/user/%u/moat/moatd/execs", (unsigned)getuid());
	const char *dirs[] = {argc > 1 ? argv[1] : "/run/moat/moatd/execs", "/run/moat/moatd/execs", xdg};
	static const char *const files[] = {"status.json", "result.json", "stdout", "meta.json"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = opendir(dirs[i]);
		if (d)
			ESCAPED("listed %s", dirs[i]);
		for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
			char p[512];
			snprintf(p, sizeof(p), "%s/%s", dirs[i], files[k]);
			int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd >= 0) {
				(void)write(fd, "{\"exit_code\":0}\n", 16);
				ESCAPED("wrote %s", p);
			}
		}
	}
	BLOCKED("moatd's records of execs are not reachable from inside");
}
