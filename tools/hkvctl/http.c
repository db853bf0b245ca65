// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * http.c - `hkvctl metrics --listen`: /metrics over HTTP for scrapers.
 * Each connection is served by a thread of its own, at most HTTP_CLIENTS at
 * once (more are answered 503 at once and closed), so a slow or stuck
 * client never holds up the others: a request's head must arrive whole
 * within HTTP_TIMEOUT_MS of the connection (each byte does not extend it),
 * and a reply that the client does not read within it is dropped. A scrape
 * reads the pages at that moment (pages.c, om.c); nothing is shared
 * between connections but the count of them.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "pages.h"

#define REQ_MAX		8192
#define HTTP_CLIENTS	16	/* connections served at once */
#define HTTP_TIMEOUT_MS	5000	/* a request's head whole; a reply's send */

static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clients_gone = PTHREAD_COND_INITIALIZER;
static unsigned clients;

struct conn {
	int fd;
	const char *dir;
};

/* ADDR:PORT, [V6]:PORT or PORT; loopback by default */
static int listen_on(const char *spec)
{
	char host[256] = "127.0.0.1", port[16];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai, *a;
	const char *colon = strrchr(spec, ':');
	int fd = -1, one = 1, err;
	long pn;

	if (colon) {
		size_t hl = (size_t)(colon - spec);

		if (hl && spec[0] == '[' && spec[hl - 1] == ']')
			ctl_fmt(host, sizeof(host), "%.*s", (int)hl - 2, spec + 1);
		else if (hl)
			ctl_fmt(host, sizeof(host), "%.*s", (int)hl, spec);
	}
	if (tool_parse_int(colon ? colon + 1 : spec, 0, 65535, &pn)) {
		ctl_err("metrics", "--listen %s: not [ADDR:]PORT", spec);
		return -TOOL_USAGE;
	}
	ctl_fmt(port, sizeof(port), "%ld", pn);
	err = getaddrinfo(host, port, &hints, &ai);
	if (err) {
		ctl_err("metrics", "--listen %s: %s", spec, gai_strerror(err));
		return -TOOL_USAGE;
	}
	for (a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 16)) {
			err = errno;
			close(fd);
			fd = -1;
			errno = err;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		ctl_err("metrics", "--listen %s: %s", spec, strerror(errno));
	return fd < 0 ? -TOOL_FAIL : fd;
}

static void say_listening(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[128], port[16];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) ||
	    getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return;
	fprintf(stderr, "hkvctl metrics: listening on %s%s%s:%s\n", ss.ss_family == AF_INET6 ?
		"[" : "", host, ss.ss_family == AF_INET6 ? "]" : "", port);
	fflush(stderr);
}

static void send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);

		if (k <= 0)
			return;
		b += k;
		n -= (size_t)k;
	}
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t n)
{
	char h[256];
	int hl = snprintf(h, sizeof(h), "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, type, n);

	send_all(fd, h, (size_t)hl);
	send_all(fd, body, n);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* the request's head, up to the blank line, before the deadline;
 * NUL-terminated */
static bool read_head(int fd, char *req, size_t cap)
{
	uint64_t end = mono_ms() + HTTP_TIMEOUT_MS, now;
	size_t n = 0;

	while (n < cap - 1 && (now = mono_ms()) < end) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (poll(&pf, 1, (int)(end - now)) <= 0)
			continue;	/* the loop's clock decides */
		k = recv(fd, req + n, cap - 1 - n, MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		if (k < 0)
			continue;
		n += (size_t)k;
		req[n] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			return true;
	}
	return false;
}

static void serve_metrics(int fd, const char *dir, const char *req)
{
	struct ctl_pages set;
	char *body = NULL;
	size_t n = 0;
	bool om = strcasestr(req, "application/openmetrics-text") != NULL;
	int err = ctl_pages_read(dir, &set);
	FILE *f = open_memstream(&body, &n);

	if (!f) {
		ctl_pages_free(&set);
		reply(fd, "500 Internal Server Error", "text/plain", "no memory\n", 10);
		return;
	}
	if (err && err != -ENOENT)
		set.errors++;
	ctl_metrics_write(f, &set, om);
	fclose(f);
	ctl_pages_free(&set);
	reply(fd, "200 OK", om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
	      "text/plain; version=0.0.4; charset=utf-8", body, n);
	free(body);
}

static void serve_one(int fd, const char *dir)
{
	struct timeval tv = { .tv_sec = HTTP_TIMEOUT_MS / 1000 };
	char req[REQ_MAX], *sp;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!read_head(fd, req, sizeof(req))) {
		reply(fd, "400 Bad Request", "text/plain", "bad request\n", 12);
		return;
	}
	if (strncmp(req, "GET ", 4) && strncmp(req, "HEAD ", 5)) {
		reply(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	sp = strchr(req, ' ') + 1;
	if (strncmp(sp, "/metrics", 8) || (sp[8] != ' ' && sp[8] != '?')) {
		static const char idx[] = "<html><body><a href=\"/metrics\">/metrics</a></body></html>\n";

		if (!strncmp(sp, "/ ", 2))
			reply(fd, "200 OK", "text/html", idx, sizeof(idx) - 1);
		else
			reply(fd, "404 Not Found", "text/plain", "not found\n", 10);
		return;
	}
	serve_metrics(fd, dir, req);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	serve_one(c->fd, c->dir);
	close(c->fd);
	free(c);
	pthread_mutex_lock(&clients_lock);
	if (!--clients)
		pthread_cond_broadcast(&clients_gone);
	pthread_mutex_unlock(&clients_lock);
	return NULL;
}

/* a thread for the connection, or 503 when HTTP_CLIENTS are served */
static void dispatch(int fd, const char *dir)
{
	struct timeval tv = { .tv_sec = 1 };
	struct conn *c = malloc(sizeof(*c));
	pthread_attr_t a;
	pthread_t t;
	bool room;

	pthread_mutex_lock(&clients_lock);
	room = clients < HTTP_CLIENTS && c;
	clients += room;
	pthread_mutex_unlock(&clients_lock);
	if (room) {
		*c = (struct conn){ .fd = fd, .dir = dir };
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (!pthread_create(&t, &a, conn_thread, c)) {
			pthread_attr_destroy(&a);
			return;
		}
		pthread_attr_destroy(&a);
		pthread_mutex_lock(&clients_lock);
		clients--;
		pthread_mutex_unlock(&clients_lock);
	}
	free(c);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	reply(fd, "503 Service Unavailable", "text/plain", "busy\n", 5);
	close(fd);
}

/**
 * ctl_http_serve() - serve /metrics on @spec until *@stop
 * @spec: [ADDR:]PORT, [V6]:PORT
 * @dir: the pages' directory, NULL for hkv_page_dir()
 * @stop: set by a signal handler
 *
 * Return: TOOL_OK, or the exit status of a listen that failed. Connections
 * being served when *@stop is set are finished first (each within the
 * timeout).
 */
int ctl_http_serve(const char *spec, const char *dir, volatile sig_atomic_t *stop)
{
	int lfd = listen_on(spec);

	if (lfd < 0)
		return -lfd;
	say_listening(lfd);
	while (!*stop) {
		struct pollfd pf = { .fd = lfd, .events = POLLIN };
		int c;

		if (poll(&pf, 1, 500) <= 0)
			continue;
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			dispatch(c, dir);
	}
	close(lfd);
	pthread_mutex_lock(&clients_lock);
	while (clients)
		pthread_cond_wait(&clients_gone, &clients_lock);
	pthread_mutex_unlock(&clients_lock);
	return TOOL_OK;
}
