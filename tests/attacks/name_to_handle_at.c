/* ATTACK: get a file handle (the first half of the shocker escape) | LAYER: seccomp (name_to_handle_at) | REF: Docker shocker (2014) */
#include "attack.h"

int main(void)
{
	struct {
		unsigned int handle_bytes;
		int handle_type;
		unsigned char f_handle[128];
	} h = {128, 0, {0}};
	int mount_id;
	EXPECT_FAIL("name_to_handle_at(/usr)", syscall(SYS_name_to_handle_at, AT_FDCWD, "/usr", &h, &mount_id, 0));
}
