/* Namespaces a moat-oci container is handed by path (linux.namespaces[].
 * path): opened and identified by descriptor, and a Kubernetes pod's
 * network namespace (made by the CNI plugin, network.mode: pod) told
 * from the host's and from what the runtime may not join.
 *
 * Pure logic (moat__oci_ns_*_name, moat__oci_proc_ns_link) is apart from
 * what touches the system, for the unit tests. */
#pragma once

#include "config.h"
#include "error.h"

#include <stdbool.h>
#include <sys/stat.h>

/* The name of a CLONE_NEW* namespace type as /proc/PID/ns shows it
 * ("net", "mnt", "user", ...), or "unknown". */
const char *moat__oci_ns_type_name(int type);

/* True when path is /proc/N/ns/NAME (N digits or self, NAME lowercase
 * letters),
 * the kernel's own link to a process's namespace: the only form of path
 * that is followed when a namespace is opened. */
bool moat__oci_proc_ns_link(const char *path);

/* Opens path as a namespace file of type (CLONE_NEW*), by descriptor:
 * O_PATH, not following a link in its last component (but for
 * /proc/N/ns/NAME), then checked to be of nsfs and reopened for reading
 * through that descriptor, and its type asked of the kernel
 * (NS_GET_NSTYPE). Returns the open namespace (O_CLOEXEC) or a negative
 * errno with err naming field and path: not a namespace file (a symbolic
 * link is not followed), a namespace of another type (named). */
int moat__oci_ns_open(const char *path, int type, const char *field, moat_error *err);

/* Refuses a network namespace that is the host's: init's
 * (/proc/1/ns/net, when this process may see it) or the runtime's own
 * (the caller's network: podman's and containerd's is the host's). */
int moat__oci_netns_not_host(int fd, const char *field, const char *path, moat_error *err);

/* A network namespace that is not a moat-oci container's own (a pod's,
 * made by the CNI plugin): refused unless mode is MOAT_NET_POD (the
 * policy's opt-in to join it: the container's traffic then does not pass
 * moat's gateway) or a mode with a gateway (the container keeps a
 * namespace of its own; the gateway's upstream side lives in the pod's),
 * and unless this runtime can enter it and keep it from the sandbox: it
 * must be owned by the runtime's own user namespace, in which the runtime
 * holds CAP_SYS_ADMIN (root of the host; root of a rootless containerd's
 * user namespace). */
int moat__oci_podnet_allowed(int fd, moat_net_mode mode, const char *field, const char *path, moat_error *err);

/* True when namespace fd is owned by the user namespace st is of. */
bool moat__oci_ns_owned_by(int fd, const struct stat *userns);

/* The network sysctls (net.*) of sysctls ("key=value", NULL-ended), in
 * a pod's network namespace fd: written there by the runtime (a child
 * that enters it), since the sandbox's user has no privilege over it,
 * and taken out of sysctls (freed) so the sandbox's init writes only
 * the rest. containerd's CRI asks some for every pod (net.ipv4.
 * ip_unprivileged_port_start, net.ipv4.ping_group_range), as runc
 * writes them: the pod's network settings are the pod's. A write the
 * kernel refuses fails, naming the key. */
int moat__oci_podnet_sysctls(int fd, char **sysctls, moat_error *err);
