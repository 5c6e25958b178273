/* SPDX-License-Identifier: Apache-2.0 */
/* The graph cache: an open-addressing hash table keyed by (padded descriptor, piece range). */
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t key_hash(const vg_batch_desc *k, int first, int last)
{
    uint64_t h = (uint64_t)k->num_tokens;
    h = mix(h, (uint64_t)(uint32_t)k->num_requests);
    h = mix(h, k->uniform);
    h = mix(h, k->variant);
    h = mix(h, (uint64_t)(uint32_t)first << 32 | (uint32_t)last);
    return h;
}

static int key_equal(const graph_entry *e, const vg_batch_desc *k, int first, int last)
{
    return e->key.num_tokens == k->num_tokens && e->key.num_requests == k->num_requests &&
           e->key.uniform == k->uniform && e->key.variant == k->variant && e->first == first &&
           e->last == last;
}

graph_entry *vg_cache_find(graph_cache *c, const vg_batch_desc *key, int first, int last)
{
    if (!c->cap) return NULL;
    size_t mask = c->cap - 1;
    for (size_t i = key_hash(key, first, last) & mask;; i = (i + 1) & mask) {
        graph_entry *e = &c->slots[i];
        if (!e->used) return NULL;
        if (key_equal(e, key, first, last)) return e;
    }
}

static int grow(graph_cache *c)
{
    size_t ncap = c->cap ? c->cap * 2 : 64;
    graph_entry *slots = calloc(ncap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->slots[i].used) continue;
        graph_entry *e = &c->slots[i];
        size_t j = key_hash(&e->key, e->first, e->last) & (ncap - 1);
        while (slots[j].used) j = (j + 1) & (ncap - 1);
        slots[j] = *e;
    }
    free(c->slots);
    c->slots = slots;
    c->cap = ncap;
    return 0;
}

graph_entry *vg_cache_insert(graph_cache *c, const vg_batch_desc *key, int first, int last)
{
    graph_entry *e = vg_cache_find(c, key, first, last);
    if (e) return e;
    if ((c->count + 1) * 2 > c->cap && grow(c) != 0) return NULL;
    size_t mask = c->cap - 1;
    size_t i = key_hash(key, first, last) & mask;
    while (c->slots[i].used) i = (i + 1) & mask;
    e = &c->slots[i];
    memset(e, 0, sizeof *e);
    e->used = 1;
    e->key = *key;
    e->first = first;
    e->last = last;
    c->count++;
    return e;
}

void vg_cache_free(graph_cache *c)
{
    free(c->slots);
    memset(c, 0, sizeof *c);
}
