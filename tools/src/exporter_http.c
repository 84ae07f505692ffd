// SPDX-License-Identifier: GPL-2.0
/*
 * A small HTTP/1.0-style server for refcnt-exporter: one connection at a
 * time, answered and closed. A scrape takes milliseconds and Prometheus
 * scrapes a host every few seconds at most, so nothing more is needed;
 * a client that sends nothing is dropped after a few seconds.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "exporter_http.h"
#include "omtext.h"
#include "rtools.h"

#define HTTP_MAX_REQUEST	8192
#define HTTP_TIMEOUT_S		5

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

/* Read the request head (up to the blank line) into buf. Its length or -1. */
static int read_request(int fd, char *buf, size_t size)
{
	struct timeval tv = { HTTP_TIMEOUT_S, 0 };
	size_t n = 0;
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (n + 1 < size) {
		r = read(fd, buf + n, size - n - 1);
		if (r <= 0)
			return -1;
		n += r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (int)n;
	}
	return -1;
}

static void write_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len) {
		w = write(fd, p, len);
		if (w <= 0)
			return;
		p += w;
		len -= w;
	}
}

static void respond(int fd, const char *status, const char *type,
		    const char *body, size_t len, int head)
{
	char hdr[512];
	int n;

	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, type, len);
	write_all(fd, hdr, n);
	if (!head)
		write_all(fd, body, len);
}

/* Does the Accept header ask for OpenMetrics? */
static int wants_openmetrics(const char *req)
{
	const char *p;

	for (p = req; (p = strchr(p, '\n')); ) {
		p++;
		if (!strncasecmp(p, "Accept:", 7)) {
			const char *end = strchr(p, '\n');
			char line[1024];
			size_t len = end ? (size_t)(end - p) : strlen(p);

			if (len >= sizeof(line))
				len = sizeof(line) - 1;
			memcpy(line, p, len);
			line[len] = '\0';
			return strcasestr(line, "application/openmetrics-text") != NULL;
		}
	}
	return 0;
}

int http_serve_one(int lfd, http_scrape_fn scrape)
{
	static const char page[] =
		"<html><head><title>refcnt-exporter</title></head><body>"
		"<h1>refcnt-exporter</h1><p><a href=\"/metrics\">Metrics</a></p>"
		"</body></html>\n";
	char req[HTTP_MAX_REQUEST], method[16], path[256], *body = NULL;
	int fd, head, om, served = 0;
	size_t len = 0;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	if (read_request(fd, req, sizeof(req)) < 0 ||
	    sscanf(req, "%15s %255s", method, path) != 2) {
		respond(fd, "400 Bad Request", "text/plain", "bad request\n", 12, 0);
		goto out;
	}
	head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head) {
		respond(fd, "405 Method Not Allowed", "text/plain",
			"only GET and HEAD\n", 18, 0);
	} else if (!strcmp(path, "/metrics") || !strncmp(path, "/metrics?", 9)) {
		om = wants_openmetrics(req);
		scrape(om, &body, &len);
		respond(fd, "200 OK", om ? OM_CT_OPENMETRICS : OM_CT_PROMETHEUS,
			body ? body : "", body ? len : 0, head);
		served = 1;
	} else if (!strcmp(path, "/")) {
		respond(fd, "200 OK", "text/html; charset=utf-8", page,
			sizeof(page) - 1, head);
	} else {
		respond(fd, "404 Not Found", "text/plain", "not found; try /metrics\n",
			24, head);
	}
out:
	free(body);
	close(fd);
	return served;
}
