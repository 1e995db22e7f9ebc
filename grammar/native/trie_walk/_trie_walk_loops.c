/* The hot loops of the native trie walk (see _trie_walk.c for the whole): from each seed (node,
 * state) pair, one forward pass over the trie in preorder that jumps over the subtree of a dead
 * node, or, where the seed's state keeps few of its children alive, a visit of just the live ones
 * through their level-order range; the tokens of live nodes marked, missing rows built in place
 * or the node blocked, exit child ranges collected.  They and the helpers they call stay in this
 * one file, so that the compiler inlines them.
 */
#include "_trie_walk.h"

#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Marks the tokens ending at level-order `node` in `words`: NULL, or what is wrong. */
static const char *mark_all(const Walk *w, int64_t node) {
    if (node < 0 || node >= w->root) return "walk: inconsistent trie layout";
    for (int64_t k = w->end_ptr[node]; k < w->end_ptr[node + 1]; k++) {
        int64_t t = k < w->num_end ? w->end_tokens[k] : -1;
        if (t < 0 || (t >> 5) >= w->num_words) return "walk: token id out of range of the mask";
        w->words[t >> 5] |= (uint32_t)1 << (t & 31);
    }
    return NULL;
}

/* Whether `nxt`, a live successor, is no state of the automaton: past its arrays and (lazy)
 * not interned by its core either. */
static inline int bad_state(const Walk *w, int64_t nxt) {
    return (nxt < 0 || nxt >= w->num_states) && (nxt < 0 || !w->core || nxt >= trie_subset_api->num_sets(w->core));
}

/* Marks the tokens ending at preorder node `c` in `words`: NULL, or what is wrong. */
static inline const char *mark_node(const Walk *w, int64_t c) {
    int32_t t = w->pre_token[c];
    if (UNLIKELY(t < -1)) return mark_all(w, w->node_of_pre[c]); /* MULTI: several tokens end here */
    uint32_t mark = t >= 0; /* without a branch: whether a node ends a token follows no pattern */
    int64_t word = (int64_t)(t & -(int32_t)mark) >> 5;
    if (UNLIKELY(word >= w->num_words)) return "walk: token id out of range of the mask";
    w->words[word] |= mark << (t & 31);
    return NULL;
}

/* Makes sure state `st` of a live node with children has its row: 1 when it has, 0 when the node
 * is blocked (pushed as (node, st)), -1 with an exception set. */
static int ensure_row(Walk *w, int64_t node, int64_t st, Vec *blocked) {
    if (st < w->num_states && w->expanded[st]) return 1;
    if (w->building && w->seconds >= 0 && w->fills++ % 16 == 0 && now() >= w->deadline)
        w->building = 0; /* out of time */
    if (!w->building || st >= w->num_states) {
        if (vec_push2(blocked, node, st)) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    }
    return trie_subset_api->fill(w->core, st, w->rows, w->num_classes, w->expanded, w->accepting,
                                 w->num_states) ? -1 : 1;
}

/* Keeps the child range of preorder node `p` at `depth` as exits (see `trie_ranges_by_depth`). */
static inline int push_exit(Vec *found, const Walk *w, int64_t p, int64_t depth) {
    if (vec_reserve(found, 3)) return -1;
    found->data[found->len++] = depth;
    found->data[found->len++] = w->pre_child_lo[p];
    found->data[found->len++] = w->pre_child_hi[p];
    return 0;
}

/* Walks the subtree of preorder node `p` (ending at `end`, at depth `base`), whose state's row is
 * `stack[base]`: 0, or -1 with an exception set or `*bad` set. */
static int walk_below(Walk *w, const int32_t **stack, int64_t p, int64_t end, int64_t base, Vec *blocked,
                      Vec *found, const char **bad) {
    const int32_t *const class_of_byte = w->class_of_byte, *const pre_next = w->pre_next;
    const uint32_t *const pre_code = w->pre_code;
    const int64_t num_states = w->num_states, num_classes = w->num_classes;
    const int want_exits = w->want_exits;
    const uint8_t *const expanded = w->expanded;
    int64_t valid = base; /* stack[base..valid] hold rows written by this walk */
    for (int64_t c = p + 1; c < end;) {
        uint32_t code = pre_code[c];
        int64_t depth = code >> 8, next = pre_next[c];
        if (UNLIKELY(depth <= base || depth - 1 > valid || depth > MAX_DEPTH || next <= c || next > end)) {
            *bad = "walk: inconsistent preorder arrays";
            return -1;
        }
        int64_t nxt = stack[depth - 1][class_of_byte[code & 0xFF]];
        if (!nxt) {
            c = next; /* the whole subtree dies */
            continue;
        }
        if (UNLIKELY(bad_state(w, nxt))) {
            *bad = "walk: node or state out of range";
            return -1;
        }
        if (UNLIKELY((*bad = mark_node(w, c)) != NULL)) return -1;
        if (next > c + 1) { /* children */
            if (UNLIKELY(nxt >= num_states || !expanded[nxt])) {
                int got = ensure_row(w, w->node_of_pre[c], nxt, blocked);
                if (got < 0) return -1;
                if (!got) {
                    c = next;
                    continue;
                }
            }
            if (want_exits && w->accepting[nxt] && push_exit(found, w, c, depth)) {
                PyErr_NoMemory();
                return -1;
            }
            stack[depth] = w->rows + nxt * num_classes;
            valid = depth;
        }
        c++;
    }
    return 0;
}

/* Walks the subtrees of the children of preorder node `p` (at depth `base`, its state's row on
 * `stack[base]`), finding the live children through their level-order range: the bytes of one
 * node's children lie together, so a state that allows few of them (most grammar states, at the
 * root) touches none of the dead children, which the preorder pass reads one by one to jump over
 * their subtrees.  0, or -1 with an exception set or `*bad` set. */
static int walk_children(Walk *w, const int32_t **stack, int64_t p, int64_t base, Vec *blocked, Vec *found,
                         const char **bad) {
    const int32_t *const row = stack[base];
    const int64_t lo = w->pre_child_lo[p], hi = w->pre_child_hi[p], root = w->root;
    if (lo < 0 || lo > hi || hi > root || base + 1 > MAX_DEPTH) {
        *bad = "walk: inconsistent preorder arrays";
        return -1;
    }
    for (int64_t ch = lo; ch < hi; ch++) {
        int64_t nxt = row[w->class_of_byte[w->byte[ch]]];
        if (!nxt) continue;
        if (UNLIKELY(bad_state(w, nxt))) {
            *bad = "walk: node or state out of range";
            return -1;
        }
        int64_t cp = w->pre_of_node[ch], end = cp < 0 || cp > root ? -1 : w->pre_next[cp];
        if (end <= cp || end > root + 1 || w->node_of_pre[cp] != ch) {
            *bad = "walk: inconsistent preorder arrays";
            return -1;
        }
        if ((*bad = mark_node(w, cp))) return -1;
        if (end == cp + 1) continue; /* a leaf */
        if (UNLIKELY(nxt >= w->num_states || !w->expanded[nxt])) {
            int got = ensure_row(w, ch, nxt, blocked);
            if (got < 0) return -1;
            if (!got) continue;
        }
        if (w->want_exits && w->accepting[nxt] && push_exit(found, w, cp, base + 1)) {
            PyErr_NoMemory();
            return -1;
        }
        stack[base + 1] = w->rows + nxt * w->num_classes;
        if (walk_below(w, stack, cp, end, base + 1, blocked, found, bad)) return -1;
    }
    return 0;
}

/* Whether the state whose row is `row` keeps few of the children of preorder node `p` alive (a
 * quarter at most): `walk_children` then reads less of the trie than the preorder pass. */
static int few_live_children(const Walk *w, const int32_t *row, int64_t p) {
    const int64_t lo = w->pre_child_lo[p], hi = w->pre_child_hi[p];
    if (lo < 0 || lo > hi || hi > w->root) return 0; /* the preorder pass reports it */
    int64_t live = 0;
    for (int64_t ch = lo; ch < hi; ch++) live += row[w->class_of_byte[w->byte[ch]]] != 0;
    return 4 * live <= hi - lo;
}

/* Walks from the seed (node, state) pairs (`seeds`: pairs, flat), collecting blocked pairs and
 * exit child ranges (as `trie_ranges_by_depth` gives them): 0, or -1 with an exception set. */
int trie_run_walk(Walk *w, const int64_t *seeds, int64_t num_seeds, Vec *blocked, Vec *exits) {
    static const int32_t *stack[MAX_DEPTH + 2]; /* the row of the state after each depth's node on the path */
    static Vec found;                            /* exit (depth, lo, hi), kept: its pages stay mapped */
    const char *bad = NULL;
    int status = -1;
    const int64_t root = w->root;
    found.len = 0;
    for (int64_t i = 0; i < num_seeds; i++) {
        int64_t node = seeds[2 * i], st = seeds[2 * i + 1];
        if (node < 0 || node > root || st < 0 || st >= (w->core ? trie_subset_api->num_sets(w->core) : w->num_states)) {
            bad = "walk: node or state out of range";
            goto done;
        }
        int64_t p = w->pre_of_node[node], end = p < 0 || p > root ? -1 : w->pre_next[p];
        if (end <= p || end > root + 1 || w->node_of_pre[p] != node) {
            bad = "walk: inconsistent preorder arrays";
            goto done;
        }
        if (node != root && (bad = mark_all(w, node))) goto done;
        if (end == p + 1) continue; /* a leaf */
        int got = ensure_row(w, node, st, blocked);
        if (got < 0) goto done;
        if (!got) continue;
        int64_t base = w->pre_code[p] >> 8;
        if (w->want_exits && w->accepting[st] && p != 0 && push_exit(&found, w, p, base)) goto nomem;
        stack[base] = w->rows + st * w->num_classes;
        if (few_live_children(w, stack[base], p) ? walk_children(w, stack, p, base, blocked, &found, &bad)
                                                 : walk_below(w, stack, p, end, base, blocked, &found, &bad))
            goto done;
    }
    if (trie_ranges_by_depth(&found, exits)) goto nomem;
    status = 0;
    goto done;
nomem:
    PyErr_NoMemory();
done:
    if (bad) PyErr_SetString(PyExc_ValueError, bad);
    return status;
}
