/* ATTACK: open a host file by handle, bypassing the mount namespace (the "shocker" escape) | LAYER: seccomp (open_by_handle_at), no CAP_DAC_READ_SEARCH | REF: Docker shocker (2014) */
#include "attack.h"

int main(void)
{
	struct {
		unsigned int handle_bytes;
		int handle_type;
		unsigned char f_handle[8];
	} h = {8, 1, {2, 0, 0, 0, 0, 0, 0, 0}}; /* the root inode of an ext4 file system */
	int root = open("/usr", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT_FAIL("open_by_handle_at(/usr, inode 2)", syscall(SYS_open_by_handle_at, root, &h, O_RDONLY));
}
