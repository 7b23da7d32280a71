/* Host names as the egress gateway compares them. Every name that reaches
 * the allowlist (from a CONNECT line, an absolute URL, a Host header, a TLS
 * SNI or a SOCKS5 request, and every pattern of the policy) is normalised
 * here first, so one name has one spelling: lower case, one trailing dot
 * removed, percent-escapes decoded and the result validated again,
 * internationalised names as punycode (IDNA 2008 with UTS #46 mapping), and
 * an address in any encoding turned into its canonical literal and flagged.
 * Pure functions. */
#pragma once

#include "error.h"
#include "netaddr.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_HOST_MAX 253       /* RFC 1035, without the trailing dot */
#define MOAT_HOST_LABEL_MAX 63
/* Longest raw input looked at, before decoding; anything longer is refused
 * without being examined. */
#define MOAT_HOST_INPUT_MAX 1024

typedef struct moat_host {
	/* Normalised name (ASCII), or the canonical text of the address when
	 * is_literal (IPv6 without brackets). */
	char name[MOAT_HOST_MAX + 1];
	bool is_literal;
	moat_addr addr; /* valid when is_literal */
} moat_host;

/* Normalises one host (no port, no userinfo; IPv6 may be in brackets).
 * Refuses, with a reason in err (code MOAT_EINPUT): empty names and labels,
 * labels over 63 and names over 253 bytes, NUL and control bytes, '@', '#',
 * '/', '\', '?', ':' outside an IPv6 literal, spaces, percent-escapes that
 * do not decode, names whose last label is numeric but which are no valid
 * IPv4 address, invalid IDNA, and IPv6 zone ids. */
int moat_host_normalize(const char *in, size_t len, moat_host *ret, moat_error *err);

/* Why name (len bytes, already lower case, no trailing dot, no wildcard)
 * is not a host name, or NULL when it is one. This is the one definition of
 * a valid name: the normaliser, the pattern checker and the glob matcher of
 * hostglob.h all ask it, so a pattern "*.example.com" matches every name
 * below example.com that a request can carry. Accepted: letters, digits,
 * '-' anywhere in a label (DNS itself does not forbid "x-" labels) and '_'
 * ("_dmarc", "a_b" host names exist); labels of 1 to 63 bytes; 253 bytes in
 * all. The message completes a sentence "host NAME ...". */
const char *moat_host_name_problem(const char *name, size_t len);

/* 0 when a host name as a client put it on the wire (a Host header, an
 * absolute URL, a CONNECT line, a TLS SNI, a SOCKS5 domain) is spelt the
 * way it is judged, up to case and one trailing dot; otherwise MOAT_EINPUT
 * with the reason. Refused: percent-escapes and bytes outside ASCII.
 * moat_host_normalize decodes both (policy files may use them), but the
 * gateway forwards the Host header and the SNI as sent, and "up%2etest" is
 * not the name "up.test" to every upstream: what is judged must be what
 * is sent. */
int moat_host_wire_check(const char *in, size_t len, moat_error *err);

/* Parses an authority "host[:port]" as found in a CONNECT line, a Host
 * header or an absolute URL. A missing port gives default_port (0 means
 * the port is required). Userinfo ("user@host") is refused rather than
 * stripped: allowed.com@evil.com must never be read as allowed.com by one
 * parser and evil.com by another. */
int moat_authority_parse(const char *in, size_t len, uint16_t default_port, moat_host *ret_host,
			 uint16_t *ret_port, moat_error *err);
