/* Fuzz target: an OCI bundle's config.json (oci-spec.c). Whatever is
 * refused is refused with one message; whatever is taken keeps moat's
 * boundary: no capability granted, moat's namespaces listed, paths clean,
 * limits within their ranges. */
#include "fuzz.h"

#include <string.h>

#include "oci-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	moat_oci_spec *s = NULL;
	moat_error err = {0};
	int r = moat_oci_spec_parse((const char *)data, size, "/bundle", &s, &err);
	if (r < 0) {
		FUZZ_CHECK(err.msg[0] && err.code > 0 && !s);
		return 0;
	}
	FUZZ_CHECK(s->caps_granted == 0);
	const unsigned need = (1u << MOAT_OCI_NS_PID) | (1u << MOAT_OCI_NS_NETWORK) | (1u << MOAT_OCI_NS_MOUNT) |
			      (1u << MOAT_OCI_NS_IPC) | (1u << MOAT_OCI_NS_UTS);
	FUZZ_CHECK((s->namespaces & need) == need);
	FUZZ_CHECK(s->args && s->args[0] && s->args[0][0]);
	FUZZ_CHECK(moat_path_is_clean_absolute(s->cwd));
	FUZZ_CHECK(s->root_path && s->root_path[0] == '/');
	for (size_t i = 0; i < s->n_mounts; i++)
		FUZZ_CHECK(moat_path_is_clean_absolute(s->mounts[i].destination));
	for (size_t i = 0; i < s->n_sysctls; i++)
		FUZZ_CHECK(moat_oci_sysctl_is_namespaced(s->sysctls[i].key) && !strstr(s->sysctls[i].key, ".."));
	FUZZ_CHECK(s->memory_bytes == MOAT_UNLIMITED || s->memory_bytes <= MOAT_MAX_SIZE);
	FUZZ_CHECK(s->pids == MOAT_UNLIMITED || s->pids <= MOAT_MAX_PIDS);
	moat_oci_spec_free(s);
	return 0;
}
