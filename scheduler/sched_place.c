/*
 * sched_place.c - the free-capacity index and gang placement.
 *
 * Best fit for a one-node job scans at most 65 buckets (O(1) in the number of
 * nodes). A job larger than a node spans the fewest nodes: most-free first,
 * the last one best fit; with gpus_per_node, the fullest nodes that still hold
 * that many. Among equally few nodes, a set under one switch label wins, then
 * one rack label (least capacity left over), then any. Within a node, GPUs
 * that are NVLink peers of each other are taken together (greedy from each
 * seed GPU, at most 16 seeds). Multi-node jobs scan the node list, O(nodes);
 * they are rare. A job whose site is not every node's (a multi-site cluster)
 * sees only its site's nodes: the others are hidden from the index for the
 * call, O(nodes) per call. Threading: none.
 */
#include "sched_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the capacity index ---------- */

static void sched_idx_unlink(struct idx *x, int n)
{
    int b = x->nav[n];

    if (x->prev[n] >= 0)
        x->next[x->prev[n]] = x->next[n];
    else
        x->head[b] = x->next[n];
    if (x->next[n] >= 0)
        x->prev[x->next[n]] = x->prev[n];
    x->cnt[b]--;
    x->total -= b;
}

void sched_idx_link(struct idx *x, int n)
{
    int b = x->nav[n];

    x->prev[n] = -1;
    x->next[n] = x->head[b];
    if (x->head[b] >= 0)
        x->prev[x->head[b]] = n;
    x->head[b] = n;
    x->cnt[b]++;
    x->total += b;
}

void sched_idx_set(struct idx *x, int n, uint64_t m)
{
    sched_idx_unlink(x, n);
    x->avail[n] = m;
    x->nav[n] = popc(m);
    sched_idx_link(x, n);
}

int sched_idx_alloc(struct idx *x, size_t n)
{
    size_t k = n ? n : 1;

    x->n = n;
    x->avail = calloc(k, sizeof(*x->avail));
    x->nav = calloc(k, sizeof(int));
    x->next = calloc(k, sizeof(int));
    x->prev = calloc(k, sizeof(int));
    return x->avail && x->nav && x->next && x->prev ? 0 : -1;
}

void sched_idx_free(struct idx *x)
{
    free(x->avail);
    free(x->nav);
    free(x->next);
    free(x->prev);
}

void sched_idx_copy(struct idx *dst, const struct idx *src)
{
    size_t n = src->n;

    memcpy(dst->avail, src->avail, n * sizeof(*src->avail));
    memcpy(dst->nav, src->nav, n * sizeof(int));
    memcpy(dst->next, src->next, n * sizeof(int));
    memcpy(dst->prev, src->prev, n * sizeof(int));
    memcpy(dst->head, src->head, sizeof(src->head));
    memcpy(dst->cnt, src->cnt, sizeof(src->cnt));
    dst->total = src->total;
}

/* Exact feasibility over the nodes x shows: does some placement of (g, gpn) exist? */
static bool feasible_all(const struct pass *P, const struct idx *x, int g, int gpn)
{
    if (g > x->total)
        return false;
    if ((gpn == 0 && g <= P->maxng) || gpn == g) {
        for (int f = g; f < NB; f++)
            if (x->cnt[f] > 0)
                return true;
        return false;
    }
    if (gpn == 0)
        return true;
    int need = g / gpn, have = 0;
    for (int f = gpn; f < NB; f++)
        have += x->cnt[f];
    return have >= need;
}

/* ---------- GPUs within a node ---------- */

/* k GPUs out of avail on node nd, preferring NVLink peers of each other. */
static uint64_t choose_gpus(const struct sched_node *nd, bool topo, uint64_t avail, int k)
{
    uint64_t best = 0, m = avail;
    int bestscore = -1, seeds = 0;

    if (popc(avail) <= k)
        return avail;
    if (!topo) {
        uint64_t out = 0;
        while (k-- > 0) {
            uint64_t b = m & (~m + 1);
            out |= b;
            m &= ~b;
        }
        return out;
    }
    if (k == 1) { /* the GPU with the fewest free peers keeps peer groups whole */
        int bc = -1, bl = INT_MAX;
        for (uint64_t r = avail; r; r &= r - 1) {
            int c = __builtin_ctzll(r);
            int l = popc(nd->nvlink_peers[c] & avail);
            if (l < bl) {
                bl = l;
                bc = c;
            }
        }
        return 1ULL << bc;
    }
    for (uint64_t s = avail; s && seeds < 16; s &= s - 1, seeds++) {
        uint64_t set = s & (~s + 1);
        int score = 0;
        for (int step = 1; step < k; step++) {
            int bc = -1, bl = -1;
            for (uint64_t r = avail & ~set; r; r &= r - 1) {
                int c = __builtin_ctzll(r);
                int l = popc(nd->nvlink_peers[c] & set);
                if (l > bl) {
                    bl = l;
                    bc = c;
                }
            }
            set |= 1ULL << bc;
            score += bl;
        }
        if (score > bestscore) {
            bestscore = score;
            best = set;
        }
    }
    return best;
}

/* ---------- placement ---------- */

static void take(struct pass *P, struct idx *x, int n, int t)
{
    uint64_t m = choose_gpus(&P->c->nodes[n], P->topo[n], x->avail[n], t);

    sched_idx_set(x, n, x->avail[n] & ~m);
    P->pick_node[P->npick] = n;
    P->pick_mask[P->npick] = m;
    P->npick++;
}

/* Stable counting sort of nodes arr[0..m) by nav, most free first. */
static void sort_nav_desc(const struct idx *x, int *arr, int m, int *tmp)
{
    int cnt[NB + 1] = {0};

    for (int i = 0; i < m; i++)
        cnt[NB - 1 - x->nav[arr[i]] + 1]++;
    for (int b = 1; b <= NB; b++)
        cnt[b] += cnt[b - 1];
    for (int i = 0; i < m; i++)
        tmp[cnt[NB - 1 - x->nav[arr[i]]]++] = arr[i];
    memcpy(arr, tmp, (size_t)m * sizeof(int));
}

/*
 * Out of cand[0..m) (sorted most free first), choose the fewest nodes for
 * (g, gpn): returns how many, with the chosen ones moved to the front; 0 if
 * it cannot fit. gpn == 0: most free first, the last one best fit.
 * gpn > 0: the g/gpn nodes with the fewest free GPUs that still hold gpn.
 */
static int pick_list(const struct idx *x, int *cand, int m, int g, int gpn)
{
    if (gpn == 0) {
        int sum = 0, k = 0;
        while (k < m && sum < g)
            sum += x->nav[cand[k++]];
        if (sum < g)
            return 0;
        int r = g - (sum - x->nav[cand[k - 1]]);
        for (int j = m - 1; j >= k - 1; j--) {
            if (x->nav[cand[j]] >= r) {
                int t = cand[j];
                cand[j] = cand[k - 1];
                cand[k - 1] = t;
                break;
            }
        }
        return k;
    }
    int need = g / gpn, last = -1;
    for (int j = 0; j < m; j++)
        if (x->nav[cand[j]] >= gpn)
            last = j;
    if (last + 1 < need)
        return 0;
    /* the need candidates ending at last (all hold gpn: sorted descending) */
    for (int i = 0; i < need; i++)
        cand[i] = cand[last - need + 1 + i];
    return need;
}

static int cmp_label(const void *a, const void *b, const struct sched_node *nodes, int which)
{
    int ia = *(const int *)a, ib = *(const int *)b;
    const char *la = which ? nodes[ia].rack : nodes[ia].switch_name;
    const char *lb = which ? nodes[ib].rack : nodes[ib].switch_name;
    int r = strcmp(la, lb);
    return r ? r : (ia > ib) - (ia < ib);
}

/* Insertion into sorted groups by label without qsort context: merge sort. */
static void msort_label(int *a, int *tmp, int m, const struct sched_node *nodes, int which)
{
    if (m < 2)
        return;
    int h = m / 2;
    msort_label(a, tmp, h, nodes, which);
    msort_label(a + h, tmp, m - h, nodes, which);
    int i = 0, j = h, k = 0;
    while (i < h && j < m)
        tmp[k++] = cmp_label(&a[i], &a[j], nodes, which) <= 0 ? a[i++] : a[j++];
    while (i < h)
        tmp[k++] = a[i++];
    while (j < m)
        tmp[k++] = a[j++];
    memcpy(a, tmp, (size_t)m * sizeof(int));
}

/* Groups of READY nodes sharing a switch label, then a rack label (CSR). */
static int build_groups(struct pass *P)
{
    const struct sched_node *nodes = P->c->nodes;
    size_t nn = P->nn, nm = 0;

    P->grp_start = malloc((2 * nn + 2) * sizeof(int));
    P->grp_mem = malloc((2 * nn + 1) * sizeof(int));
    if (!P->grp_start || !P->grp_mem)
        return -1;
    P->ngrp = 0;
    for (int which = 0; which < 2; which++) {
        int m = 0;
        int *a = P->grp_mem + nm;
        for (size_t i = 0; i < nn; i++) {
            const char *l = which ? nodes[i].rack : nodes[i].switch_name;
            if (l && nodes[i].state == SCHED_NODE_READY)
                a[m++] = (int)i;
        }
        msort_label(a, P->tmp1, m, nodes, which);
        for (int i = 0; i < m; i++) {
            const char *l = which ? nodes[a[i]].rack : nodes[a[i]].switch_name;
            const char *pl =
                i ? (which ? nodes[a[i - 1]].rack : nodes[a[i - 1]].switch_name) : NULL;
            if (i == 0 || strcmp(l, pl) != 0)
                P->grp_start[P->ngrp++] = (int)nm + i;
        }
        nm += (size_t)m;
        if (which == 0)
            P->nsw = P->ngrp;
    }
    P->grp_start[P->ngrp] = (int)nm;
    P->groups_built = true;
    return 0;
}

/* Take GPUs on the chosen cand[0..k) for (g, gpn). */
static void take_list(struct pass *P, struct idx *x, const int *cand, int k, int g, int gpn)
{
    int left = g;

    for (int i = 0; i < k; i++) {
        int t = gpn ? gpn : (x->nav[cand[i]] < left ? x->nav[cand[i]] : left);
        take(P, x, cand[i], t);
        left -= t;
    }
}

/* A gang over several nodes: fewest nodes, then one switch, then one rack. */
static int place_multi(struct pass *P, struct idx *x, int g, int gpn)
{
    int thr = gpn ? gpn : 1, m = 0, k;
    int *cand = P->tmp2;

    for (int f = NB - 1; f >= thr; f--)
        for (int n = x->head[f]; n >= 0; n = x->next[n])
            cand[m++] = n;
    k = pick_list(x, cand, m, g, gpn);
    if (k == 0)
        return 0;
    if (k > 1 && !P->groups_built && build_groups(P) != 0)
        return -1;
    if (k > 1) {
        int best = -1;
        int64_t bestleft = INT64_MAX;
        for (size_t gi = 0; gi < P->ngrp; gi++) {
            if (best >= 0 && gi == P->nsw)
                break; /* a switch group wins over any rack group */
            int gm = 0;
            int64_t sum = 0;
            for (int j = P->grp_start[gi]; j < P->grp_start[gi + 1]; j++) {
                int n = P->grp_mem[j];
                if (x->nav[n] >= thr) {
                    cand[gm++] = n;
                    sum += x->nav[n];
                }
            }
            if (sum < g)
                continue;
            sort_nav_desc(x, cand, gm, P->tmp1);
            if (pick_list(x, cand, gm, g, gpn) == k && sum - g < bestleft) {
                bestleft = sum - g;
                best = (int)gi;
            }
        }
        if (best >= 0) {
            int gm = 0;
            for (int j = P->grp_start[best]; j < P->grp_start[best + 1]; j++)
                if (x->nav[P->grp_mem[j]] >= thr)
                    cand[gm++] = P->grp_mem[j];
            sort_nav_desc(x, cand, gm, P->tmp1);
            k = pick_list(x, cand, gm, g, gpn);
        } else {
            m = 0;
            for (int f = NB - 1; f >= thr; f--)
                for (int n = x->head[f]; n >= 0; n = x->next[n])
                    cand[m++] = n;
            k = pick_list(x, cand, m, g, gpn);
        }
    }
    take_list(P, x, cand, k, g, gpn);
    return 1;
}

/* Place (g, gpn) on the nodes x shows and take its GPUs: 1 placed, 0 no fit. */
static int place_all(struct pass *P, struct idx *x, int g, int gpn)
{
    P->npick = 0;
    if (!feasible_all(P, x, g, gpn))
        return 0;
    if ((gpn == 0 && g <= P->maxng) || gpn == g) {
        for (int f = g; f < NB; f++) {
            if (x->head[f] >= 0) {
                take(P, x, x->head[f], g);
                return 1;
            }
        }
        return 0;
    }
    return place_multi(P, x, g, gpn);
}

/* ---------- sites ---------- */

bool sched_site_set(struct pass *P, int64_t site)
{
    P->site = site;
    P->site_only = site != 0 && P->node_site != 0 && P->node_site != site;
    return P->site_only;
}

/*
 * Hide from x the nodes of other sites than P->site (remembered in P->hid)
 * and narrow P->maxng to the largest READY node of the site, so that "fits
 * one node" means one node of the site. O(nodes): only jobs whose site is not
 * the whole cluster's pay it. Returns how many nodes were hidden.
 */
static int hide_foreign(struct pass *P, struct idx *x, int *maxng_saved)
{
    const struct sched_node *nodes = P->c->nodes;
    int nh = 0, maxng = 0;

    *maxng_saved = P->maxng;
    for (size_t n = 0; n < P->nn; n++) {
        if (nodes[n].site == 0 || nodes[n].site == P->site) {
            if (nodes[n].state == SCHED_NODE_READY && nodes[n].ngpus > maxng)
                maxng = nodes[n].ngpus;
            continue;
        }
        if (x->avail[n] == 0)
            continue;
        P->hid[nh] = (int)n;
        P->hid_avail[nh] = x->avail[n];
        nh++;
        sched_idx_set(x, (int)n, 0);
    }
    P->maxng = maxng;
    return nh;
}

/* Put back what hide_foreign() hid (the placement never touched those nodes). */
static void unhide(struct pass *P, struct idx *x, int nh, int maxng_saved)
{
    for (int i = 0; i < nh; i++)
        sched_idx_set(x, P->hid[i], P->hid_avail[i]);
    P->maxng = maxng_saved;
}

/* Exact: does some placement of (g, gpn) exist in x on nodes of the current site? */
bool sched_feasible(struct pass *P, struct idx *x, int g, int gpn)
{
    int saved, nh;
    bool ok;

    if (!P->site_only)
        return feasible_all(P, x, g, gpn);
    nh = hide_foreign(P, x, &saved);
    ok = feasible_all(P, x, g, gpn);
    unhide(P, x, nh, saved);
    return ok;
}

/* Place (g, gpn) in x on nodes of the current site and take its GPUs, leaving
 * them in P->pick_*: 1 placed, 0 no fit, -1 ENOMEM. */
int sched_place(struct pass *P, struct idx *x, int g, int gpn)
{
    int saved, nh, ok;

    if (!P->site_only)
        return place_all(P, x, g, gpn);
    nh = hide_foreign(P, x, &saved);
    ok = place_all(P, x, g, gpn);
    unhide(P, x, nh, saved);
    return ok;
}
