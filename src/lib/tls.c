/* TLS termination's certificates and contexts (tls.h), with OpenSSL. */
#include "tls.h"

#include "util.h"

#include <arpa/inet.h>
#include <string.h>

/* OpenSSL 3.0's err.h uses INT_MAX, and <limits.h> here is libmoat's
 * (the include path), not the C library's. */
#ifndef INT_MAX
#define INT_MAX __INT_MAX__
#endif
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

typedef struct leaf {
	char *host;
	X509 *cert;
	EVP_PKEY *key;
} leaf;

struct moat_tls_ca {
	EVP_PKEY *key;
	X509 *cert;
	char *pem;
	leaf *leaves;
	size_t n_leaves, cap_leaves;
};

/* OpenSSL's own reason for the last failure, for the message. */
static int tls_fail(moat_error *err, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "unknown error");
	ERR_clear_error();
	return moat_error_set(err, EPROTO, "%s: %s", what, buf);
}

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

static bool set_serial(X509 *x)
{
	unsigned char b[16];
	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f; /* a positive serial */
	BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
	bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
	BN_free(bn);
	return ok;
}

static bool add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	bool ok = e && X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A certificate valid from an hour ago (clocks differ) for days. */
static X509 *new_cert(const char *cn, EVP_PKEY *pub, int days)
{
	X509 *x = X509_new();
	if (!x || !X509_set_version(x, 2) || !set_serial(x) || !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) || !X509_set_pubkey(x, pub)) {
		X509_free(x);
		return NULL;
	}
	X509_NAME *n = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)"moat", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0)) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int moat_tls_ca_new(const char *label, moat_tls_ca **ret, moat_error *err)
{
	moat_tls_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return moat_error_set(err, ENOMEM, "TLS authority");
	char cn[128];
	snprintf(cn, sizeof(cn), "moat sandbox CA %.80s", label ? label : "");
	int r = 0;
	if (!(ca->key = new_key())) {
		r = tls_fail(err, "TLS authority: key");
		goto fail;
	}
	ca->cert = new_cert(cn, ca->key, MOAT_TLS_CA_DAYS);
	if (!ca->cert || !X509_set_issuer_name(ca->cert, X509_get_subject_name(ca->cert)) ||
	    !add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") ||
	    !X509_sign(ca->cert, ca->key, EVP_sha256())) {
		r = tls_fail(err, "TLS authority: certificate");
		goto fail;
	}
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	long len;
	if (!b || !PEM_write_bio_X509(b, ca->cert) || (len = BIO_get_mem_data(b, &data)) <= 0 ||
	    !(ca->pem = strndup(data, (size_t)len))) {
		BIO_free(b);
		r = tls_fail(err, "TLS authority: PEM");
		goto fail;
	}
	BIO_free(b);
	*ret = ca;
	return 0;
fail:
	moat_tls_ca_free(ca);
	return r;
}

void moat_tls_ca_free(moat_tls_ca *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < ca->n_leaves; i++) {
		free(ca->leaves[i].host);
		X509_free(ca->leaves[i].cert);
		EVP_PKEY_free(ca->leaves[i].key);
	}
	free(ca->leaves);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	free(ca->pem);
	free(ca);
}

const char *moat_tls_ca_pem(const moat_tls_ca *ca)
{
	return ca->pem;
}

size_t moat_tls_ca_leaf_count(const moat_tls_ca *ca)
{
	return ca->n_leaves;
}

static int mint(moat_tls_ca *ca, const char *host, leaf *ret, moat_error *err)
{
	unsigned char ip[16];
	bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	char san[300];
	if (strlen(host) > 253)
		return moat_error_set(err, EINVAL, "TLS leaf: host name too long");
	snprintf(san, sizeof(san), "%s:%s", is_ip ? "IP" : "DNS", host);
	EVP_PKEY *key = new_key();
	if (!key)
		return tls_fail(err, "TLS leaf: key");
	/* A common name is at most 64 bytes; the name that counts is the
	 * subjectAltName. */
	char cn[65];
	snprintf(cn, sizeof(cn), "%s", host);
	X509 *x = new_cert(cn, key, MOAT_TLS_CA_DAYS);
	if (!x || !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
	    !add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
	    !add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") ||
	    !add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") ||
	    !add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") ||
	    !add_ext(x, ca->cert, NID_subject_alt_name, san) || !X509_sign(x, ca->key, EVP_sha256())) {
		X509_free(x);
		EVP_PKEY_free(key);
		return tls_fail(err, "TLS leaf: certificate");
	}
	*ret = (leaf){.host = strdup(host), .cert = x, .key = key};
	if (!ret->host) {
		X509_free(x);
		EVP_PKEY_free(key);
		return moat_error_set(err, ENOMEM, "TLS leaf");
	}
	return 0;
}

int moat_tls_ca_use_leaf(moat_tls_ca *ca, SSL *ssl, const char *host, moat_error *err)
{
	leaf *l = NULL;
	for (size_t i = 0; i < ca->n_leaves && !l; i++)
		if (strcmp(ca->leaves[i].host, host) == 0)
			l = &ca->leaves[i];
	if (!l) {
		if (ca->n_leaves >= MOAT_TLS_MAX_LEAVES)
			return moat_error_set(err, E2BIG, "TLS leaf for %s: more than %d hosts", host, MOAT_TLS_MAX_LEAVES);
		if (ca->n_leaves == ca->cap_leaves) {
			size_t cap = ca->cap_leaves ? ca->cap_leaves * 2 : 8;
			leaf *nv = realloc(ca->leaves, cap * sizeof(*nv));
			if (!nv)
				return moat_error_set(err, ENOMEM, "TLS leaf");
			ca->leaves = nv;
			ca->cap_leaves = cap;
		}
		int r = mint(ca, host, &ca->leaves[ca->n_leaves], err);
		if (r < 0)
			return r;
		l = &ca->leaves[ca->n_leaves++];
	}
	/* The chain: the leaf, then the authority, so clients that trust
	 * the authority need nothing else. */
	if (SSL_use_certificate(ssl, l->cert) != 1 || SSL_use_PrivateKey(ssl, l->key) != 1 ||
	    SSL_add1_chain_cert(ssl, ca->cert) != 1)
		return tls_fail(err, "TLS leaf: use");
	return 0;
}

static const unsigned char alpn_http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

/* Picks http/1.1 when the client offers it; a client offering only
 * something else (h2 alone) gets no ALPN answer and speaks HTTP/1.1 or
 * fails cleanly, never a protocol the gateway cannot read. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	unsigned char *sel = NULL;
	if (SSL_select_next_proto(&sel, outlen, alpn_http11, sizeof(alpn_http11), in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

int moat_tls_server_ctx(SSL_CTX **ret, moat_error *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
		SSL_CTX_free(ctx);
		return tls_fail(err, "TLS server context");
	}
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	/* No session tickets: each connection is short and a ticket key
	 * would be one more secret to keep. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
	*ret = ctx;
	return 0;
}

int moat_tls_client_ctx(const char *extra_ca_file, SSL_CTX **ret, moat_error *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) || SSL_CTX_set_default_verify_paths(ctx) != 1) {
		SSL_CTX_free(ctx);
		return tls_fail(err, "TLS client context");
	}
	if (extra_ca_file && SSL_CTX_load_verify_locations(ctx, extra_ca_file, NULL) != 1) {
		SSL_CTX_free(ctx);
		return tls_fail(err, "TLS client context: the extra authority");
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
	if (SSL_CTX_set_alpn_protos(ctx, alpn_http11, sizeof(alpn_http11)) != 0) {
		SSL_CTX_free(ctx);
		return tls_fail(err, "TLS client context: ALPN");
	}
	*ret = ctx;
	return 0;
}

int moat_tls_client_prepare(SSL *ssl, const char *host, moat_error *err)
{
	unsigned char ip[16];
	bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	/* SNI carries names only (RFC 6066 section 3); an address is checked
	 * against the certificate's IP entries. */
	if (!is_ip && SSL_set_tlsext_host_name(ssl, host) != 1)
		return tls_fail(err, "TLS: server name");
	X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
	X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if ((is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host) : X509_VERIFY_PARAM_set1_host(vp, host, 0)) != 1)
		return tls_fail(err, "TLS: the name to verify");
	return 0;
}
