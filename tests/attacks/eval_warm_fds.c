/* ATTACK: a moat eval sample uses a descriptor it inherited from the warm interpreter (its control pipes carry the next sample's request) | LAYER: the child keeps only its request, its output and /dev/null: every other descriptor is closed before any sample code runs | REF: CVE-2024-21626 */
#include "eval_warm.h"

int main(void)
{
	/* Run as the sample itself (tests/integration/eval_warm_attacks.sh
	 * execs it from the sample): what it holds is what the sample held. */
	char path[64], target[256];
	for (int fd = 3; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) >= 0) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			ssize_t k = readlink(path, target, sizeof(target) - 1);
			target[k > 0 ? k : 0] = 0;
			ESCAPED("fd %d is open at start: %s", fd, target);
		}
	/* And the parent's table, where its control pipes are. */
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)getppid());
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				ESCAPED("listed %s", path);
		closedir(d);
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)getppid());
	EXPECT_FAIL("open the parent's stdin", open(path, O_RDONLY | O_CLOEXEC));
}
