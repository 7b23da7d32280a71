/* The egress gateway: an event-driven proxy on libevent that is the only way
 * out of a sandbox's network namespace. One listening port serves HTTP/1.1
 * (absolute-form requests and CONNECT) and SOCKS5, told apart by the first
 * byte. For every connection the gateway normalises the host, asks the rules
 * (netrules.h), resolves the name itself, refuses every answer in a private
 * or special range (netaddr.h) unless allow_private lists it, and connects to
 * exactly the address it checked. Tunnels must open with a TLS ClientHello
 * whose SNI names the host that was allowed. Every decision is reported
 * through a callback so the caller can write it to the audit log.
 *
 * The gateway lives in the supervisor, in the host's network namespace; the
 * listening sockets it serves may live in the sandbox's namespace (the
 * sandbox init creates them and passes them out over SCM_RIGHTS). */
#pragma once

#include "error.h"
#include "netbudget.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct event_base;
typedef struct moat_netrules moat_netrules; /* netrules.h */

typedef struct moat_gateway moat_gateway;

/* Caps on what the configuration may hold. */
#define MOAT_GATEWAY_MAX_HOSTS 1024        /* network.hosts entries */
#define MOAT_GATEWAY_MAX_LISTENERS 16
/* Defaults of the starvation guards (see moat_gateway_config). */
#define MOAT_GATEWAY_DEFAULT_MAX_CLIENTS 256
#define MOAT_GATEWAY_DEFAULT_HEAD_MS 30000
#define MOAT_GATEWAY_DEFAULT_EVENTS_PER_SEC 50
/* A path in an event is cut to this many bytes. */
#define MOAT_GATEWAY_EVENT_PATH_MAX 512

/* One static name → address entry (network.hosts). A name may appear more
 * than once; all its addresses are candidates, and all are checked. */
typedef struct moat_gateway_host {
	const char *name;
	const char *address; /* numeric IPv4 or IPv6 */
} moat_gateway_host;

/* One net.request event: what was asked, what was decided, what flowed.
 * When events come faster than the gateway's rate cap, the ones over it
 * are counted, not delivered, and one net.flood event says how many were
 * dropped (type "net.flood", suppressed > 0, the other fields empty). */
typedef struct moat_net_event {
	const char *type;      /* "net.request" or "net.flood" */
	uint64_t suppressed;   /* net.flood: events dropped in the window */
	const char *protocol;  /* "http", "connect" or "socks5" */
	const char *host;      /* normalised host, or the raw text when invalid */
	uint16_t port;
	const char *address;   /* the address connected to, or "" */
	const char *method;    /* HTTP method, or NULL when not visible */
	const char *path;      /* HTTP path, or NULL when not visible */
	const char *sni;       /* TLS server name seen in a tunnel, or NULL */
	uint64_t bytes_up;     /* sandbox → upstream, payload bytes */
	uint64_t bytes_down;   /* upstream → sandbox */
	uint64_t duration_ms;
	const char *decision;  /* "allow" or "deny" */
	int rule;              /* index of the deciding rule, -1 for none */
	const char *reason;    /* one line, for people and agents */
	const char *secret;    /* names of the secrets injected or misused, or NULL */
	const char *approval;  /* the approval a person decided for it, or NULL */
	const char *lease;     /* the lease that let it through, or NULL */
	bool alert;            /* type "secret.misuse": never held back by the rate cap */
} moat_net_event;

typedef void (*moat_gateway_event_fn)(void *userdata, const moat_net_event *ev);

typedef struct moat_gateway_config {
	/* Initial rules, with the network.allow_private ranges that may be
	 * reached anyway (test upstreams, an internal mirror); the gateway
	 * takes its own reference. NULL: deny everything until
	 * moat_gateway_set_rules. */
	moat_netrules *rules;
	/* network.hosts: static answers that win over DNS. */
	const moat_gateway_host *hosts;
	size_t n_hosts;
	/* network.resolver: "IP" or "IP:PORT" of the name server to ask.
	 * NULL: the host's resolv.conf. */
	const char *resolver;
	/* Ports on which a tunnel may carry something other than TLS (ssh to
	 * a git host, say). Everywhere else a tunnel must open with a TLS
	 * ClientHello naming the allowed host; 80 and 443 never carry
	 * anything else, whatever this list says. */
	const uint16_t *raw_ports;
	size_t n_raw_ports;
	/* Budgets (netbudget.h) for the whole run and for each destination
	 * ("host:port"); zero fields are not limited. */
	moat_budget_limits budget_run;
	moat_budget_limits budget_dest;
	uint64_t connect_timeout_ms; /* 0: 10 s */
	uint64_t idle_timeout_ms;    /* 0: 300 s */
	/* Starvation guards. A sandbox may hold at most max_clients
	 * connections to the gateway at once (0: 256); one more is closed at
	 * once, so idle connections cannot use up the supervisor's
	 * descriptors. A client must have sent its whole request (head or
	 * SOCKS5 request) head_timeout_ms after it connected, and a tunnel's
	 * ClientHello twice that after the tunnel was opened, however it
	 * trickles the bytes (0: 30 s). At most events_per_sec
	 * events reach on_event each second, after a burst of ten seconds'
	 * worth (0: 50); the rest are counted into one net.flood event a
	 * second. */
	uint32_t max_clients;
	uint64_t head_timeout_ms;
	uint32_t events_per_sec;
	moat_gateway_event_fn on_event;
	void *userdata;
	/* TLS termination (tls.h). A tunnel to a host matching one of
	 * terminate_hosts (patterns, hostglob.h) is opened without an
	 * upstream connection; its TLS is terminated with a leaf from
	 * tls_ca, and each HTTP/1.1 request inside is decided with its
	 * method and path before a TLS connection to the upstream, verified
	 * against the host's trust store (and upstream_ca_file, for tests
	 * only) with the real name, carries it. Other hosts stay plain
	 * tunnels. NULL tls_ca: nothing is terminated. Not owned. */
	struct moat_tls_ca *tls_ca;
	char *const *terminate_hosts;
	const char *upstream_ca_file;
	/* The run's secrets (secretstore.h), or NULL; not owned. Their
	 * values are put into terminated requests that their bindings allow
	 * (secrets.h decides), their placeholders anywhere else refuse the
	 * request as a secret.misuse alert, and a value an upstream echoes
	 * back reaches the sandbox as its placeholder. */
	struct moat_secrets *secrets;
	/* The sandbox's approval queue (approvals.h), or NULL; not owned,
	 * must outlive the gateway. A request an approve rule matches is
	 * held open until a person decides (a lease may let it through at
	 * once); without a queue it is refused, saying so. */
	struct moat_approvals *approvals;
} moat_gateway_config;

/* Creates a gateway on base. Copies everything it needs from cfg. */
int moat_gateway_new(struct event_base *base, const moat_gateway_config *cfg, moat_gateway **ret, moat_error *err);
/* Closes every connection and listener; accepts NULL. */
void moat_gateway_free(moat_gateway *gw);
static inline void moat_gateway_freep(moat_gateway **gw) { moat_gateway_free(*gw); }
#define _cleanup_gateway_ _cleanup_(moat_gateway_freep)

/* Serves fd, a listening stream socket (made non-blocking here). The gateway
 * owns fd from now on, also on failure. */
int moat_gateway_add_listener_fd(moat_gateway *gw, int fd, moat_error *err);
/* Transparent egress (netnat.h). Serves fd, a listening socket whose
 * connections the sandbox's namespace redirected here: each is judged as
 * a request to its original destination (SO_ORIGINAL_DST), where an
 * address of the DNS stub's range (dnsstub.h) stands for its name; a TLS
 * ClientHello must then name that host, and a plain HTTP request's Host
 * header too. The gateway owns fd from now on, also on failure. */
int moat_gateway_add_transparent_fd(moat_gateway *gw, int fd, moat_error *err);
/* Answers DNS queries on fd, a UDP socket, from the stub's name map; no
 * query is ever sent on. Owns fd from now on, also on failure. */
int moat_gateway_add_dns_stub_fd(moat_gateway *gw, int fd, moat_error *err);
/* Opens a listening socket on a numeric IPv4/IPv6 address in the current
 * namespace (for tests and for the standalone `moat gateway`); port 0 picks
 * one, *ret_port says which. */
int moat_gateway_listen(moat_gateway *gw, const char *address, uint16_t port, uint16_t *ret_port, moat_error *err);
/* Replaces the rules for every later decision, atomically; connections
 * already relaying keep the decision they got. Takes a new reference. */
void moat_gateway_set_rules(moat_gateway *gw, moat_netrules *rules);

/* Counters for tests and for the run's summary. */
typedef struct moat_gateway_stats {
	uint64_t connections;  /* accepted */
	uint64_t active;       /* open now */
	uint64_t allowed, denied;
	uint64_t bytes_up, bytes_down;
	uint64_t dns_queries;  /* lookups sent to the resolver */
	uint64_t refused_clients; /* closed at once: over max_clients */
	uint64_t accept_errors;   /* accept failures; the listener is re-armed */
	uint64_t events_suppressed; /* over events_per_sec */
	uint64_t upstream_reused;   /* terminated requests sent on a pooled connection */
	uint64_t tls_resumed;       /* upstream TLS handshakes that resumed a session */
} moat_gateway_stats;
void moat_gateway_get_stats(const moat_gateway *gw, moat_gateway_stats *ret);
/* The request counters, read from another thread while the gateway runs
 * (they are updated atomically): a session's show. */
typedef struct moat_gateway_counters {
	uint64_t allowed, denied, bytes_up, bytes_down;
} moat_gateway_counters;
void moat_gateway_get_counters(const moat_gateway *gw, moat_gateway_counters *ret);

/* The environment a sandbox needs to use a gateway listening at
 * 127.0.0.1:port: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (socks5h) and the
 * lower-case forms, plus NO_PROXY empty. NULL-terminated "NAME=VALUE"
 * strings; free with moat__strv_free. */
char **moat_gateway_proxy_env(uint16_t port);

/* The net.request event as a JSON object (for the audit log and for
 * --net-log); NULL when out of memory. */
json_t *moat_net_event_to_json(const moat_net_event *ev);

/* Rules from allowed-host patterns, each "HOST" or "HOST:PORT[,PORT...]"
 * (HOST exact or "*.example.com"; ports default to 80 and 443), plus the
 * allow_private CIDRs; everything else is denied. */
int moat_gateway_rules_from_patterns(char *const *allow_hosts, char *const *allow_private, moat_netrules **ret,
				     moat_error *err);
