/* ATTACK: read the host's secrets (shadow, ssh host keys, TLS private keys, sudoers) or change the host configuration carried into /etc | LAYER: reviewed list of host /etc entries, bound read-only (hostetc.c) | REF: - */
#include "attack.h"
#include <dirent.h>

int main(void)
{
	/* The carried configuration is there: the attack is about what is not. */
	if (access("/etc/services", R_OK) != 0 && access("/usr/share/doc", F_OK) == 0)
		BROKEN("no /etc/services inside: %s", strerror(errno));
	static const char *const secrets[] = {
		"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
		"/etc/ssh", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_ecdsa_key",
		"/etc/ssl/private", "/etc/krb5.keytab", "/etc/environment", "/etc/machine-id", "/etc/security",
		"/etc/pam.d", "/etc/subuid", "/etc/subgid", "/etc/ssl/private/ssl-cert-snakeoil.key", "/etc/npmrc",
		"/etc/pip.conf", "/etc/gitconfig", "/etc/docker", "/etc/containers", "/etc/cron.d", "/etc/apt"};
	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
		struct stat st;
		if (lstat(secrets[i], &st) == 0)
			ESCAPED("%s is visible inside", secrets[i]);
	}
	/* Nothing carried can be changed or added to. */
	static const char *const writable[] = {"/etc/services", "/etc/protocols", "/etc/ld.so.cache"};
	for (size_t i = 0; i < sizeof(writable) / sizeof(writable[0]); i++) {
		int fd = open(writable[i], O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0)
			ESCAPED("opened %s for writing", writable[i]);
	}
	DIR *d = opendir("/etc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "java-", 5) != 0)
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/etc/%s/moat-attack", e->d_name);
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0)
			ESCAPED("created %s", path);
	}
	BLOCKED("no secret of the host's /etc is inside, and the carried entries are read-only");
}
