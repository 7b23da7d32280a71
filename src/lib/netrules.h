/* The egress allowlist: the network rules of a policy, compiled once into an
 * immutable, reference-counted set, and the decision for one request.
 *
 * A rule names a host (exact, "*.example.com" for any name one or more
 * labels below example.com as hostglob.h defines, or "*" for every host),
 * ports (when none are given: every port for deny and approve rules, 80 and
 * 443 for allow rules; see moat_netrule_portless_is_any), and for plain HTTP optionally methods and paths
 * ("/exact", or "/prefix/" and a star for everything below /prefix/); its
 * action is allow, deny or approve (held until a person decides). The
 * first rule that matches decides; when none does, the default does (deny
 * unless the policy says otherwise).
 *
 * When the gateway cannot see the method or the path (a TLS tunnel it does
 * not terminate, a SOCKS5 stream), a rule restricted to some methods or
 * paths cannot be proven to match: allow rules then do not match, while
 * deny and approve rules do. Unknown always leans towards refusal.
 *
 * A live sandbox swaps its rules by building a new set and publishing it in
 * a moat_netrules_slot; requests in flight keep the set they started with. */
#pragma once

#include "error.h"
#include "hostname.h"
#include "netaddr.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps on what one policy may hold. */
#define MOAT_NETRULES_MAX 1024
#define MOAT_NETRULE_MAX_PORTS 64
#define MOAT_NETRULE_MAX_METHODS 32
#define MOAT_NETRULE_MAX_PATHS 64
#define MOAT_NETRULES_MAX_ALLOW_PRIVATE 256
#define MOAT_NET_PATH_MAX 8192
#define MOAT_NET_REASON_MAX 320

typedef enum moat_net_action {
	MOAT_NET_DENY = 0,
	MOAT_NET_ALLOW,
	MOAT_NET_APPROVE,
	_MOAT_NET_ACTION_MAX,
	_MOAT_NET_ACTION_INVALID = -1,
} moat_net_action;

const char *moat_net_action_to_string(moat_net_action a);

/* What a rule that names no ports covers: every port for deny and approve
 * (true), 80 and 443 for allow (false). The one place this is decided; the
 * rule builder, policy nesting and `moat policy explain` all ask here. */
bool moat_netrule_portless_is_any(moat_net_action a);
#define MOAT_NETRULE_ALLOW_PORTS "80, 443"
moat_net_action moat_net_action_from_string(const char *s);

/* One rule as the policy states it. Strings are copied by the builder. */
typedef struct moat_netrule_spec {
	const char *host;                /* required */
	const uint16_t *ports;           /* n_ports == 0: see moat_netrule_portless_is_any */
	size_t n_ports;
	const char *const *methods;      /* n_methods == 0: any method */
	size_t n_methods;
	const char *const *paths;        /* n_paths == 0: any path; "/exact", or "/prefix/" and a star */
	size_t n_paths;
	moat_net_action action;
} moat_netrule_spec;

typedef struct moat_netrules moat_netrules;
typedef struct moat_netrules_builder moat_netrules_builder;

moat_netrules_builder *moat_netrules_builder_new(void);
void moat_netrules_builder_free(moat_netrules_builder *b);
static inline void moat_netrules_builder_freep(moat_netrules_builder **b)
{
	moat_netrules_builder_free(*b);
}
#define _cleanup_netrules_builder_ _cleanup_(moat_netrules_builder_freep)

/* Validates and appends one rule; err names what is wrong with it. */
int moat_netrules_builder_add(moat_netrules_builder *b, const moat_netrule_spec *spec,
			      moat_error *err);
/* network.default: allow, deny (the default) or approve. */
void moat_netrules_builder_set_default(moat_netrules_builder *b, moat_net_action a);
/* One CIDR of network.allow_private. */
int moat_netrules_builder_allow_private(moat_netrules_builder *b, const char *cidr,
					moat_error *err);
/* Freezes the rules into an immutable set holding one reference. The
 * builder may be freed or reused afterwards. */
int moat_netrules_builder_finish(moat_netrules_builder *b, moat_netrules **ret, moat_error *err);

moat_netrules *moat_netrules_ref(moat_netrules *r);
void moat_netrules_unref(moat_netrules *r); /* accepts NULL */
static inline void moat_netrules_unrefp(moat_netrules **r) { moat_netrules_unref(*r); }
#define _cleanup_netrules_ _cleanup_(moat_netrules_unrefp)

size_t moat_netrules_count(const moat_netrules *r);
moat_net_action moat_netrules_default(const moat_netrules *r);
const moat_cidr *moat_netrules_allow_private(const moat_netrules *r, size_t *ret_n);
/* The SSRF guard with this policy's allow_private ranges. */
bool moat_netrules_addr_allowed(const moat_netrules *r, const struct sockaddr *sa,
				const char **ret_reason);

/* One request as the gateway sees it. host is the normalised host
 * (moat_host); method and path are NULL when not visible. path is the raw
 * request target in origin form ("/a/b?q"); the rules normalise it. */
typedef struct moat_net_request {
	const moat_host *host;
	uint16_t port;
	const char *method;
	const char *path;
} moat_net_request;

typedef struct moat_net_decision {
	moat_net_action action;
	int rule; /* index of the deciding rule, -1 for the default or a refusal */
	/* One line an agent can read and act on, e.g.
	 * "api.evil.test is not in this sandbox's network allowlist". */
	char reason[MOAT_NET_REASON_MAX];
} moat_net_decision;

/* First match wins. Never fails: anything it cannot judge is denied with
 * the reason why. */
void moat_netrules_decide(const moat_netrules *r, const moat_net_request *req,
			  moat_net_decision *ret);

/* Whether some request to host:port could be allowed once its method and
 * path are known: for a tunnel the gateway terminates (tls.h), where each
 * request inside is decided on its own. False when a rule denies the whole
 * host and port first, or nothing could allow it. */
bool moat_netrules_host_reachable(const moat_netrules *r, const moat_host *host, uint16_t port);

/* Normalises a request path for matching: the query and fragment dropped,
 * percent-escapes of unreserved characters decoded and the others written in
 * upper case, "//" folded, "." and ".." segments resolved. Refuses (-EINVAL,
 * reason in err) what servers read in different ways: a ".." above the
 * root, malformed or NUL escapes, backslashes, encoded slashes or
 * backslashes that would hide a dot segment, and ";" path parameters on
 * dot segments ("/..;/"). */
int moat_net_path_normalize(const char *in, char *ret, size_t ret_size, moat_error *err);

/* A place that holds the current rules of a live sandbox. Readers take a
 * reference; a writer publishes a new set in one swap. */
typedef struct moat_netrules_slot {
	pthread_mutex_t lock; /* held only for the pointer swap and the ref */
	moat_netrules *cur;
} moat_netrules_slot;

void moat_netrules_slot_init(moat_netrules_slot *s, moat_netrules *initial); /* takes the ref */
void moat_netrules_slot_destroy(moat_netrules_slot *s);
/* A new reference to the current rules (NULL when none were published). */
moat_netrules *moat_netrules_slot_get(moat_netrules_slot *s);
/* Publishes r (taking its reference) and drops the slot's reference to the
 * previous set, which is freed when its last reader lets go. */
void moat_netrules_slot_publish(moat_netrules_slot *s, moat_netrules *r);

/* Splits an --allow-host value "PATTERN[:PORT[,PORT…]]" into the pattern and
 * its ports (none given: *ret_n is 0, meaning 80 and 443). */
int moat_allow_host_spec_parse(const char *spec, char **ret_host, uint16_t *ports, size_t max, size_t *ret_n,
			       moat_error *err);
