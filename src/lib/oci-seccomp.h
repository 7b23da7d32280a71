/* The OCI spec's own seccomp filter, compiled (oci-seccomp.c). */
#pragma once

#include "error.h"
#include "oci-spec.h"

#include <stddef.h>

/* Compiles sc into a classic BPF program (struct sock_filter[], *ret_len
 * bytes, the caller's to free) for seccomp(SECCOMP_SET_MODE_FILTER).
 * System call names libseccomp does not know are skipped. Returns 0, or a
 * negative errno with err naming the field. */
int moat__oci_seccomp_compile(const moat_oci_seccomp *sc, void **ret_prog, size_t *ret_len, moat_error *err);
