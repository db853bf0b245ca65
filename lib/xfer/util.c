// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * util.c - UCX status to errno, clocks, "HOST:PORT" parsing, logging
 * (through the core's log sink).
 */
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

/**
 * xf_errno() - a UCX status as a negative errno
 * @st: the status (UCS_OK gives 0)
 *
 * Return: 0 or -errno; unknown failures are -EIO.
 */
int xf_errno(ucs_status_t st)
{
	switch (st) {
	case UCS_OK:			return 0;
	case UCS_INPROGRESS:		return -EINPROGRESS;
	case UCS_ERR_NO_MEMORY:		return -ENOMEM;
	case UCS_ERR_INVALID_PARAM:	return -EINVAL;
	case UCS_ERR_INVALID_ADDR:	return -EINVAL;
	case UCS_ERR_UNSUPPORTED:	return -EOPNOTSUPP;
	case UCS_ERR_UNREACHABLE:	return -EHOSTUNREACH;
	case UCS_ERR_REJECTED:		return -ECONNREFUSED;
	case UCS_ERR_NOT_CONNECTED:	return -ENOTCONN;
	case UCS_ERR_CONNECTION_RESET:	return -ECONNRESET;
	case UCS_ERR_ENDPOINT_TIMEOUT:	return -ETIMEDOUT;
	case UCS_ERR_TIMED_OUT:		return -ETIMEDOUT;
	case UCS_ERR_CANCELED:		return -ECANCELED;
	case UCS_ERR_BUSY:		return -EADDRINUSE;
	case UCS_ERR_NO_RESOURCE:	return -EAGAIN;
	case UCS_ERR_EXCEEDS_LIMIT:	return -E2BIG;
	case UCS_ERR_NO_DEVICE:		return -ENODEV;
	default:			return -EIO;
	}
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t xf_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/*
 * The clock of deadline checks, made every progress step: the coarse
 * clock is a read of the kernel's last tick (a few ns, where the precise
 * one costs tens in a VM), behind by at most a tick (1-10 ms). Deadlines
 * are set with the precise clock (xf_deadline()), so a check never fires
 * early, at most a tick late. Latencies use the precise clock.
 */
uint64_t xf_coarse_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}

/*
 * fork() children: the child handler bumps the generation, so an endpoint
 * created in another generation (the parent's) is seen with one load.
 * Registered at the first endpoint's creation, before any exists.
 */
uint64_t xf_fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_err, fork_warned;

static void fork_child(void)
{
	__atomic_store_n(&xf_fork_gen, xf_fork_gen + 1, __ATOMIC_RELAXED);
}

static void fork_register(void)
{
	fork_err = pthread_atfork(NULL, NULL, fork_child);
}

/* the generation an endpoint created now belongs to; -errno, the first
 * time only, when a child could not be told (pthread_atfork() failed) */
int xf_fork_generation(uint64_t *gen)
{
	pthread_once(&fork_once, fork_register);
	*gen = __atomic_load_n(&xf_fork_gen, __ATOMIC_RELAXED);
	if (fork_err && !__atomic_exchange_n(&fork_warned, 1, __ATOMIC_RELAXED))
		return -fork_err;
	return 0;
}

/* absolute deadline for a limit in ms; < 0 = none (UINT64_MAX) */
uint64_t xf_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return xf_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/**
 * xf_parse_addr() - "HOST:PORT" into a socket address (IPv4 or a name)
 * @addr: the string; the port is after the last ':'
 * @ss: receives the address
 * @len: receives its length
 *
 * Return: 0, or -EINVAL.
 */
int xf_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char host[256], *end;
	const char *colon;
	unsigned long port;
	size_t hl;

	if (!addr || !(colon = strrchr(addr, ':')))
		return -EINVAL;
	hl = (size_t)(colon - addr);
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end || errno || port > 65535)
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (getaddrinfo(host, NULL, &hints, &res) || !res)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return 0;
}

/**
 * xf_log() - a message through the core's log sink (hkv_set_log_fn(), else
 *	stderr filtered by HUGEKV_LOG), prefixed "xfer: "
 * @level: 0 error, 1 warning, 2 info, 3 debug
 * @fmt: printf format
 */
void xf_log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "xfer: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	hkv_log_message(level, msg);
}
