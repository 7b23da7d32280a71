/* ATTACK: from a session moatd made, plant a sparse file of 48 MiB (which costs the sandbox nothing; the agent profile allows 1 GiB) and a folder of a thousand files, for the API's GET /v1/sessions/ID/files to copy onto the host: the file written out dense in moatd's state folder before its size is checked, the folder's tree left behind there for good, each download adding to it | LAYER: moatd asks `moat session cp --max-bytes OUTPUT_CAP --file`: a copy out stops at the cap and removes what it wrote, and a folder is refused before anything lands (session-cp.c) | REF: CWE-400 */
/* moatd_attacks.sh runs it in a session through moatd (its verdict is the host's: what the downloads left and wrote); in a plain run it only plants. */
#include "attack.h"

#define SPARSE (48ull << 20)
#define TREE_FILES 1000

int main(void)
{
	int fd = open("/tmp/sparse", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)SPARSE) < 0 || pwrite(fd, "end", 3, (off_t)SPARSE - 3) != 3)
		BROKEN("sparse file: %s", strerror(errno));
	close(fd);
	if (mkdir("/tmp/tree", 0755) < 0)
		BROKEN("mkdir /tmp/tree: %s", strerror(errno));
	for (int i = 0; i < TREE_FILES; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/tmp/tree/f%04d", i);
		int f = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (f < 0 || write(f, "x", 1) != 1)
			BROKEN("%s: %s", p, strerror(errno));
		close(f);
	}
	BLOCKED("planted /tmp/sparse (%llu bytes, sparse) and /tmp/tree (%d files) for a download", SPARSE,
		TREE_FILES);
}
