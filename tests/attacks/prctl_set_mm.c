/* ATTACK: replace /proc/self/exe with PR_SET_MM_EXE_FILE | LAYER: no CAP_SYS_RESOURCE | REF: - */
#include "attack.h"

int main(void)
{
	int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	EXPECT_FAIL("PR_SET_MM_EXE_FILE", prctl(PR_SET_MM, 13 /* PR_SET_MM_EXE_FILE */, fd, 0, 0));
}
