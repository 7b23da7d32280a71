/* ATTACK: open the sandbox init's /proc/1/exe (a host binary) for writing, as in the runc overwrite | LAYER: init not dumpable, ptrace access check, read-only mounts | REF: CVE-2019-5736 */
#include "attack.h"

int main(void)
{
	MUST_FAIL("open /proc/1/exe O_WRONLY", open("/proc/1/exe", O_WRONLY | O_CLOEXEC));
	int fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		MUST_FAIL("reopen /proc/1/exe O_WRONLY through O_PATH", open(p, O_WRONLY | O_CLOEXEC));
	}
	BLOCKED("the init binary cannot be opened for writing");
}
