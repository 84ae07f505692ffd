// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-exporter's HTTP server: libmicrohttpd, run from the exporter's
 * own loop (one thread: a scrape and a textfile write never overlap) on
 * the socket http_listen() opened, so that a bad --listen is one line of
 * ours. A scrape takes milliseconds and Prometheus scrapes a host every
 * few seconds at most: a few connections at a time are plenty, and one
 * that sends nothing is dropped after a few seconds.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exporter_http.h"
#include "omtext.h"
#include "rtools.h"

#define HTTP_TIMEOUT_S		5
/* Connections at a time; a request's head must fit in the memory limit. */
#define HTTP_MAX_CONNECTIONS	16
#define HTTP_MEMORY_LIMIT	(16 * 1024)

/* "ADDR:PORT" into host (NULL: any) and port. 0, or -1 if malformed. */
static int split_spec(char *spec, char **host, char **port)
{
	char *colon;

	if (spec[0] == '[') {
		colon = strstr(spec, "]:");
		if (!colon)
			return -1;
		*colon = '\0';
		*host = spec + 1;
		*port = colon + 2;
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		*host = spec[0] ? spec : NULL;
		*port = colon + 1;
	}
	if (!**port || strspn(*port, "0123456789") != strlen(*port) ||
	    atol(*port) > 65535)
		return -1;
	return 0;
}

static int try_bind(const struct sockaddr *sa, socklen_t len, int *err)
{
	int fd, one = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = errno;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, sa, len) || listen(fd, 16)) {
		*err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Numeric addresses only (and "localhost"): a static program cannot use
 * the name service, and a monitoring port is configured by address.
 */
int http_listen(const char *spec)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	char buf[256], *host, *port;
	int fd = -1, err = 0;

	snprintf(buf, sizeof(buf), "%s", spec);
	if (strlen(spec) >= sizeof(buf) || split_spec(buf, &host, &port)) {
		rt_err("--listen %s: not ADDR:PORT, [ADDR6]:PORT or :PORT", spec);
		return -1;
	}
	a4.sin_port = a6.sin6_port = htons((uint16_t)atol(port));
	if (host && !strcmp(host, "localhost"))
		host = "127.0.0.1";
	if (!host) {
		/* The IPv6 wildcard takes IPv4 too; IPv4 alone without IPv6. */
		a6.sin6_addr = in6addr_any;
		fd = try_bind((struct sockaddr *)&a6, sizeof(a6), &err);
		if (fd < 0 && err == EAFNOSUPPORT)
			fd = try_bind((struct sockaddr *)&a4, sizeof(a4), &err);
	} else if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
		fd = try_bind((struct sockaddr *)&a4, sizeof(a4), &err);
	} else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
		fd = try_bind((struct sockaddr *)&a6, sizeof(a6), &err);
	} else {
		rt_err("--listen %s: %s is not a numeric IPv4 or IPv6 address", spec, host);
		return -1;
	}
	if (fd < 0)
		rt_err("--listen %s: %s%s", spec, strerror(err),
		       err == EADDRINUSE ? " (is another exporter on this port?)" :
		       err == EACCES ? " (ports below 1024 need root)" : "");
	return fd;
}

struct http_server {
	struct MHD_Daemon *mhd;
	http_scrape_fn scrape;
	int served;		/* /metrics answers sent since http_run() */
};

/* The marker of a request for /metrics (MHD's per-request pointer). */
static int metrics_request;

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned int status,
			      const char *type, void *body, size_t len,
			      enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

#define TEXT(s)	(void *)(s), sizeof(s) - 1, MHD_RESPMEM_PERSISTENT

/* Does the Accept header ask for OpenMetrics? */
static int wants_openmetrics(struct MHD_Connection *conn)
{
	const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);

	return accept && strcasestr(accept, "application/openmetrics-text");
}

/*
 * MHD's handler: GET or HEAD of /metrics through the scrape, / a short
 * page, else 404 or 405 (MHD leaves a HEAD answer's body out itself).
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req)
{
	static const char page[] =
		"<html><head><title>refcnt-exporter</title></head><body>"
		"<h1>refcnt-exporter</h1><p><a href=\"/metrics\">Metrics</a></p>"
		"</body></html>\n";
	struct http_server *srv = cls;
	char *body = NULL;
	size_t len = 0;
	int om;

	(void)version;
	(void)upload_data;
	/* The first call has the head only; answer once a body is read. */
	if (!*req) {
		*req = srv;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;	/* a body is not asked for: ignored */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			      TEXT("only GET and HEAD\n"));
	if (!strcmp(url, "/"))
		return answer(conn, MHD_HTTP_OK, "text/html; charset=utf-8", TEXT(page));
	if (strcmp(url, "/metrics"))
		return answer(conn, MHD_HTTP_NOT_FOUND, "text/plain",
			      TEXT("not found; try /metrics\n"));
	om = wants_openmetrics(conn);
	srv->scrape(om, &body, &len);
	*req = &metrics_request;
	return answer(conn, MHD_HTTP_OK, om ? OM_CT_OPENMETRICS : OM_CT_PROMETHEUS,
		      body ? body : "", body ? len : 0,
		      body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
}

/* MHD's completion callback: count the /metrics answers sent whole. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req,
			 enum MHD_RequestTerminationCode why)
{
	struct http_server *srv = cls;

	(void)conn;
	if (*req == &metrics_request && why == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		srv->served++;
	*req = NULL;
}

struct http_server *http_start(int lfd, http_scrape_fn scrape)
{
	struct http_server *srv = calloc(1, sizeof(*srv));

	if (!srv) {
		rt_err("out of memory");
		close(lfd);
		return NULL;
	}
	srv->scrape = scrape;
	/* No MHD_USE_ERROR_LOG: a client's bad request is its answer, not a log line. */
	srv->mhd = MHD_start_daemon(MHD_NO_FLAG, 0, NULL, NULL,
				    on_request, srv,
				    MHD_OPTION_LISTEN_SOCKET, lfd,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_TIMEOUT_S,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_MAX_CONNECTIONS,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				    MHD_OPTION_END);
	if (!srv->mhd) {
		rt_err("cannot start the HTTP server (libmicrohttpd)");
		close(lfd);
		free(srv);
		return NULL;
	}
	return srv;
}

int http_run(struct http_server *srv, int timeout_ms)
{
	int served;

	if (MHD_run_wait(srv->mhd, timeout_ms) != MHD_YES)
		return -1;
	served = srv->served;
	srv->served = 0;
	return served;
}

void http_stop(struct http_server *srv)
{
	if (!srv)
		return;
	MHD_stop_daemon(srv->mhd);
	free(srv);
}
