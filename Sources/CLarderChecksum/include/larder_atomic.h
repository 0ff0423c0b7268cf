#ifndef LARDER_ATOMIC_H
#define LARDER_ATOMIC_H

#include <stdint.h>

/// Atomics on a 64-bit word that Swift's `Atomic` cannot reach: one in memory mapped from a file
/// (`MAP_SHARED`) that several processes share, such as the change counter of a folder's change
/// log. `word` must be 8-byte aligned. Lock-free on every platform Larder builds for.

/// The word's value, with acquire ordering: what its writer wrote before its last release is
/// visible after this load.
static inline uint64_t larder_atomic_load_acquire_u64(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/// Adds one to the word with release ordering (and acquire, for the value returned), unless it
/// holds `UINT64_MAX`, which it then keeps: what the caller wrote before is visible to a reader
/// whose acquire load sees the sum. Returns the value before.
static inline uint64_t larder_atomic_increment_unless_max_u64(uint64_t *word) {
    uint64_t seen = __atomic_load_n(word, __ATOMIC_RELAXED);
    while (seen != UINT64_MAX
           && !__atomic_compare_exchange_n(word, &seen, seen + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
    return seen;
}

#endif
