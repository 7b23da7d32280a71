/* ATTACK: start in a working directory outside the sandbox root (the runc leaked-cwd escape) | LAYER: init changes to a directory inside the new root | REF: CVE-2024-21626 */
#include "attack.h"

int main(void)
{
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		ESCAPED("getcwd failed (%s): the cwd is unreachable from /", strerror(errno));
	if (cwd[0] != '/')
		ESCAPED("cwd is %s", cwd);
	struct stat a, b;
	if (stat(".", &a) < 0 || stat(cwd, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		ESCAPED("cwd is not what its path names");
	int fd = open("..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	(void)fd;
	const char *canary = need_env("MOAT_CANARY_PATH");
	char p[4200];
	snprintf(p, sizeof(p), "../../../../../../../..%s", canary);
	if (access(p, F_OK) == 0)
		ESCAPED("host canary reachable from the cwd");
	BLOCKED("cwd %s is inside the sandbox", cwd);
}
