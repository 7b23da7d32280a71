/* TLS termination's certificates: a certificate authority made for one
 * sandbox at its start, whose key never leaves the supervisor, and leaf
 * certificates it signs for the hosts whose HTTPS the gateway terminates
 * (a secret bound to the host, or a method or path rule for it), made once
 * per host and kept. The sandbox trusts the authority's certificate (and
 * nothing signed by it outlives the run: the authority is valid for
 * MOAT_TLS_CA_DAYS, and a new one is made for every sandbox).
 *
 * Also the two TLS contexts the gateway needs: towards the sandbox, serving
 * a leaf; towards the upstream, verifying the server against the host's
 * trust store (plus, for tests only, one more authority) with the real
 * host name. Both offer ALPN "http/1.1" only: the gateway speaks HTTP/1.1,
 * and a client that wanted h2 falls back to it. */
#pragma once

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

/* Leaf certificates kept per authority, one per host: more hosts than this
 * are refused rather than growing the supervisor without bound. */
#define MOAT_TLS_MAX_LEAVES 1024
#define MOAT_TLS_CA_DAYS 7

typedef struct moat_tls_ca moat_tls_ca;

/* A fresh authority: an EC P-256 key and a self-signed certificate naming
 * the sandbox (label, e.g. its session id, in the subject). */
int moat_tls_ca_new(const char *label, moat_tls_ca **ret, moat_error *err);
void moat_tls_ca_free(moat_tls_ca *ca);
static inline void moat_tls_ca_freep(moat_tls_ca **ca) { moat_tls_ca_free(*ca); }
#define _cleanup_tls_ca_ _cleanup_(moat_tls_ca_freep)

/* The authority's certificate as PEM (NUL-terminated, owned by ca): what
 * the sandbox's trust store gets. Never the key. */
const char *moat_tls_ca_pem(const moat_tls_ca *ca);

/* Sets ssl (a server-side SSL) to present a leaf for host, an already
 * normalised name or IP literal, made on first use and kept. -E2BIG past
 * MOAT_TLS_MAX_LEAVES. */
int moat_tls_ca_use_leaf(moat_tls_ca *ca, SSL *ssl, const char *host, moat_error *err);
/* How many leaves were made (one key generation each). */
size_t moat_tls_ca_leaf_count(const moat_tls_ca *ca);

/* The server-side context for the sandbox's side: TLS 1.2 and later, ALPN
 * http/1.1 only. */
int moat_tls_server_ctx(SSL_CTX **ret, moat_error *err);
/* The client-side context for the upstream side: peer verification
 * against the host's default trust store, plus extra_ca_file when not
 * NULL (a test-only option); ALPN http/1.1. Each connection must still
 * name its host with moat_tls_client_prepare. */
int moat_tls_client_ctx(const char *extra_ca_file, SSL_CTX **ret, moat_error *err);
/* SNI and the name the certificate must carry (host name or IP literal). */
int moat_tls_client_prepare(SSL *ssl, const char *host, moat_error *err);
