#include "hostetc.h"

#include <string.h>

/* Each entry was reviewed for secrets. Left out on purpose: shadow and
 * gshadow, ssh/ (host keys), ssl/private, sudoers, security/ (PAM), krb5
 * keytabs, environment (may hold proxy credentials), pip.conf, npmrc and
 * gitconfig (may hold tokens or credential helpers), machine-id (a stable
 * host identifier). Left out for cost (every entry adds to each run's
 * start), since programs run without them: what only administration tools
 * read (ld.so.conf*, ca-certificates*, the update hooks), rarely read
 * tables (rpc, ethertypes, gai.conf, host.conf), perl, python3*, fonts
 * (fontconfig finds its fonts without it, with a warning), magic, mailcap,
 * inputrc. */
/* Small files: copied into the generated /etc, which costs a sendfile where
 * a bind costs a mount (every mount adds to each run's start). */
const char *const moat__host_etc_copied[] = {
	/* The loader cache. */
	"/etc/ld.so.cache",
	/* Name databases: getservbyname and getprotobyname read these. */
	"/etc/services", "/etc/protocols",
	/* The TLS library's configuration (not its keys). */
	"/etc/ssl/openssl.cnf",
	/* What the system is (os-release is a link into /usr), its time zone
	 * name, and the MIME types Python's mimetypes and others read. */
	"/etc/os-release", "/etc/debian_version", "/etc/timezone", "/etc/mime.types",
};
const size_t moat__host_etc_n_copied = sizeof(moat__host_etc_copied) / sizeof(moat__host_etc_copied[0]);

/* Folders: bound read-only. */
const char *const moat__host_etc_paths[] = {
	/* Trust anchors (Debian's and Fedora's layouts). */
	"/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/etc/crypto-policies/back-ends",
	/* Debian's alternatives: /usr/bin/java and others resolve through it. */
	"/etc/alternatives",
};
const size_t moat__host_etc_n_paths = sizeof(moat__host_etc_paths) / sizeof(moat__host_etc_paths[0]);

/* Directories carried whole, by name prefix. The Java runtimes' hold
 * java.security, jvm.cfg and logging properties; a JMX password file, if an
 * administrator made one there, is mode 0600 root by the JDK's own rule,
 * and the sandbox's user is never host root. */
static const char *const families[] = {"java-"};

bool moat__host_etc_family(const char *name)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		size_t n = strlen(families[i]);
		if (strncmp(name, families[i], n) != 0)
			continue;
		const char *rest = name + n;
		if (!*rest)
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
