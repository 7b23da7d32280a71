/* ATTACK: raise every capability with capset | LAYER: caps dropped (empty permitted and bounding sets) | REF: - */
#include "attack.h"
#include <linux/capability.h>

int main(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0xff, sizeof(d));
	EXPECT_FAIL("capset(all)", syscall(SYS_capset, &h, d));
}
