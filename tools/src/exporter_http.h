/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt-exporter's HTTP side: a listening socket and one request at a
 * time (GET /metrics), enough for Prometheus scraping a host.
 */
#ifndef REFCNT_EXPORTER_HTTP_H
#define REFCNT_EXPORTER_HTTP_H

#include <stddef.h>

/*
 * Listen on spec, "ADDR:PORT", "[ADDR6]:PORT" or ":PORT" (every address).
 * Returns the socket, or -1 with one line on stderr naming the cause.
 */
int http_listen(const char *spec);

/*
 * The body of a scrape: *body (malloc'ed, *len bytes) in the format the
 * request's Accept header asks (openmetrics 1 or 0), or an error. Returns 0.
 */
typedef int (*http_scrape_fn)(int openmetrics, char **body, size_t *len);

/*
 * Accept one connection on lfd and answer its request: GET or HEAD of
 * /metrics through scrape, / a short page, else 404 or 405. Returns 1 when
 * /metrics was served, 0 for anything else, -1 if accept() failed.
 */
int http_serve_one(int lfd, http_scrape_fn scrape);

#endif /* REFCNT_EXPORTER_HTTP_H */
