/* SPDX-License-Identifier: BSD-2-Clause */
/* FI_THREAD_SAFE: several threads posting to and polling one endpoint. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dp_helpers.h"

enum { SENDERS = 4, PER_SENDER = 150, RECEIVERS = 2 };

static struct dp_ep p[2];
static atomic_int sent_done, received;
static uint32_t slots[SENDERS][PER_SENDER][64];

/* Every tenth message goes by rendezvous. */
static size_t size_of(int k)
{
	return k % 10 == 9 ? sizeof(slots[0][0]) : 8;
}

static void *sender(void *arg)
{
	int t = (int)(intptr_t)arg;
	static uint32_t msgs[SENDERS][PER_SENDER][64];
	struct fi_cq_tagged_entry e[8];

	for (int k = 0; k < PER_SENDER; k++) {
		ssize_t ret;

		for (int w = 0; w < 64; w++)
			msgs[t][k][w] = (uint32_t)(t << 16 | k);
		while ((ret = fi_tsend(p[0].ep, msgs[t][k], size_of(k), NULL,
				       p[0].peer[1], (uint64_t)t, NULL)) ==
		       -FI_EAGAIN) {
			ssize_t n = fi_cq_read(p[0].txcq, e, 8);

			if (n > 0)
				atomic_fetch_add(&sent_done, (int)n);
		}
		cr_assert_eq(ret, 0);
		ret = fi_cq_read(p[0].txcq, e, 8);
		if (ret > 0)
			atomic_fetch_add(&sent_done, (int)ret);
	}
	while (atomic_load(&sent_done) < SENDERS * PER_SENDER) {
		ssize_t n = fi_cq_read(p[0].txcq, e, 8);

		if (n > 0)
			atomic_fetch_add(&sent_done, (int)n);
		else
			cr_assert_eq(n, -FI_EAGAIN);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct fi_cq_tagged_entry e[8];

	(void)arg;
	while (atomic_load(&received) < SENDERS * PER_SENDER) {
		ssize_t n = fi_cq_read(p[1].rxcq, e, 8);

		if (n > 0)
			atomic_fetch_add(&received, (int)n);
		else
			cr_assert_eq(n, -FI_EAGAIN);
	}
	return NULL;
}

Test(threads, several_threads_post_and_poll_one_endpoint, .timeout = 300)
{
	pthread_t s[SENDERS], r[RECEIVERS];

	require_vm();
	dp_pair(&p[0], &p[1], NULL);
	cr_assert_eq(p[0].d.info->domain_attr->threading, FI_THREAD_SAFE);
	/* Receives posted in order per tag: slot k of tag t must get
	 * message k of sender t. */
	for (int k = 0; k < PER_SENDER; k++) {
		for (int t = 0; t < SENDERS; t++)
			DP_POST(p, 2,
				fi_trecv(p[1].ep, slots[t][k],
					 sizeof(slots[t][k]), NULL,
					 FI_ADDR_UNSPEC, (uint64_t)t, 0, NULL));
	}
	for (int i = 0; i < RECEIVERS; i++)
		pthread_create(&r[i], NULL, receiver, NULL);
	for (int t = 0; t < SENDERS; t++)
		pthread_create(&s[t], NULL, sender, (void *)(intptr_t)t);
	for (int t = 0; t < SENDERS; t++)
		pthread_join(s[t], NULL);
	for (int i = 0; i < RECEIVERS; i++)
		pthread_join(r[i], NULL);
	cr_assert_eq(atomic_load(&sent_done), SENDERS * PER_SENDER);
	cr_assert_eq(atomic_load(&received), SENDERS * PER_SENDER);
	for (int t = 0; t < SENDERS; t++) {
		for (int k = 0; k < PER_SENDER; k++)
			cr_assert_eq(slots[t][k][0], (uint32_t)(t << 16 | k),
				     "tag %d slot %d got 0x%x", t, k,
				     slots[t][k][0]);
	}
	dp_close(&p[1]);
	dp_close(&p[0]);
}

Test(threads, thread_domain_is_offered_too)
{
	struct fi_info *hints = gdrfab_hints(), *info;

	require_vm();
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	info = gdrfab_getinfo_hints(hints, 0, NULL, NULL);
	cr_assert_not_null(info);
	cr_assert_eq(info->domain_attr->threading, FI_THREAD_DOMAIN);
	fi_freeinfo(info);
}
