// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Buffers for the packets vrdma builds: page fragments for skb heads,
 * packet headers and copied payload, from per-CPU pages that are used
 * again, as they are, once every fragment handed out of them has been
 * freed; and skb structs from the kernel's per-CPU cache of freed ones.
 *
 * Why not netdev_alloc_frag(): its per-CPU cache reuses its 32 KB page
 * only if every fragment of it is free at the moment the page runs out.
 * One packet still on its way (queued on a veth, held by the peer's
 * socket, an ACK) is enough to make it take a new page, and Debian's 6.1
 * zeroes every new page (CONFIG_INIT_ON_ALLOC_DEFAULT_ON): with 64-byte
 * SENDs a 32 KB clear every ~60 messages, 3 % of the kernel's instructions
 * (docs/benchmarks.md, "Recycled fragment pages"). Here a CPU keeps a few
 * pages, each with one reference of its own, and goes on to the next
 * when one runs out; a page whose count is back to that reference has no
 * fragment left anywhere and is carved again.
 *
 * A recycled page holds earlier packets' bytes, as a reused page_frag page
 * does: every fragment is written whole by its user before it is sent.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/skbuff.h>
#include "vrdma.h"

#define VRDMA_FRAG_ORDER	3	/* 32 KB, as the page_frag cache */
#define VRDMA_FRAG_PAGES	4
/* references a fill hands out at most: one per cache line of 32 KB */
#define VRDMA_FRAG_BIAS		((PAGE_SIZE << VRDMA_FRAG_ORDER) / SMP_CACHE_BYTES)

struct vrdma_frag_page {
	struct page *page;
	unsigned int bias;	/* its references not handed out yet */
};

struct vrdma_frag_cache {
	struct vrdma_frag_page p[VRDMA_FRAG_PAGES];
	unsigned int cur;	/* the page being carved, from its end down */
	unsigned int offset;	/* where its free bytes end */
};

static DEFINE_PER_CPU(struct vrdma_frag_cache, vrdma_frag_caches);

/* Never a pfmemalloc page: one would have to be given back at once. */
static struct page *vrdma_frag_new_page(void)
{
	struct page *page;

	page = alloc_pages(GFP_ATOMIC | __GFP_COMP | __GFP_NOWARN |
			   __GFP_NORETRY | __GFP_NOMEMALLOC, VRDMA_FRAG_ORDER);
	if (!page)
		page = alloc_pages(GFP_ATOMIC | __GFP_NOWARN |
				   __GFP_NOMEMALLOC, 0);
	return page;
}

/*
 * The current page cannot take @len more bytes: carve the next free one,
 * or, all of them having fragments out, put a new page in the place of
 * the one after the current (it is freed with its last fragment). False
 * without a page that takes @len.
 */
static bool vrdma_frag_next(struct vrdma_frag_cache *fc, unsigned int len)
{
	struct vrdma_frag_page *p = &fc->p[fc->cur];
	unsigned int i, n;

	if (p->page) {
		/* free again once its fragments are: count back to 1 */
		page_ref_sub(p->page, p->bias);
		p->bias = 0;
	}
	for (i = 1; i <= VRDMA_FRAG_PAGES; i++) {
		n = (fc->cur + i) % VRDMA_FRAG_PAGES;
		p = &fc->p[n];
		if (p->page && page_ref_count(p->page) == 1)
			goto fill;
	}
	n = (fc->cur + 1) % VRDMA_FRAG_PAGES;
	p = &fc->p[n];
	if (p->page)
		put_page(p->page);
	p->page = vrdma_frag_new_page();
	if (!p->page) {
		fc->cur = n;
		fc->offset = 0;
		return false;
	}
fill:
	fc->cur = n;
	page_ref_add(p->page, VRDMA_FRAG_BIAS);
	p->bias = VRDMA_FRAG_BIAS;
	fc->offset = page_size(p->page);
	return fc->offset >= len;
}

/*
 * @len bytes (rounded up to a cache line) in a page fragment, freed with
 * skb_free_frag() or by the skb that takes it; NULL if no memory. Room
 * for one packet's bytes (its header, and its payload unless page
 * fragments carry it): no zeroed buffer per packet (init_on_alloc zeroes
 * every new skb head), pages reused once the skbs that held them are freed.
 */
void *vrdma_frag_alloc(unsigned int len)
{
	struct vrdma_frag_cache *fc;
	struct vrdma_frag_page *p;
	void *data = NULL;

	len = SKB_DATA_ALIGN(len);
	/* local_bh_enable() must not run with interrupts off */
	if (unlikely(irqs_disabled() || len > PAGE_SIZE << VRDMA_FRAG_ORDER))
		return netdev_alloc_frag(len);
	local_bh_disable();
	fc = this_cpu_ptr(&vrdma_frag_caches);
	p = &fc->p[fc->cur];
	if (fc->offset < len || !p->bias) {
		if (!vrdma_frag_next(fc, len))
			goto out;
		p = &fc->p[fc->cur];
	}
	fc->offset -= len;
	p->bias--;
	data = page_address(p->page) + fc->offset;
out:
	local_bh_enable();
	return data ? data : netdev_alloc_frag(len);
}

/* Module unload: every CPU's pages go with their last fragment. */
void vrdma_frag_exit(void)
{
	unsigned int cpu, i;

	for_each_possible_cpu(cpu) {
		struct vrdma_frag_cache *fc = per_cpu_ptr(&vrdma_frag_caches,
							  cpu);

		for (i = 0; i < VRDMA_FRAG_PAGES; i++) {
			struct vrdma_frag_page *p = &fc->p[i];

			if (p->page)
				__page_frag_cache_drain(p->page, p->bias + 1);
			p->page = NULL;
		}
	}
}

/*
 * With BH off (the data path's doorbell runs and softirqs), skb structs
 * come from and go back to the per-CPU cache the kernel keeps for NAPI:
 * a struct freed there is taken again as it is, where a new slab object
 * is zeroed whole by init_on_alloc first (232 bytes), once per packet of
 * a stream of small messages, whose every skb is built and freed on the
 * one CPU that runs both ends of a veth.
 */
static bool vrdma_skb_cache_ok(void)
{
	return in_softirq() && !in_hardirq();
}

struct sk_buff *vrdma_build_skb(void *data, unsigned int size)
{
	if (vrdma_skb_cache_ok())
		return napi_build_skb(data, size);
	return build_skb(data, size);
}

/* Free a received @skb that was used (not dropped). */
void vrdma_consume_skb(struct sk_buff *skb)
{
	if (vrdma_skb_cache_ok())
		napi_consume_skb(skb, 1);
	else
		consume_skb(skb);
}
