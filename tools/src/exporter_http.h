/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt-exporter's HTTP side: a listening socket of ours, served by
 * libmicrohttpd from the exporter's loop (GET /metrics for Prometheus).
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

struct http_server;

/*
 * Serve lfd (which the server then owns, and closes, failing too): GET
 * or HEAD of /metrics through scrape, / a short page, else 404 or 405.
 * NULL, with one line on stderr, if it cannot start.
 */
struct http_server *http_start(int lfd, http_scrape_fn scrape);

/*
 * Answer what comes within timeout_ms (-1: until something happens).
 * Returns how many /metrics answers were sent whole, or -1 on error.
 */
int http_run(struct http_server *srv, int timeout_ms);

/* Stop serving and close the socket; NULL is nothing to do. */
void http_stop(struct http_server *srv);

#endif /* REFCNT_EXPORTER_HTTP_H */
