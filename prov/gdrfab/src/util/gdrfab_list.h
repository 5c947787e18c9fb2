/* SPDX-License-Identifier: BSD-2-Clause */
/* An intrusive doubly linked list (circular, with a head node). */
#ifndef GDRFAB_LIST_H
#define GDRFAB_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct gdrfab_list {
	struct gdrfab_list *next, *prev;
};

static inline void gdrfab_list_init(struct gdrfab_list *head)
{
	head->next = head->prev = head;
}

static inline bool gdrfab_list_empty(const struct gdrfab_list *head)
{
	return head->next == head;
}

static inline void gdrfab_list_insert_before(struct gdrfab_list *pos,
					     struct gdrfab_list *item)
{
	item->next = pos;
	item->prev = pos->prev;
	pos->prev->next = item;
	pos->prev = item;
}

static inline void gdrfab_list_push_tail(struct gdrfab_list *head,
					 struct gdrfab_list *item)
{
	gdrfab_list_insert_before(head, item);
}

static inline void gdrfab_list_push_head(struct gdrfab_list *head,
					 struct gdrfab_list *item)
{
	gdrfab_list_insert_before(head->next, item);
}

static inline void gdrfab_list_remove(struct gdrfab_list *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	item->next = item->prev = item;
}

#define gdrfab_list_entry(ptr, type, field)                                    \
	((type *)((char *)(ptr)-offsetof(type, field)))

/* Iterates safely against removal of the current item. */
#define gdrfab_list_for_each_safe(head, it, tmp)                               \
	for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head);          \
	     (it) = (tmp), (tmp) = (it)->next)

#endif /* GDRFAB_LIST_H */
