/* The host's /etc entries a sandbox carries: the non-secret system
 * configuration that programs read to start or to do ordinary work (service
 * and protocol names, the loader cache and its configuration, CA
 * certificates, the Java runtime's security properties, Debian's
 * alternatives links, fonts, MIME types, the OS release). A reviewed list,
 * bound read-only, never anything that holds a secret. Pure data and
 * predicates; mount.c does the binding. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Absolute paths carried when they exist on the host: small files copied,
 * folders bound. */
extern const char *const moat__host_etc_copied[];
extern const size_t moat__host_etc_n_copied;
extern const char *const moat__host_etc_paths[];
extern const size_t moat__host_etc_n_paths;
/* The largest file copied; a larger one is bound instead. */
#define MOAT_HOST_ETC_COPY_MAX (128 * 1024)

/* Whether NAME, an entry directly in the host's /etc, belongs to a family
 * carried by prefix (the Java runtimes' "java-17-openjdk"): the prefix and
 * then only [A-Za-z0-9._-]. */
bool moat__host_etc_family(const char *name);

/* Whether a path names something secret (shadow files, ssh host keys, TLS
 * private keys, sudoers, Kerberos keytabs, credentials). A second guard:
 * nothing it matches is carried, whatever the list says. */
bool moat__host_etc_secret(const char *path);
