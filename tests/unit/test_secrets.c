/* Placeholders: shape, length class, and recognising them (secrets.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "secrets.h"

static void test_placeholder_len(void **state)
{
	(void)state;
	/* "moat_ph_" + "github" + "_" + 32 digits. */
	assert_int_equal(moat_placeholder_len("github", 0), 47);
	assert_int_equal(moat_placeholder_len("github", 40), 47);
	/* A longer value: as long as it, so a client checking the length of
	 * its token accepts the placeholder. */
	assert_int_equal(moat_placeholder_len("github", 108), 108);
	assert_int_equal(moat_placeholder_len("github", 100000), MOAT_PLACEHOLDER_MAX);
}

static void test_placeholder_format(void **state)
{
	(void)state;
	uint8_t rnd[MOAT_PLACEHOLDER_MAX];
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 37 + 11);
	char out[MOAT_PLACEHOLDER_MAX + 1];
	assert_int_equal(moat_placeholder_format("Model-Key", rnd, 60, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), 60);
	/* Lower case, '-' as '_', then hex only. */
	assert_memory_equal(out, "moat_ph_model_key_", 18);
	for (size_t i = 18; i < 60; i++)
		assert_non_null(strchr("0123456789abcdef", out[i]));
	/* Too short for 32 random digits, too long, or no room: refused. */
	assert_int_equal(moat_placeholder_format("github", rnd, 46, out, sizeof(out)), -EINVAL);
	assert_int_equal(moat_placeholder_format("github", rnd, MOAT_PLACEHOLDER_MAX + 1, out, sizeof(out)), -EINVAL);
	assert_int_equal(moat_placeholder_format("github", rnd, 47, out, 47), -EINVAL);
	/* Different randomness, different placeholder. */
	char other[MOAT_PLACEHOLDER_MAX + 1];
	rnd[20] ^= 1;
	assert_int_equal(moat_placeholder_format("Model-Key", rnd, 60, other, sizeof(other)), 0);
	assert_string_not_equal(out, other);
}

static void test_placeholder_seen(void **state)
{
	(void)state;
	size_t off = 99;
	const char *a = "GET /x?k=moat_ph_github_0123 HTTP/1.1";
	assert_true(moat_placeholder_seen(a, strlen(a), &off));
	assert_int_equal(off, 9);
	/* Any case, and percent-encoded as a URL would carry it. */
	const char *b = "Host: MOAT_PH_GITHUB_0123.evil.example";
	assert_true(moat_placeholder_seen(b, strlen(b), NULL));
	const char *c = "q=moat%5Fph%5Fgithub";
	assert_true(moat_placeholder_seen(c, strlen(c), &off));
	assert_int_equal(off, 2);
	const char *d = "moat_p";
	assert_false(moat_placeholder_seen(d, strlen(d), NULL));
	assert_false(moat_placeholder_seen("moat_ph_", 7, NULL));
	const char *e = "Authorization: Bearer ghp_real";
	assert_false(moat_placeholder_seen(e, strlen(e), NULL));
}

static moat_secret_action decide(const moat_secret *s, const char *host, const char *method, const char *path,
				 bool tls, bool in_headers, bool elsewhere, uint64_t age, uint64_t uses, char *why)
{
	moat_secret_request q = {.host = host, .method = method, .path = path, .tls = tls, .ph_in_headers = in_headers,
				 .ph_elsewhere = elsewhere, .age_ms = age, .uses = uses};
	return moat_secret_decide(s, &q, why, 256);
}

static void test_decide(void **state)
{
	(void)state;
	char *hosts[] = {"api.github.com", NULL};
	char *methods[] = {"GET", "POST", NULL};
	char *paths[] = {"/repos/myorg/*", "/user", NULL};
	moat_secret gh = {.name = "github", .hosts = hosts, .methods = methods, .paths = paths,
			  .expires_ms = 7200000, .max_uses = 3};
	char why[256];
	/* Bound host, method and path, over terminated TLS: injected. */
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/repos/myorg/x", true, true, false, 0, 0, why),
			 MOAT_SECRET_INJECT);
	assert_int_equal(decide(&gh, "api.github.com", "POST", "/user", true, true, false, 0, 2, why), MOAT_SECRET_INJECT);
	/* Not this method or path: refused, the placeholder does not leave. */
	assert_int_equal(decide(&gh, "api.github.com", "DELETE", "/repos/myorg/x", true, true, false, 0, 0, why),
			 MOAT_SECRET_REFUSE);
	assert_non_null(strstr(why, "inject.methods"));
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/repos/other/x", true, true, false, 0, 0, why),
			 MOAT_SECRET_REFUSE);
	assert_non_null(strstr(why, "inject.paths"));
	/* Dot segments are resolved before the path is matched. */
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/repos/myorg/../../admin", true, true, false, 0, 0, why),
			 MOAT_SECRET_REFUSE);
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/repos/myorg/%2e%2e/x", true, true, false, 0, 0, why),
			 MOAT_SECRET_REFUSE);
	/* Expired, used up: refused with the reason. */
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/user", true, true, false, 7200000, 0, why),
			 MOAT_SECRET_REFUSE);
	assert_non_null(strstr(why, "expired 2h"));
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/user", true, true, false, 0, 3, why), MOAT_SECRET_REFUSE);
	assert_non_null(strstr(why, "used its 3 times"));
	/* Another host, a look-alike, plain HTTP, the URL or a body: misuse. */
	assert_int_equal(decide(&gh, "api.github.com.evil.test", "GET", "/user", true, true, false, 0, 0, why),
			 MOAT_SECRET_MISUSE);
	assert_non_null(strstr(why, "not bound to"));
	assert_null(strstr(why, "moat_ph"));
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/user", false, true, false, 0, 0, why),
			 MOAT_SECRET_MISUSE);
	assert_non_null(strstr(why, "plain HTTP"));
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/user", true, false, true, 0, 0, why), MOAT_SECRET_MISUSE);
	assert_int_equal(decide(&gh, "evil.test", NULL, NULL, false, false, true, 0, 0, why), MOAT_SECRET_MISUSE);
	/* No placeholder, no header of its own: nothing to do. */
	assert_int_equal(decide(&gh, "api.github.com", "GET", "/user", true, false, false, 0, 0, why), MOAT_SECRET_SKIP);
	assert_int_equal(decide(&gh, "evil.test", "GET", "/", true, false, false, 0, 0, why), MOAT_SECRET_SKIP);

	/* A header the gateway sets itself: added to every bound request,
	 * simply not added to others. */
	char *mh[] = {"*.example.test", NULL};
	moat_secret model = {.name = "model", .hosts = mh, .header = "x-api-key", .methods = methods};
	assert_int_equal(decide(&model, "api.example.test", "POST", "/v1", true, false, false, 0, 0, why),
			 MOAT_SECRET_INJECT);
	assert_int_equal(decide(&model, "api.example.test", "PUT", "/v1", true, false, false, 0, 0, why),
			 MOAT_SECRET_SKIP);
	assert_int_equal(decide(&model, "api.example.test", "POST", "/v1", false, false, false, 0, 0, why),
			 MOAT_SECRET_SKIP);

	/* A honeytoken: any use at all. */
	moat_secret decoy = {.name = "aws-decoy", .honeytoken = true};
	assert_int_equal(decide(&decoy, "s3.amazonaws.com", "GET", "/", true, true, false, 0, 0, why), MOAT_SECRET_MISUSE);
	assert_non_null(strstr(why, "honeytoken aws-decoy"));
	assert_int_equal(decide(&decoy, "s3.amazonaws.com", "GET", "/", true, false, false, 0, 0, why), MOAT_SECRET_SKIP);
}

static void test_replace_format(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(moat_secret_replace("Bearer PH and PH", "PH", "real-value", &out), 2);
	assert_string_equal(out, "Bearer real-value and real-value");
	free(out);
	assert_int_equal(moat_secret_replace("nothing here", "PH", "x", &out), 0);
	assert_null(out);
	out = moat_secret_format("Bearer {value}", "tok");
	assert_string_equal(out, "Bearer tok");
	free(out);
	out = moat_secret_format(NULL, "tok");
	assert_string_equal(out, "tok");
	free(out);
}

static void test_forms(void **state)
{
	(void)state;
	char *f[MOAT_SECRET_FORMS];
	/* "tok/en+1?" in base64 ends in '/', so its base64url differs; its
	 * percent-encoding escapes '/', '+' and '?'. */
	int n = moat_secret_forms("tok/en+1?", f);
	assert_int_equal(n, 3);
	assert_string_equal(f[0], "dG9rL2VuKzE/");
	assert_string_equal(f[1], "dG9rL2VuKzE_");
	assert_string_equal(f[2], "tok%2Fen%2B1%3F");
	for (int i = 0; i < n; i++)
		free(f[i]);
	/* Padding, and forms equal to the value or to each other left out. */
	n = moat_secret_forms("ab", f);
	assert_int_equal(n, 2);
	assert_string_equal(f[0], "YWI=");
	assert_string_equal(f[1], "YWI");
	for (int i = 0; i < n; i++)
		free(f[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder_len),
		cmocka_unit_test(test_placeholder_format),
		cmocka_unit_test(test_placeholder_seen),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_replace_format),
		cmocka_unit_test(test_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
