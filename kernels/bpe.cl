// bpe.cl: byte-pair merges for many chunks at once, one work-item per chunk.
//
// The host (netcl_lite/text/device_merge.py) packs the call's new chunks, after the regex
// split, into one byte buffer: chunk c is text[starts[c] .. starts[c + 1]). Each work-item
// merges its chunk exactly as the Python loop of netcl_lite/text/byte_pair.py does: among the
// adjacent pairs that merge, the one of lowest priority merges first, the leftmost among
// equals, until no adjacent pair merges. Its ids go to out[starts[c] ..] (a chunk never has
// more ids than bytes) and their number to out[starts[n_chunks] + c], so one read brings both.
// A whole call can also come as its UTF-8 text (GPT-4's pattern, tiktoken's rule): the device
// splits it, merges each different chunk once and gathers the ids (the end of this file). A
// batch of documents comes as one text with the documents' byte offsets: the split restarts at
// each document's start, so no chunk, and hence no merge, crosses from one document into the next.
//
// Two rules say which pairs merge, and the tables for them are built on the device, once per
// tokenizer, and kept there (the kernels at the end of this file):
//
// * tiktoken's (listed = 0): two adjacent tokens merge when their bytes, joined, are a token;
//   the priority is that token's rank, which is also its id. The table is an index of the
//   tokens by their bytes: an open-addressed hash of 2^k slots (at most half full), slot =
//   (id, h) with h a polynomial hash of the token's bytes. The work-item keeps each of its
//   tokens' hash and length, so the hash of two joined tokens costs one multiply-add; a probe
//   that finds the same hash and length then compares the bytes, so a hash collision can cost
//   time but never a wrong id.
// * a merge list's (listed = 1, Hugging Face's tokenizer.json): only the listed pairs merge,
//   earliest first. The table is an open-addressed hash from (left id, right id) to the
//   merge's position (its priority); merged_of[priority] is the merged id. Ids lie below
//   2^21 - 1 and priorities below 2^22 (the host checks), so a slot is 8 bytes, two words:
//   x = left << 21 | right (the low 32 bits),  y = left >> 11 | priority << 10.
//
// Empty slots are all ones in their first word. byte_pairs[256 * a + b] is the priority of the
// pair of bytes a, b (every chunk's first pairs come from this small table). Priority BPE_EMPTY:
// the pair never merges. Chunks longer than BPE_MAX_CHUNK bytes stay in Python (the host never
// sends them to bpe_merge_chunks; a longer one gets count 0, which merge() rejects and the
// whole-call gather hands back to the host). BPE_MAX_CHUNK is a build option.
//
// Kernels:
//   bpe_merge_chunks   one work-item per chunk: the merges, lowest priority first
//   bpe_index_tokens   (table build, tiktoken's rule) each token into the index by its bytes
//   bpe_listed_pairs   (table build, a merge list) the listed pairs, priority = position
//   bpe_byte_pairs     (table build) the priorities of the 65,536 byte pairs
//   bpe_encode_text    a whole call in one work-group: split, merges, gather (up to 64 KiB)
//   bpe_split_cl100k   the split alone, one work-item; it also sizes the table of the call's chunks
//                      (both split document by document: doc_starts[d] .. doc_starts[d + 1])
//   bpe_clear_seen,    a longer call's merges over many work-groups, between bpe_split_cl100k
//   bpe_merge_split,   and the gather
//   bpe_gather_ids

#ifndef BPE_MAX_CHUNK
#define BPE_MAX_CHUNK 256
#endif
#define BPE_EMPTY 0xffffffffu

// A token's bytes b[0 .. n) hash to sum of b[i] * P^(n-1-i) (mod 2^32), so the hash of two
// tokens joined is h(left) * P^n(right) + h(right). powers[k] = P^k for k = 0 .. BPE_MAX_CHUNK.
// The slot is this hash mixed with the length. netcl_lite/text/device_merge.py computes both
// in NumPy (uint32 arithmetic wraps).
#define BPE_P 0x01000193u

inline uint bpe_mix(uint h, const uint n)
{
    h ^= n * 0x9E3779B1u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    return h ^ (h >> 16);
}

// tiktoken's rule: the id of the token whose bytes are p[0 .. n) (hash h), or BPE_EMPTY.
inline uint bpe_find_token(__global const uint2 *index, const uint mask, __global const uchar *bytes,
                           __global const uint *offsets, const uint h, const uint n, __global const uchar *p)
{
    uint slot = bpe_mix(h, n) & mask;
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        const uint2 s = index[slot];
        if (s.x == BPE_EMPTY) break;
        if (s.y != h) continue;
        const uint start = offsets[s.x];
        if (offsets[s.x + 1] - start != n) continue;
        uint same = 1;
        for (uint i = 0; i < n && same; ++i) same = bytes[start + i] == p[i];
        if (same) return s.x;
    }
    return BPE_EMPTY;
}

// A merge list: the slot a pair's probe starts at, a multiplicative hash of both ids, its top bits.
inline uint bpe_home(const uint left, const uint right, const uint shift)
{
    uint h = left * 0x9E3779B1u ^ right * 0x85EBCA77u;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    return h >> shift;
}

// A merge list: the priority of the pair, or BPE_EMPTY when it never merges.
inline uint bpe_lookup(__global const uint2 *table, const uint shift, const uint left, const uint right)
{
    const uint mask = 0xffffffffu >> shift, x = left << 21 | right, high = left >> 11;
    uint slot = bpe_home(left, right, shift);
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        const uint2 s = table[slot];
        if (s.x == x && (s.y & 0x3ffu) == high) return s.y >> 10;
        if (s.x == BPE_EMPTY) break;
    }
    return BPE_EMPTY;
}


// --8<-- [start:bpe_merge_chunks]
// One chunk's merges (for bpe_merge_chunks and the whole call). `whole` (tiktoken's rule): a
// chunk whose bytes are a token is that token, before any merge, as tiktoken encodes; merging by
// rank need not reach it in every vocabulary. bpe_merge_chunks leaves that to the host, whose
// cache holds every such chunk, and merges exactly as the Python loop does.
inline void bpe_merge_one(__global const uchar *text, __global const uint *starts, const uint n_chunks,
                          const uint c, __global const uint *byte_ids, __global const uint *byte_pairs,
                          const uint listed, const uint whole, __global const uint2 *index, const uint index_mask,
                          __global const uchar *bytes, __global const uint *offsets, __global const uint *powers,
                          __global const uint2 *table, const uint shift, __global const uint *merged_of,
                          __global uint *out)
{
    const uint start = starts[c], n = starts[c + 1] - start;
    __global uint *count = out + starts[n_chunks] + c;
    if (n == 0 || n > BPE_MAX_CHUNK) { *count = 0; return; }
    __global const uchar *chunk = text + start;
    if (whole && !listed) {
        uint h = 0;
        for (uint i = 0; i < n; ++i) h = h * BPE_P + chunk[i];
        const uint id = bpe_find_token(index, index_mask, bytes, offsets, h, n, chunk);
        if (id != BPE_EMPTY) { out[start] = id; *count = 1; return; }
    }
    // Token slots are indexed by the byte they start at: the token at slot i covers bytes
    // i .. i + size[i), the next token is at slot i + size[i], and prev[i] is the one before. A
    // merge joins slot `at` with the next; nothing moves, so a merge costs one walk over the live
    // tokens to find the lowest priority, and two probes for the new token's pairs.
    uint ids[BPE_MAX_CHUNK];     // ids[i]: the id of the token at slot i
    uint rank[BPE_MAX_CHUNK];    // rank[i]: priority of the pair (token at i, the next token)
    uint hash[BPE_MAX_CHUNK];    // tiktoken's rule: each token's hash (its bytes: chunk + i, size[i])
    ushort size[BPE_MAX_CHUNK], prev[BPE_MAX_CHUNK];
    for (uint i = 0; i < n; ++i) {
        ids[i] = byte_ids[chunk[i]]; hash[i] = chunk[i]; size[i] = 1; prev[i] = (ushort)(i - 1);
        rank[i] = i + 1 < n ? byte_pairs[(uint)chunk[i] * 256u + chunk[i + 1]] : BPE_EMPTY;
    }
    for (;;) {
        uint best = BPE_EMPTY, at = 0;
        for (uint i = 0; i < n; i += size[i])       // the leftmost pair of the lowest priority
            if (rank[i] < best) { best = rank[i]; at = i; }
        if (best == BPE_EMPTY) break;               // no adjacent pair merges: done
        const uint right = at + size[at];           // merge the tokens at `at` and `right`
        ids[at] = listed ? merged_of[best] : best;
        hash[at] = hash[at] * powers[size[right]] + hash[right];
        size[at] += size[right];
        const uint next = at + size[at];
        if (next < n) {                             // the pair starting with the new token
            prev[next] = (ushort)at;
            rank[at] = listed ? bpe_lookup(table, shift, ids[at], ids[next])
                : bpe_find_token(index, index_mask, bytes, offsets, hash[at] * powers[size[next]] + hash[next],
                                 size[at] + size[next], chunk + at);
        } else {
            rank[at] = BPE_EMPTY;
        }
        if (at > 0) {                               // the pair ending in it
            const uint before = prev[at];
            rank[before] = listed ? bpe_lookup(table, shift, ids[before], ids[at])
                : bpe_find_token(index, index_mask, bytes, offsets, hash[before] * powers[size[at]] + hash[at],
                                 size[before] + size[at], chunk + before);
        }
    }
    uint len = 0;
    for (uint i = 0; i < n; i += size[i]) out[start + len++] = ids[i];
    *count = len;
}

__kernel void bpe_merge_chunks(__global const uchar *text, __global const uint *starts, const uint n_chunks,
                               __global const uint *byte_ids, __global const uint *byte_pairs, const uint listed,
                               __global const uint2 *index, const uint index_mask,       // tiktoken's rule
                               __global const uchar *bytes, __global const uint *offsets,
                               __global const uint *powers,
                               __global const uint2 *table, const uint shift,            // a merge list
                               __global const uint *merged_of, __global uint *out)
{
    const uint c = get_global_id(0);
    if (c >= n_chunks) return;
    bpe_merge_one(text, starts, n_chunks, c, byte_ids, byte_pairs, listed, 0, index, index_mask, bytes, offsets,
                  powers, table, shift, merged_of, out);
}
// --8<-- [end:bpe_merge_chunks]

// ---- building the tables (once per tokenizer) ----------------------------------------------
//
// tiktoken's rule: the tokens' bytes are packed like the chunks (token t is
// bytes[offsets[t] .. offsets[t + 1])), and bpe_index_tokens puts each into the index. A merge
// list is inserted as it is by bpe_listed_pairs, priority = its position. Each slot is claimed
// with atomic_cmpxchg on its first word, so inserts in any order build a valid table; the host
// fills the tables with BPE_EMPTY first, and checks the count of inserts. bpe_byte_pairs then
// fills the byte-pair table from the finished table, under either rule.

__kernel void bpe_index_tokens(__global const uchar *bytes, __global const uint *offsets, const uint n_tokens,
                               volatile __global uint *index, const uint mask, volatile __global uint *inserted)
{
    const uint t = get_global_id(0);
    if (t >= n_tokens) return;
    const uint start = offsets[t], n = offsets[t + 1] - start;
    uint h = 0;
    for (uint i = 0; i < n; ++i) h = h * BPE_P + bytes[start + i];
    uint slot = bpe_mix(h, n) & mask;
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        if (atomic_cmpxchg(&index[2 * slot], BPE_EMPTY, t) == BPE_EMPTY) {   // claimed: fill it
            index[2 * slot + 1] = h;
            atomic_inc(inserted);
            return;
        }
    }
}

__kernel void bpe_listed_pairs(__global const uint *merges, const uint n_merges, volatile __global uint *table,
                               const uint shift, volatile __global uint *inserted)
{
    const uint k = get_global_id(0);     // merges[3k .. 3k + 3) = (left, right, merged), earliest first
    if (k >= n_merges) return;
    const uint left = merges[3 * k], right = merges[3 * k + 1], mask = 0xffffffffu >> shift, x = left << 21 | right;
    uint slot = bpe_home(left, right, shift);
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        if (atomic_cmpxchg(&table[2 * slot], BPE_EMPTY, x) == BPE_EMPTY) {
            table[2 * slot + 1] = left >> 11 | k << 10;
            atomic_inc(inserted);
            return;
        }
    }
}

// pair_bytes: the 65,536 pairs of bytes, two bytes each (a, b at 2 * (256 * a + b)).
__kernel void bpe_byte_pairs(__global const uint *byte_ids, const uint listed,
                             __global const uint2 *index, const uint index_mask, __global const uchar *bytes,
                             __global const uint *offsets, __global const uchar *pair_bytes,
                             __global const uint2 *table, const uint shift, __global uint *byte_pairs)
{
    const uint ab = get_global_id(0);
    if (ab >= 65536u) return;
    const uint a = ab >> 8, b = ab & 255u;
    byte_pairs[ab] = listed ? bpe_lookup(table, shift, byte_ids[a], byte_ids[b])
        : bpe_find_token(index, index_mask, bytes, offsets, a * BPE_P + b, 2, pair_bytes + 2 * ab);
}

// ---- a whole call on the device: split, merge, gather (cl100k's pattern) -------------------
//
// bpe_split_cl100k cuts UTF-8 text exactly as GPT-4's pattern (netcl_lite/text/patterns.py)
// does, in one work-item that walks the text once; bpe_merge_split merges the chunks it found
// (a loop over chunks, so the launch needs no count from the host); bpe_gather_ids packs the
// ids in order. classes[cp] describes code point cp as the regex package reads it: bit 0 a
// letter (\p{L}), bit 1 a number (\p{N}), bit 2 whitespace (\s), bits 3..6 which letter of a
// contraction it matches case-insensitively (1..8: s d m t l v r e; 0: none).

#define BPE_L 1u
#define BPE_N 2u
#define BPE_S 4u

// The code point at p (the host passes valid UTF-8: Python's str.encode) and its length.
inline uint bpe_decode(__global const uchar *t, const uint p, uint *len)
{
    const uint b = t[p];
    if (b < 0x80u) { *len = 1; return b; }
    if (b < 0xE0u) { *len = 2; return (b & 0x1Fu) << 6 | (t[p + 1] & 0x3Fu); }
    if (b < 0xF0u) { *len = 3; return (b & 0x0Fu) << 12 | (t[p + 1] & 0x3Fu) << 6 | (t[p + 2] & 0x3Fu); }
    *len = 4;
    return (b & 0x07u) << 18 | (t[p + 1] & 0x3Fu) << 12 | (t[p + 2] & 0x3Fu) << 6 | (t[p + 3] & 0x3Fu);
}

// The end of the run of code points from p whose class, masked with `mask`, equals `want`.
inline uint bpe_run(__global const uchar *t, uint p, const uint n, __global const uchar *classes,
                    const uint mask, const uint want)
{
    while (p < n) {
        uint len;
        if ((classes[bpe_decode(t, p, &len)] & mask) != want) break;
        p += len;
    }
    return p;
}

// --8<-- [start:bpe_split]
// GPT-4's pattern, alternative by alternative, first match wins:
//   '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}++ | \p{N}{1,3}+ | ' '?[^\s\p{L}\p{N}]++[\r\n]*+
//   | \s++$ | \s*[\r\n] | \s+(?!\S) | \s
// Some alternative matches at every position, so the chunks cover the text. One document:
// t[begin .. n), its end the text's end for the pattern ($, lookahead); the chunks' starts go
// to starts[count ..], and the new count comes back.
inline uint bpe_split(__global const uchar *t, const uint begin, const uint n, __global const uchar *classes,
                      __global uint *starts, uint count)
{
    uint i = begin;
    while (i < n) {
        starts[count++] = i;
        uint l0, l1, l2;
        const uint c0 = bpe_decode(t, i, &l0), k0 = classes[c0];
        const uint c1 = i + l0 < n ? bpe_decode(t, i + l0, &l1) : 0u, k1 = i + l0 < n ? classes[c1] : 0u;
        if (c0 == '\'' && i + 1 < n) {                             // contractions
            const uint x = k1 >> 3 & 15u;
            if (x >= 1 && x <= 4) { i += 1 + l1; continue; }       // 's 'd 'm 't
            if (x >= 5 && x <= 7 && i + 1 + l1 < n) {
                const uint y = classes[bpe_decode(t, i + 1 + l1, &l2)] >> 3 & 15u;
                if ((x == 5 && y == 5) || (x > 5 && y == 8)) { i += 1 + l1 + l2; continue; }   // 'll 've 're
            }
        }
        if (k0 & BPE_L) { i = bpe_run(t, i, n, classes, BPE_L, BPE_L); continue; }
        if (c0 != '\r' && c0 != '\n' && !(k0 & BPE_N) && (k1 & BPE_L)) {   // one non-letter, then letters
            i = bpe_run(t, i + l0, n, classes, BPE_L, BPE_L);
            continue;
        }
        if (k0 & BPE_N) {                                          // one to three digits
            i += l0;
            for (uint d = 1; d < 3 && i < n; ++d) {
                uint len;
                if (!(classes[bpe_decode(t, i, &len)] & BPE_N)) break;
                i += len;
            }
            continue;
        }
        const uint j = c0 == ' ' ? i + 1 : i;                      // an optional space, then symbols
        if (j < n) {
            uint lj;
            if (!(classes[bpe_decode(t, j, &lj)] & (BPE_L | BPE_N | BPE_S))) {
                i = bpe_run(t, j, n, classes, BPE_L | BPE_N | BPE_S, 0);
                while (i < n && (t[i] == '\r' || t[i] == '\n')) ++i;
                continue;
            }
        }
        // whitespace: the run [i, w), the start of its last code point, its last \r or \n
        uint w = i, last = i, newline = n;
        while (w < n) {
            uint len;
            const uint c = bpe_decode(t, w, &len);
            if (!(classes[c] & BPE_S)) break;
            if (c == '\r' || c == '\n') newline = w;
            last = w;
            w += len;
        }
        if (w == n) i = n;                                         // \s++$
        else if (newline != n) i = newline + 1;                    // \s*[\r\n]
        else if (last > i) i = last;                               // \s+(?!\S)
        else i += l0;                                              // \s
    }
    return count;
}
// --8<-- [end:bpe_split]

// Every document in turn: docs[d] is the number of document d's first chunk, docs[n_docs] the
// number of chunks, which comes back; starts[count] is the end of the text.
inline uint bpe_split_docs(__global const uchar *t, __global const uint *doc_starts, const uint n_docs,
                           __global const uchar *classes, __global uint *starts, __global uint *docs)
{
    uint count = 0;
    for (uint d = 0; d < n_docs; ++d) {
        docs[d] = count;
        count = bpe_split(t, doc_starts[d], doc_starts[d + 1], classes, starts, count);
    }
    docs[n_docs] = count;
    starts[count] = doc_starts[n_docs];
    return count;
}

// The slots of `seen` for `count` chunks: the smallest power of two at least twice the count.
inline uint bpe_seen_mask(const uint count)
{
    uint size = 2;
    while (size < 2 * count) size <<= 1;
    return size - 1;
}

// The splitter alone: starts[0 .. n_chunks] (DeviceMerger.split_text), docs as bpe_split_docs.
__kernel void bpe_split_cl100k(__global const uchar *t, __global const uint *doc_starts, const uint n_docs,
                               __global const uchar *classes, __global uint *starts, __global uint *docs,
                               __global uint *head)
{
    if (get_global_id(0) != 0) return;
    head[0] = bpe_split_docs(t, doc_starts, n_docs, classes, starts, docs);   // the chunks, and the mask of `seen`
    head[1] = bpe_seen_mask(head[0]);
}

// A call repeats its chunks (a text of 165,459 chunks held 26,599 different ones), so each
// chunk first claims its bytes in `seen`, an open-addressed table of chunk numbers (2^k slots,
// at least twice the chunks, all ones when empty, keyed by the chunk's hash). The first chunk
// to claim a slot merges; a chunk that finds the same bytes there leaves BPE_SAME | that
// chunk's number as its count, and the gather copies that chunk's ids. Equal chunks probe the
// same slots in the same order, so exactly one of them claims one.
#define BPE_SAME 0x80000000u

inline uint bpe_claim(__global const uchar *text, __global const uint *starts, const uint c,
                      volatile __global uint *seen, const uint mask)
{
    const uint start = starts[c], n = starts[c + 1] - start;
    uint h = 0;
    for (uint i = 0; i < n; ++i) h = h * BPE_P + text[start + i];
    uint slot = bpe_mix(h, n) & mask;
    for (uint probe = 0; probe <= mask; ++probe, slot = (slot + 1) & mask) {
        const uint other = atomic_cmpxchg(&seen[slot], BPE_EMPTY, c);
        if (other == BPE_EMPTY) return c;                       // the first: it merges
        const uint at = starts[other];
        if (starts[other + 1] - at != n) continue;
        uint same = 1;
        for (uint i = 0; i < n && same; ++i) same = text[at + i] == text[start + i];
        if (same) return other;
    }
    return c;                                                   // a full table (never: 2x the chunks)
}

// One chunk of a whole call: claimed, then merged, or pointed at the chunk that merges its bytes.
inline void bpe_dedup_merge(__global const uchar *text, __global const uint *starts, const uint n_chunks,
                            const uint c, volatile __global uint *seen, const uint mask,
                            __global const uint *byte_ids, __global const uint *byte_pairs,
                            __global const uint2 *index, const uint index_mask, __global const uchar *bytes,
                            __global const uint *offsets, __global const uint *powers, __global uint *out)
{
    const uint first = bpe_claim(text, starts, c, seen, mask);
    if (first != c) { out[starts[n_chunks] + c] = BPE_SAME | first; return; }
    bpe_merge_one(text, starts, n_chunks, c, byte_ids, byte_pairs, 0, 1, index, index_mask, bytes, offsets,
                  powers, index, 0, byte_ids, out);   // tiktoken's rule: a merge list's tables are not read
}

// The long-text path, after bpe_split_cl100k: `head` = (the chunks, the mask of `seen`).
__kernel void bpe_clear_seen(__global const uint *head, __global uint *seen)
{
    const uint mask = head[1];
    for (uint i = get_global_id(0); i <= mask; i += get_global_size(0)) seen[i] = BPE_EMPTY;
}

// Work-item g takes chunks g, g + G, ... (G work-items).
__kernel void bpe_merge_split(__global const uchar *text, __global const uint *starts,
                              __global const uint *head, volatile __global uint *seen,
                              __global const uint *byte_ids, __global const uint *byte_pairs,
                              __global const uint2 *index, const uint index_mask, __global const uchar *bytes,
                              __global const uint *offsets, __global const uint *powers, __global uint *out)
{
    const uint n_chunks = head[0], mask = head[1];
    for (uint c = get_global_id(0); c < n_chunks; c += get_global_size(0))
        bpe_dedup_merge(text, starts, n_chunks, c, seen, mask, byte_ids, byte_pairs, index, index_mask, bytes,
                        offsets, powers, out);
}

// Every chunk's ids, in order, into result[2 ..]; a chunk too long for the kernel (count 0) leaves
// one BPE_EMPTY in its place and its byte range in longs[2 k], longs[2 k + 1]. result[0]: the
// number of ids, result[1]: of long chunks. docs (each document's first chunk, from the split)
// becomes each document's first id, docs[n_docs] the number of ids: docs[d + 1] is read before
// docs[d] is written.
inline void bpe_gather(__global const uint *starts, const uint n_chunks, __global const uint *out,
                       __global uint *result, __global uint *longs, const uint n_docs, __global uint *docs)
{
    __global const uint *counts = out + starts[n_chunks];
    __global uint *ids = result + 2;
    uint k = 0, n_long = 0, c = 0;
    for (uint d = 0; d < n_docs; ++d) {
        const uint end = docs[d + 1];
        docs[d] = k;
        for (; c < end; ++c) {
            const uint own = counts[c], from = own & BPE_SAME ? own & ~BPE_SAME : c;   // who merged its bytes
            const uint start = starts[from], count = counts[from];
            if (count == 0) {
                ids[k++] = BPE_EMPTY;
                longs[2 * n_long] = starts[c];
                longs[2 * n_long + 1] = starts[c + 1];
                ++n_long;
            }
            for (uint j = 0; j < count; ++j) ids[k++] = out[start + j];
        }
    }
    docs[n_docs] = k;
    result[0] = k;
    result[1] = n_long;
}

// The steps after the split as kernels of their own: a long text, whose merges fill many work-groups.

__kernel void bpe_gather_ids(__global const uint *starts, __global const uint *head,
                             __global const uint *out, __global uint *result, __global uint *longs,
                             const uint n_docs, __global uint *docs)
{
    if (get_global_id(0) == 0) bpe_gather(starts, head[0], out, result, longs, n_docs, docs);
}

// --8<-- [start:bpe_encode_text]
// All three in one work-group, one launch: a short text, where a launch costs more than its merges.
__kernel void bpe_encode_text(__global const uchar *text, __global const uint *doc_starts, const uint n_docs,
                              __global const uchar *classes, __global uint *starts, __global uint *docs,
                              volatile __global uint *seen,
                              __global const uint *byte_ids, __global const uint *byte_pairs,
                              __global const uint2 *index, const uint index_mask, __global const uchar *bytes,
                              __global const uint *offsets, __global const uint *powers,
                              __global uint *out, __global uint *result, __global uint *longs)
{
    __local uint n_chunks;
    const uint lid = get_local_id(0), size = get_local_size(0);
    if (lid == 0) n_chunks = bpe_split_docs(text, doc_starts, n_docs, classes, starts, docs);   // 1. split
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    const uint count = n_chunks, mask = bpe_seen_mask(count);
    for (uint i = lid; i <= mask; i += size) seen[i] = BPE_EMPTY;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint c = lid; c < count; c += size)                          // 2. merge, each chunk's bytes once
        bpe_dedup_merge(text, starts, count, c, seen, mask, byte_ids, byte_pairs, index, index_mask, bytes,
                        offsets, powers, out);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) bpe_gather(starts, count, out, result, longs, n_docs, docs);   // 3. gather the ids in order
}
// --8<-- [end:bpe_encode_text]
