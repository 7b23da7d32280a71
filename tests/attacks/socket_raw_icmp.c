/* ATTACK: open a raw IP socket to forge packets | LAYER: caps dropped (CAP_NET_RAW), network namespace | REF: - */
#include "attack.h"
#include <netinet/in.h>

int main(void)
{
	EXPECT_FAIL("socket(AF_INET, SOCK_RAW)", socket(AF_INET, SOCK_RAW, 1 /* ICMP */));
}
