/* ATTACK: write without end to stdout | LAYER: output cap | REF: - */
/* RUN: --output 1M | EXPECT: output_limit */
#include "attack.h"

int main(void)
{
	static char buf[65536];
	memset(buf, 'A', sizeof(buf));
	for (size_t total = 0; total < (256u << 20); total += sizeof(buf))
		if (write(1, buf, sizeof(buf)) < 0)
			BLOCKED("write failed: %s", strerror(errno));
	ESCAPED("wrote 256 MiB");
}
