/* Fuzz target: a message of an MCP peer (jsonrpc.c, mcp.c). What decodes
 * encodes to one line that decodes to the same message; the framer, fed
 * the input in two pieces, hands out lines within its cap; the schema check
 * of a tool's arguments never fails without naming the field. */
#include "fuzz.h"

#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"

static int count_line(void *u, const char *line, size_t len)
{
	FUZZ_CHECK(!line || (len > 0 && len <= 64 && !memchr(line, '\n', len)));
	(*(size_t *)u)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	moat_jsonrpc_msg m = {0};
	json_t *id = NULL;
	const char *why = NULL;
	int r = moat_jsonrpc_decode(buf, size, &m, &id, &why);
	if (r < 0) {
		FUZZ_CHECK(why && (r == MOAT_JSONRPC_PARSE_ERROR || r == MOAT_JSONRPC_INVALID_REQUEST));
		FUZZ_CHECK(!m.msg);
		json_t *sid = moat_jsonrpc_salvage_id(buf, size);
		FUZZ_CHECK(!sid || json_is_integer(sid) || json_is_string(sid));
		json_decref(sid);
	} else {
		size_t n;
		char *line = moat_jsonrpc_encode_line(m.msg, &n);
		FUZZ_CHECK(line && n > 0 && line[n - 1] == '\n' && !memchr(line, '\n', n - 1));
		moat_jsonrpc_msg again = {0};
		json_t *id2 = NULL;
		FUZZ_CHECK(moat_jsonrpc_decode(line, n - 1, &again, &id2, &why) == 0);
		FUZZ_CHECK(again.kind == m.kind && json_equal(again.msg, m.msg));
		FUZZ_CHECK((!m.id && !again.id) || moat_jsonrpc_id_equal(m.id, again.id));
		/* A tools/call's arguments meet run_code's schema or are named. */
		json_t *args = json_object_get(m.params, "arguments");
		if (args) {
			char msg[512] = "";
			if (moat_mcp_schema_check(moat_mcp_tool_schema("run_code"), args, "arguments", msg, sizeof(msg)) < 0)
				FUZZ_CHECK(strncmp(msg, "arguments", 9) == 0);
		}
		json_decref(id2);
		moat_jsonrpc_msg_clear(&again);
		free(line);
	}
	json_decref(id);
	moat_jsonrpc_msg_clear(&m);
	/* The framer with a small cap, the input in two pieces. */
	moat_jsonrpc_framer f;
	moat_jsonrpc_framer_init(&f, 64);
	size_t lines = 0, half = size / 2;
	FUZZ_CHECK(moat_jsonrpc_framer_feed(&f, buf, half, count_line, &lines) == 0);
	FUZZ_CHECK(moat_jsonrpc_framer_feed(&f, buf + half, size - half, count_line, &lines) == 0);
	FUZZ_CHECK(f.cap <= 64);
	moat_jsonrpc_framer_free(&f);
	return 0;
}
