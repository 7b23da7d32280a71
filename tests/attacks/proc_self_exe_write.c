/* ATTACK: open /proc/self/exe for writing to overwrite the binary that runs it | LAYER: read-only bind, Landlock, ETXTBSY | REF: CVE-2019-5736 */
#include "attack.h"

int main(void)
{
	MUST_FAIL("open /proc/self/exe O_WRONLY", open("/proc/self/exe", O_WRONLY | O_CLOEXEC));
	EXPECT_FAIL("open /proc/self/exe O_RDWR", open("/proc/self/exe", O_RDWR | O_CLOEXEC));
}
