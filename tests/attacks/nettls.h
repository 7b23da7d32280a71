/* Shared by the net_tls_* attacks: speak HTTPS through the sandbox's proxy
 * port to a host whose TLS the gateway terminates (it trusts the sandbox's
 * authority, from SSL_CERT_FILE, as any client there does), the way a
 * hostile program would: several requests written at once on one
 * connection, bodies that hold requests.
 *
 * The test that runs them (tests/integration/net_secrets_keepalive.sh)
 * gives the run:
 *   MOAT_T_TLS    "HOST:PORT" of an HTTPS upstream that answers a path
 *                 holding "echo" with the request head it received
 *   GITHUB_TOKEN  the placeholder of a secret bound to HOST for GET and
 *                 POST on paths under /repos/myorg/ only
 * net_attacks.sh leaves them to it. */
#pragma once

#include "netsecret.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

static inline const char *nt_target(void)
{
	const char *s = getenv("MOAT_T_TLS");
	return s && strchr(s, ':') ? s : NULL;
}

/* The placeholder of the secret bound to MOAT_T_TLS's host. */
static inline const char *nt_placeholder(void)
{
	const char *p = getenv("GITHUB_TOKEN");
	return p && strncmp(p, "moat_ph_", 8) == 0 ? p : NULL;
}

/* CONNECT to MOAT_T_TLS, then TLS inside the tunnel; writes req whole, in
 * one TLS record where it fits, and reads every byte until the connection
 * ends (or 10 s pass) into out. Returns the bytes read, or -1 with why set
 * when the tunnel or the handshake failed. */
static inline long nt_exchange(const char *req, size_t req_len, char *out, size_t cap, const char **why)
{
	const char *target = nt_target();
	char host[256];
	snprintf(host, sizeof(host), "%.*s", (int)(strchr(target, ':') - target), target);
	int fd = na_proxy_connect();
	if (fd < 0) {
		*why = "no proxy port";
		return -1;
	}
	char head[512];
	int hl = snprintf(head, sizeof(head), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	char resp[1024];
	if (na_send(fd, head, (size_t)hl) < 0 || !na_read_head(fd, resp, sizeof(resp)) || na_status(resp) != 200) {
		close(fd);
		*why = "the gateway did not open the tunnel";
		return -1;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	const char *ca = getenv("SSL_CERT_FILE");
	if (!ctx || !ca || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		SSL_CTX_free(ctx);
		close(fd);
		*why = "no trust store in SSL_CERT_FILE";
		return -1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, host);
	SSL_set1_host(ssl, host);
	if (SSL_connect(ssl) != 1) {
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
		*why = "the TLS handshake with the gateway failed";
		return -1;
	}
	long got = -1;
	if (SSL_write(ssl, req, (int)req_len) == (int)req_len) {
		got = 0;
		while ((size_t)got + 1 < cap) {
			int n = SSL_read(ssl, out + got, (int)(cap - 1 - (size_t)got));
			if (n <= 0)
				break;
			got += n;
		}
		out[got] = '\0';
	} else {
		*why = "the request could not be written";
	}
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return got;
}

/* How many HTTP responses (status lines) out holds. */
static inline int nt_responses(const char *out)
{
	int n = 0;
	for (const char *p = out; (p = strstr(p, "HTTP/1.1 ")); p += 9)
		n += p == out || p[-1] == '\n';
	return n;
}
