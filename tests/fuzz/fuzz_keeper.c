/* Fuzz target: a packet on a keeper's control socket (keeper-proto.c).
 * Whatever decodes encodes again, and that decodes to the same message. */
#include "fuzz.h"

#include <string.h>

#include "keeper-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_keeper_msg m, again;
	moat_keeper_msg_init(&m, _MOAT_KEEPER_MSG_INVALID);
	moat_error err = {0};
	int r = moat__keeper_decode((const char *)data, size, &m, &err);
	if (r < 0) {
		/* One message, naming what is wrong. */
		FUZZ_CHECK(err.msg[0] && err.code > 0);
		moat_keeper_msg_done(&m);
		return 0;
	}
	char *s = NULL;
	r = moat__keeper_encode(&m, &s, &err);
	/* A keeper's hello or status answer needs a valid id, which decode
	 * checked; what decode takes, encode writes. */
	FUZZ_CHECK(r == 0 && s);
	moat_keeper_msg_init(&again, _MOAT_KEEPER_MSG_INVALID);
	r = moat__keeper_decode(s, strlen(s), &again, &err);
	FUZZ_CHECK(r == 0 && again.type == m.type && again.tag == m.tag && again.id == m.id &&
		   again.signal == m.signal && again.tty == m.tty);
	for (size_t i = 0; m.argv && m.argv[i]; i++)
		FUZZ_CHECK(again.argv && again.argv[i] && strcmp(m.argv[i], again.argv[i]) == 0);
	free(s);
	moat_keeper_msg_done(&m);
	moat_keeper_msg_done(&again);
	return 0;
}
