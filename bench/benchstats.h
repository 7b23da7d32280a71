/* The figures both benchmark drivers report (moat-bench, moatd-bench),
 * computed one way: a median, and a nearest-rank percentile. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Sorts v (nanoseconds) and returns its median in milliseconds; 0 when
 * n is 0. */
double bench_median_ms(uint64_t *v, size_t n);
/* The 99th percentile of sorted v (nanoseconds), nearest rank, in
 * milliseconds; 0 when n is 0. */
double bench_p99_ms(const uint64_t *sorted, size_t n);
/* Sorts v and returns its median; 0 when n is 0. */
double bench_median(double *v, size_t n);
