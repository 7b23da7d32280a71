/* Fuzz target: moatd's router and request decoders (src/moatd/api.c). The
 * first byte picks the body kind and the caller's role, the rest is the
 * body; the same bytes are also routed as a path. Whatever decodes holds
 * only what the checks allow, and every failure names one field. */
#include "fuzz.h"

#include <string.h>

#include "moatd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	moatd_body_kind kind = (moatd_body_kind)(data[0] & 3);
	moatd_role role = (moatd_role)(1 + (data[0] >> 2) % 4);
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	char path[512], id[MOATD_ID_MAX + 1];
	size_t n = len < sizeof(path) - 1 ? len : sizeof(path) - 1;
	memcpy(path, body, n);
	path[n] = '\0';
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
	moatd_route r = moatd_route_match(methods[data[0] & 3], path, id);
	FUZZ_CHECK(r >= MOATD_R_BAD_METHOD && r < _MOATD_R_MAX);
	if (r < 0)
		FUZZ_CHECK(id[0] == '\0');
	FUZZ_CHECK(strlen(id) <= MOATD_ID_MAX && !strchr(id, '/'));
	char sub[MOATD_ID_MAX + 1];
	r = moatd_route_match_sub(methods[data[0] & 3], path, id, sub);
	FUZZ_CHECK(r >= MOATD_R_BAD_METHOD && r < _MOATD_R_MAX);
	/* A second key is an exec's or an approval's id: hex, never a path. */
	FUZZ_CHECK(strspn(sub, "0123456789abcdef") + (sub[0] == 'a') >= strlen(sub));
	if (r != MOATD_R_SESSION_EXEC_GET && r != MOATD_R_APPROVAL_DECIDE)
		FUZZ_CHECK(sub[0] == '\0' || r == MOATD_R_BAD_METHOD);

	/* The same body as an approval's decision. */
	json_t *dreq = NULL;
	moat_error derr = {0};
	if (moatd_decision_decode("a0123abcd", body, len, &dreq, &derr) < 0)
		FUZZ_CHECK(!dreq && derr.msg[0]);
	else
		FUZZ_CHECK(json_is_string(json_object_get(dreq, "op")));
	json_decref(dreq);

	moatd_request q;
	moat_error err = {0};
	int rc = moatd_request_decode(kind, role, body, len, &q, &err);
	if (rc < 0) {
		FUZZ_CHECK(err.msg[0] && err.code > 0);
		return 0;
	}
	/* Every option is one "--name=value" that moat reads as one option. */
	for (size_t i = 0; q.opts && q.opts[i]; i++)
		FUZZ_CHECK(strncmp(q.opts[i], "--", 2) == 0 && strchr(q.opts[i], '='));
	if (kind == MOATD_BODY_RUN || kind == MOATD_BODY_EXEC)
		FUZZ_CHECK(q.argv && q.argv[0] && q.argv[0][0]);
	if (role < MOATD_ROLE_OPERATOR)
		FUZZ_CHECK(!q.policy);
	for (size_t i = 0; i < q.n_files; i++)
		FUZZ_CHECK(q.files[i].path[0] == '/' && !strchr(q.files[i].path, ':') && !strstr(q.files[i].path, "/../"));
	/* The warm pool (poolplan.c) serves a run only when nothing but the
	 * environment, the directory and the wall time differ from its
	 * profile. */
	if (kind == MOATD_BODY_RUN) {
		static moatd_pool_conf pool = {.n = 1, .e = {{.profile = "code", .size = 2, .wall_ms = 10000}}};
		moatd_pool_plan plan;
		if (moatd_pool_plan_run(&pool, q.opts, q.policy != NULL, q.n_files, &plan)) {
			FUZZ_CHECK(plan.profile == 0 && !q.policy && !q.n_files && plan.time_ms > 0);
			for (size_t i = 0; i < plan.n_env; i++)
				FUZZ_CHECK(strchr(plan.env[i], '='));
			FUZZ_CHECK(!plan.env[plan.n_env]);
		} else
			FUZZ_CHECK(plan.why_cold && plan.profile == -1);
	}
	moatd_request_done(&q);
	return 0;
}
