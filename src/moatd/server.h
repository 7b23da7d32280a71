/* moatd's server loop (server.c): serves until SIGTERM or SIGINT. */
#pragma once

#include "moatd.h"

#include "moat-config.h"
#define MOATD_VERSION MOAT_VERSION

/* moat: the `moat` binary each run, session and exec is a process of;
 * openapi: the API description (YAML) served as JSON. */
int moatd_serve(moatd_config *cfg, const char *moat, const char *openapi, moat_error *err);
