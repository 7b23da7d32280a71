/* ATTACK: a moat eval sample reads the warm interpreter's memory, environment or descriptors (its control pipe carries the next sample's request) through /proc, or attaches to it | LAYER: the interpreter is not dumpable; the sample's Landlock domain refuses ptrace access outside it; seccomp refuses ptrace and process_vm_readv | REF: CVE-2019-5736 */
#include "eval_warm.h"

#include <sys/ptrace.h>
#include <sys/uio.h>

int main(void)
{
	pid_t pids[256];
	size_t n = outsiders(pids, 256);
	if (n == 0)
		BROKEN("no process outside this session to aim at");
	static const char *const files[] = {"mem", "environ", "maps", "fd/0", "fd/1", "fd/2", "fd/3", "fd/4"};
	for (size_t i = 0; i < n; i++) {
		char path[64];
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			snprintf(path, sizeof(path), "/proc/%d/%s", (int)pids[i], files[f]);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				char b[16];
				/* maps of a dumpable process is no secret; its
				 * content is: read it to be sure. */
				if (read(fd, b, sizeof(b)) > 0)
					ESCAPED("read %s", path);
				close(fd);
			}
		}
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pids[i]);
		DIR *d = opendir(path);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d)))
				if (e->d_name[0] != '.')
					ESCAPED("listed %s", path);
			closedir(d);
		}
		MUST_FAIL("ptrace(PTRACE_ATTACH, outsider)", ptrace(PTRACE_ATTACH, pids[i], 0, 0));
		char b[16];
		struct iovec local = {b, sizeof(b)}, remote = {(void *)0x400000, sizeof(b)};
		errno = 0;
		if (process_vm_readv(pids[i], &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT)
			ESCAPED("process_vm_readv on %d was allowed", (int)pids[i]);
	}
	BLOCKED("none of %zu processes outside the sample could be read", n);
}
