// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * numa.c - topology: nodes with memory, their CPUs (libnuma), per-node and
 * global hugepage pools of each size (sysfs), THP mode, RLIMIT_MEMLOCK.
 *
 * Read-only: the library never changes system hugepage pools. All reads go
 * through the os layer, so tests can fake a second node or a 1 GiB pool.
 * libnuma fills a CPU-mask cache inside numa_node_to_cpus() without a lock,
 * so concurrent pool creates serialize their libnuma calls on numa_lock.
 */
#include <stdio.h>
#include <sys/resource.h>

#include "internal.h"

#define SYS_NODE	"/sys/devices/system/node"
#define SYS_HUGE	"/sys/kernel/mm/hugepages"
#define SYS_THP		"/sys/kernel/mm/transparent_hugepage/enabled"

static pthread_mutex_t numa_lock = PTHREAD_MUTEX_INITIALIZER;

/**
 * numa_fork_child() - in a fork() child: the lock may have been held by a
 * thread the child does not have
 */
void numa_fork_child(void)
{
	pthread_mutex_init(&numa_lock, NULL);
}

/* total/free/resv of one pool directory; a missing directory is "absent" */
static int read_pool(const char *dir, bool with_resv, struct numa_topo_pool *p)
{
	char path[256];
	int ret;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "%s/nr_hugepages", dir);
	ret = os_read_u64(path, &p->total);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		goto fail;
	snprintf(path, sizeof(path), "%s/free_hugepages", dir);
	ret = os_read_u64(path, &p->free);
	if (ret)
		goto fail;
	if (with_resv) {
		snprintf(path, sizeof(path), "%s/resv_hugepages", dir);
		ret = os_read_u64(path, &p->resv);
		if (ret)
			goto fail;
	}
	p->present = true;
	return 0;
fail:
	hkv_log(HKV_LOG_ERR, "cannot read hugepage pool %s: %s", dir, strerror(-ret));
	return ret;
}

static int read_node_pools(struct topo_node *n)
{
	char dir[128];
	int ret;

	snprintf(dir, sizeof(dir), SYS_NODE "/node%d/hugepages/hugepages-2048kB", n->node);
	ret = read_pool(dir, false, &n->huge_2m);
	if (ret)
		return ret;
	snprintf(dir, sizeof(dir), SYS_NODE "/node%d/hugepages/hugepages-1048576kB", n->node);
	return read_pool(dir, false, &n->huge_1g);
}

/* "always [madvise] never" -> "madvise"; no THP -> "" */
static int read_thp(char *mode, size_t len)
{
	char buf[128], *l, *r;
	ssize_t n;

	mode[0] = '\0';
	n = os_read_file(SYS_THP, buf, sizeof(buf));
	if (n == -ENOENT)
		return 0;
	if (n < 0) {
		hkv_log(HKV_LOG_ERR, "cannot read " SYS_THP ": %s", strerror((int)-n));
		return (int)n;
	}
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r || (size_t)(r - l - 1) >= len)
		return -EINVAL;
	memcpy(mode, l + 1, r - l - 1);
	mode[r - l - 1] = '\0';
	return 0;
}

static void add_node(struct topo *t, int node)
{
	struct topo_node *n = &t->node[t->nnodes++];
	int ret;

	n->node = node;
	ret = os->node_cpus(node, &n->cpus);
	if (ret) {
		/* prefault then runs unpinned; say so */
		hkv_log(HKV_LOG_WARN, "cannot read the CPUs of node %d: %s; prefault unpinned",
			node, strerror(-ret));
		CPU_ZERO(&n->cpus);
	}
	n->ncpus = CPU_COUNT(&n->cpus);
}

/* the nodes with memory and their CPUs: the libnuma part, under numa_lock */
static void read_node_list(struct topo *t)
{
	int max, i;

	log_hold();		/* the log callback may create a pool */
	pthread_mutex_lock(&numa_lock);
	t->numa = os->numa_available() >= 0;
	max = t->numa ? os->numa_max_node() : 0;
	for (i = 0; i <= max; i++) {
		if (t->numa && os->node_size(i) <= 0)
			continue;	/* no such node, or memoryless */
		if (t->nnodes == HKV_MAX_NODES) {
			hkv_log(HKV_LOG_WARN, "more than %d memory nodes; using the first %d",
				HKV_MAX_NODES, HKV_MAX_NODES);
			break;
		}
		add_node(t, i);
	}
	if (!t->nnodes)
		add_node(t, 0);	/* no NUMA: one node 0 */
	pthread_mutex_unlock(&numa_lock);
	log_release();
}

static int read_nodes(struct topo *t)
{
	int ret;

	read_node_list(t);
	for (int i = 0; i < (int)t->nnodes; i++) {
		ret = read_node_pools(&t->node[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/**
 * numa_topo_read() - read the topology the arena planner needs
 * @t: receives it
 *
 * Return: 0, or -errno of a sysfs read that exists but fails.
 */
int numa_topo_read(struct topo *t)
{
	struct rlimit rl;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = read_nodes(t);
	if (ret)
		return ret;
	ret = read_pool(SYS_HUGE "/hugepages-2048kB", true, &t->glob_2m);
	if (ret)
		return ret;
	ret = read_pool(SYS_HUGE "/hugepages-1048576kB", true, &t->glob_1g);
	if (ret)
		return ret;
	/* without per-node files (no NUMA), the single node has the global pool */
	if (t->nnodes == 1 && !t->node[0].huge_2m.present)
		t->node[0].huge_2m = t->glob_2m;
	if (t->nnodes == 1 && !t->node[0].huge_1g.present)
		t->node[0].huge_1g = t->glob_1g;
	ret = read_thp(t->thp_mode, sizeof(t->thp_mode));
	if (ret)
		return ret;
	ret = os->getrlimit(RLIMIT_MEMLOCK, &rl);
	if (ret) {
		hkv_log(HKV_LOG_ERR, "getrlimit(RLIMIT_MEMLOCK): %s", strerror(-ret));
		return ret;
	}
	t->memlock = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	return 0;
}

/**
 * numa_topo_find() - the topology entry of a node
 * @t: the topology
 * @n: node number
 *
 * Return: the entry, or NULL when @n has no memory or does not exist.
 */
const struct topo_node *numa_topo_find(const struct topo *t, int n)
{
	unsigned i;

	for (i = 0; i < t->nnodes; i++)
		if (t->node[i].node == n)
			return &t->node[i];
	return NULL;
}

/**
 * numa_topo_pool() - a node's pool of one hugepage size
 * @n: the node
 * @pgsz: HKV_PGSZ_2M or HKV_PGSZ_1G
 *
 * Return: the pool, or NULL for other sizes.
 */
const struct numa_topo_pool *numa_topo_pool(const struct topo_node *n, uint64_t pgsz)
{
	if (pgsz == HKV_PGSZ_2M)
		return &n->huge_2m;
	if (pgsz == HKV_PGSZ_1G)
		return &n->huge_1g;
	return NULL;
}

/**
 * numa_topo_glob() - the global pool of one hugepage size
 * @t: the topology
 * @pgsz: HKV_PGSZ_2M or HKV_PGSZ_1G
 *
 * Return: the pool, or NULL for other sizes.
 */
const struct numa_topo_pool *numa_topo_glob(const struct topo *t, uint64_t pgsz)
{
	if (pgsz == HKV_PGSZ_2M)
		return &t->glob_2m;
	if (pgsz == HKV_PGSZ_1G)
		return &t->glob_1g;
	return NULL;
}
