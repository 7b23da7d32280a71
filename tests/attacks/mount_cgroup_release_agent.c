/* ATTACK: mount cgroup v1 and set release_agent to run a program on the host | LAYER: seccomp (mount), no CAP_SYS_ADMIN, cgroup namespace | REF: CVE-2022-0492 */
#include "attack.h"

int main(void)
{
	mkdir("/tmp/cg", 0755);
	MUST_FAIL("mount cgroup v1 (rdma)", mount("cgroup", "/tmp/cg", "cgroup", 0, "rdma"));
	MUST_FAIL("mount cgroup v1 (memory)", mount("cgroup", "/tmp/cg", "cgroup", 0, "memory"));
	int fd = open("/sys/fs/cgroup/release_agent", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "/tmp/x", 6) == 6)
		ESCAPED("wrote release_agent");
	BLOCKED("no cgroup v1 mount, no release_agent: %s", strerror(errno));
}
