/* TLS termination's authority, leaves and contexts (tls.h): a handshake
 * between the two contexts over memory, as a client of the sandbox and an
 * upstream server would do it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OpenSSL 3.0's err.h uses INT_MAX, and <limits.h> here is libmoat's
 * (the include path), not the C library's. */
#ifndef INT_MAX
#define INT_MAX __INT_MAX__
#endif
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tls.h"

static char ca_file[] = "/tmp/moat-test-tls-XXXXXX";

/* Runs both ends until both finished or one failed; returns the client's
 * verify result, or -1 when the handshake failed otherwise. */
static long handshake(moat_tls_ca *ca, const char *serve_as, const char *client_wants, const char *extra_ca,
		      bool *ret_ok, char *alpn, size_t alpn_len)
{
	moat_error err = {0};
	SSL_CTX *sctx = NULL, *cctx = NULL;
	assert_int_equal(moat_tls_server_ctx(&sctx, &err), 0);
	assert_int_equal(moat_tls_client_ctx(extra_ca, &cctx, &err), 0);
	SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
	assert_int_equal(moat_tls_ca_use_leaf(ca, s, serve_as, &err), 0);
	assert_int_equal(moat_tls_client_prepare(c, client_wants, &err), 0);
	BIO *cb, *sb;
	assert_int_equal(BIO_new_bio_pair(&cb, 0, &sb, 0), 1);
	SSL_set_bio(c, cb, cb);
	SSL_set_bio(s, sb, sb);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	bool cdone = false, sdone = false, failed = false;
	for (int i = 0; i < 100 && !(cdone && sdone) && !failed; i++) {
		if (!cdone) {
			int r = SSL_do_handshake(c);
			cdone = r == 1;
			failed |= r <= 0 && SSL_get_error(c, r) != SSL_ERROR_WANT_READ;
		}
		if (!sdone) {
			int r = SSL_do_handshake(s);
			sdone = r == 1;
			failed |= r <= 0 && SSL_get_error(s, r) != SSL_ERROR_WANT_READ;
		}
	}
	*ret_ok = cdone && sdone && !failed;
	long v = SSL_get_verify_result(c);
	const unsigned char *p = NULL;
	unsigned pl = 0;
	SSL_get0_alpn_selected(c, &p, &pl);
	snprintf(alpn, alpn_len, "%.*s", (int)pl, p ? (const char *)p : "");
	ERR_clear_error();
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	return v;
}

static void test_ca_and_leaf(void **state)
{
	(void)state;
	moat_error err = {0};
	moat_tls_ca *ca = NULL;
	assert_int_equal(moat_tls_ca_new("test", &ca, &err), 0);
	const char *pem = moat_tls_ca_pem(ca);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	assert_null(strstr(pem, "PRIVATE KEY"));
	int fd = mkstemp(ca_file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, pem, strlen(pem)), (ssize_t)strlen(pem));
	close(fd);

	/* A client trusting the authority accepts the leaf for its host,
	 * and ALPN settles on http/1.1. */
	bool ok;
	char alpn[32];
	long v = handshake(ca, "api.example.test", "api.example.test", ca_file, &ok, alpn, sizeof(alpn));
	assert_true(ok);
	assert_int_equal(v, X509_V_OK);
	assert_string_equal(alpn, "http/1.1");
	assert_int_equal(moat_tls_ca_leaf_count(ca), 1);

	/* The leaf is kept: the same host costs no second key. */
	handshake(ca, "api.example.test", "api.example.test", ca_file, &ok, alpn, sizeof(alpn));
	assert_true(ok);
	assert_int_equal(moat_tls_ca_leaf_count(ca), 1);

	/* A leaf for another name does not pass for this one. */
	v = handshake(ca, "other.example.test", "api.example.test", ca_file, &ok, alpn, sizeof(alpn));
	assert_false(ok);
	assert_int_equal(v, X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(moat_tls_ca_leaf_count(ca), 2);

	/* An address gets an IP entry, checked as one. */
	v = handshake(ca, "127.0.0.2", "127.0.0.2", ca_file, &ok, alpn, sizeof(alpn));
	assert_true(ok);

	/* Without the authority (the host's store only), nothing it signed
	 * is trusted: the upstream side never accepts a sandbox's CA. */
	v = handshake(ca, "api.example.test", "api.example.test", NULL, &ok, alpn, sizeof(alpn));
	assert_false(ok);
	assert_int_not_equal(v, X509_V_OK);

	/* Another sandbox's authority is not this one. */
	moat_tls_ca *other = NULL;
	assert_int_equal(moat_tls_ca_new("other", &other, &err), 0);
	v = handshake(other, "api.example.test", "api.example.test", ca_file, &ok, alpn, sizeof(alpn));
	assert_false(ok);
	moat_tls_ca_free(other);
	moat_tls_ca_free(ca);
	unlink(ca_file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_and_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
