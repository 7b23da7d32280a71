/* Fuzz target: host names, authorities, request paths and the rules that
 * judge them. Normalising is idempotent: a normalised host or path read
 * again is itself. */
#include "fuzz.h"

#include <string.h>

#include "hostname.h"
#include "netrules.h"

static moat_netrules *rules(void)
{
	static moat_netrules *r;
	if (r)
		return r;
	static const char *const get[] = { "GET" };
	static const char *const pub[] = { "/public/*", "/status" };
	moat_netrule_spec specs[] = {
		{ .host = "admin.example.test", .action = MOAT_NET_DENY },
		{ .host = "*.example.test", .action = MOAT_NET_ALLOW, .methods = get, .n_methods = 1 },
		{ .host = "files.test", .action = MOAT_NET_ALLOW, .paths = pub, .n_paths = 2 },
		{ .host = "10.0.0.1", .action = MOAT_NET_APPROVE },
	};
	moat_error err = { 0 };
	moat_netrules_builder *b = moat_netrules_builder_new();
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		FUZZ_CHECK(moat_netrules_builder_add(b, &specs[i], &err) == 0);
	FUZZ_CHECK(moat_netrules_builder_finish(b, &r, &err) == 0);
	moat_netrules_builder_free(b);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_error err = { 0 };
	moat_host h, h2;
	uint16_t port;
	const char *s = (const char *)data;

	if (moat_host_normalize(s, size, &h, &err) == 0) {
		size_t n = strlen(h.name);
		FUZZ_CHECK(n >= 1 && n <= MOAT_HOST_MAX);
		FUZZ_CHECK(moat_host_normalize(h.name, n, &h2, &err) == 0);
		FUZZ_CHECK(strcmp(h.name, h2.name) == 0 && h.is_literal == h2.is_literal);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(h.name[i] > 0x20 && h.name[i] < 0x7f && !strchr("@#/\\?% ", h.name[i]) &&
				   !(h.name[i] >= 'A' && h.name[i] <= 'Z'));
		if (h.is_literal) {
			const char *why;
			moat_addr_class c = moat_addr_classify_addr(&h.addr, &why);
			FUZZ_CHECK(why != NULL && c >= 0 && c < _MOAT_ADDR_CLASS_MAX);
			FUZZ_CHECK(moat_addr_allowed_addr(&h.addr, NULL, 0, NULL) == (c == MOAT_ADDR_PUBLIC));
		}
		moat_net_request q = { .host = &h, .port = 443, .method = "GET", .path = "/public/x" };
		moat_net_decision d;
		moat_netrules_decide(rules(), &q, &d);
		FUZZ_CHECK(d.reason[0] != '\0');
		/* No spelling of a host reaches a literal rule it does not name. */
		if (d.action == MOAT_NET_APPROVE)
			FUZZ_CHECK(h.is_literal && strcmp(h.name, "10.0.0.1") == 0);
	} else {
		FUZZ_CHECK(err.msg[0] != '\0');
	}

	(void)moat_authority_parse(s, size, 80, &h, &port, &err);

	/* Paths: NUL-terminated copy, bounded. */
	char path[512], out[512], out2[512];
	size_t pl = size < sizeof(path) - 1 ? size : sizeof(path) - 1;
	memcpy(path, data, pl);
	path[pl] = '\0';
	if (moat_net_path_normalize(path, out, sizeof(out), &err) == 0) {
		FUZZ_CHECK(out[0] == '/' && !strstr(out, "//") && !strstr(out, "/./") && !strstr(out, "/../"));
		FUZZ_CHECK(moat_net_path_normalize(out, out2, sizeof(out2), &err) == 0);
		FUZZ_CHECK(strcmp(out, out2) == 0);
		moat_host f;
		FUZZ_CHECK(moat_host_normalize("files.test", 10, &f, &err) == 0);
		moat_net_request q = { .host = &f, .port = 80, .method = "GET", .path = path };
		moat_net_decision d;
		moat_netrules_decide(rules(), &q, &d);
		if (d.action == MOAT_NET_ALLOW)
			FUZZ_CHECK(strncmp(out, "/public/", 8) == 0 || strcmp(out, "/status") == 0 ||
				   strcmp(out, "/status/") == 0);
	}
	return 0;
}
