#include "hostetc.h"

#include <string.h>

/* Each entry was reviewed for secrets. Left out on purpose: shadow and
 * gshadow, ssh/ (host keys), ssl/private, sudoers, security/ (PAM), krb5
 * keytabs, environment (may hold proxy credentials), pip.conf, npmrc and
 * gitconfig (may hold tokens or credential helpers), machine-id (a stable
 * host identifier). */
const char *const moat__host_etc_paths[] = {
	/* Name databases getservbyname, getprotobyname and friends read. */
	"/etc/services", "/etc/protocols", "/etc/rpc", "/etc/ethertypes", "/etc/gai.conf", "/etc/host.conf",
	/* The loader. */
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	/* Trust anchors and the TLS library's configuration (not its keys). */
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/etc/crypto-policies/back-ends",
	/* Debian's alternatives: /usr/bin/java and others resolve through it. */
	"/etc/alternatives",
	/* What the system is, and its time zone name. */
	"/etc/os-release", "/etc/debian_version", "/etc/lsb-release", "/etc/timezone",
	/* File types, fonts, line editing. */
	"/etc/mime.types", "/etc/magic", "/etc/magic.mime", "/etc/mailcap", "/etc/fonts", "/etc/inputrc",
	/* Perl's site configuration (Net::Config and the like). */
	"/etc/perl",
};
const size_t moat__host_etc_n_paths = sizeof(moat__host_etc_paths) / sizeof(moat__host_etc_paths[0]);

/* Directories carried whole, by name prefix. The Java runtimes' hold
 * java.security, jvm.cfg and logging properties; a JMX password file, if an
 * administrator made one there, is mode 0600 root by the JDK's own rule,
 * and the sandbox's user is never host root. */
static const char *const families[] = {"java-", "python3"};

bool moat__host_etc_family(const char *name)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		size_t n = strlen(families[i]);
		if (strncmp(name, families[i], n) != 0)
			continue;
		const char *rest = name + n;
		/* "python3" alone is a family member; "java-" alone is not. */
		if (!*rest && families[i][n - 1] == '-')
			return false;
		if (strspn(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(rest))
			return true;
	}
	return false;
}

bool moat__host_etc_secret(const char *path)
{
	static const char *const words[] = {"shadow", "ssh", "private", "sudoers", "keytab", "secret", "password",
					    "credential", "token", ".key", ".pem-key", "gshadow", "passwd-"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(path, words[i]))
			return true;
	return false;
}
