// CRC-32 by carry-less multiplication: the folding method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for zlib's
// reflected polynomial. Each constant is x^n mod P for the distance the fold covers, bit-reflected
// and shifted as the method requires (x^(d+32) and x^(d-32) for a fold over d bits). Buffers of
// 16 bytes or more are folded in 128-bit lanes, or in wider registers (VPCLMULQDQ) where the
// processor has them: 512-bit ones (with AVX-512) from 256 bytes, 256-bit ones (with AVX2) from
// 128 bytes; buffers under 16 bytes and the tail: table lookups, 8 bytes at a time.
// docs/FORMAT.md's vectors and the comparison with a bit-by-bit CRC at every length to 1,100 and
// every alignment in Tests/LarderTests/Support/ChecksumTests.swift, folding at most 128, 256 and
// 512 bits at a time, check every path the processor has.
#include "CLarderChecksum.h"
#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define LARDER_FOLD(x, k, data) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data)

/// The raw CRC register after the 16-byte blocks left from `p` (`length` a multiple of 16),
/// folded into the running 128-bit remainder `x0`, reduced to 32 bits.
__attribute__((target("pclmul,sse4.1")))
static uint32_t finish_pclmul(__m128i x0, const uint8_t *p, size_t length) {
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);
    const __m128i fold64 = _mm_set_epi64x(0, 0x0000000163cd6124ULL);
    const __m128i barrett = _mm_set_epi64x(0x00000001f7011641ULL, 0x00000001db710641ULL);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    while (length >= 16) {
        x0 = LARDER_FOLD(x0, fold128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        length -= 16;
    }
    // 128 bits to 96, 96 to 64, then Barrett reduction to the 32-bit remainder.
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, fold128, 0x10), _mm_srli_si128(x0, 8));
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, low32), fold64, 0x00), _mm_srli_si128(x0, 4));
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x0), 1);
}

/// The raw CRC register (no inversions) after `length` bytes; `length` is at least 16 and a
/// multiple of 16. Below 64 bytes (a record's header), one lane: a few carry-less
/// multiplications in place of the table lookups, whose 8 KiB a read's system calls have
/// usually pushed out of the processor's first cache.
__attribute__((target("pclmul,sse4.1")))
static uint32_t fold_pclmul(uint32_t crc, const uint8_t *p, size_t length) {
    const __m128i fold512 = _mm_set_epi64x(0x00000001c6e41596ULL, 0x0000000154442bd4ULL);
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);
    if (length < 64) {
        return finish_pclmul(_mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc)), p + 16, length - 16);
    }

    // Four lanes of 128 bits, folded forward 512 bits at a time.
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    length -= 64;
    while (length >= 64) {
        x0 = LARDER_FOLD(x0, fold512, _mm_loadu_si128((const __m128i *)p));
        x1 = LARDER_FOLD(x1, fold512, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = LARDER_FOLD(x2, fold512, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = LARDER_FOLD(x3, fold512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        length -= 64;
    }
    // The four lanes into one, then the remaining 16-byte blocks.
    x0 = LARDER_FOLD(x0, fold128, x1);
    x0 = LARDER_FOLD(x0, fold128, x2);
    x0 = LARDER_FOLD(x0, fold128, x3);
    return finish_pclmul(x0, p, length);
}

#define LARDER_FOLD512(x, k, data) \
    _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), data, 0x96)

/// `fold_pclmul` with 512-bit registers (VPCLMULQDQ): four registers of four 128-bit lanes,
/// folded forward 2,048 bits (256 bytes) at a time, four times the bytes a step of the 128-bit
/// loop takes. `length` is at least 256 and a multiple of 16.
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
static uint32_t fold_vpclmul(uint32_t crc, const uint8_t *p, size_t length) {
    // Each 128-bit lane folds by the same distance, so each constant pair is repeated per lane.
    const __m512i fold2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x00000001322d1430ULL, 0x000000011542778aULL));
    const __m512i fold512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x00000001c6e41596ULL, 0x0000000154442bd4ULL));
    const __m128i fold384 = _mm_set_epi64x(0x0000000174359406ULL, 0x000000003db1ecdcULL);
    const __m128i fold256 = _mm_set_epi64x(0x000000015a546366ULL, 0x00000000f1da05aaULL);
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);

    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    p += 256;
    length -= 256;
    while (length >= 256) {
        x0 = LARDER_FOLD512(x0, fold2048, _mm512_loadu_si512((const void *)p));
        x1 = LARDER_FOLD512(x1, fold2048, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = LARDER_FOLD512(x2, fold2048, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = LARDER_FOLD512(x3, fold2048, _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        length -= 256;
    }
    // The four registers into one, then the remaining 64-byte blocks.
    x0 = LARDER_FOLD512(x0, fold512, x1);
    x0 = LARDER_FOLD512(x0, fold512, x2);
    x0 = LARDER_FOLD512(x0, fold512, x3);
    while (length >= 64) {
        x0 = LARDER_FOLD512(x0, fold512, _mm512_loadu_si512((const void *)p));
        p += 64;
        length -= 64;
    }
    // The register's four lanes into one: each folded forward by its distance from the last.
    __m128i y = _mm512_extracti32x4_epi32(x0, 3);
    y = LARDER_FOLD(_mm512_extracti32x4_epi32(x0, 0), fold384, y);
    y = _mm_xor_si128(y, LARDER_FOLD(_mm512_extracti32x4_epi32(x0, 1), fold256, _mm_setzero_si128()));
    y = _mm_xor_si128(y, LARDER_FOLD(_mm512_extracti32x4_epi32(x0, 2), fold128, _mm_setzero_si128()));
    return finish_pclmul(y, p, length);
}
#undef LARDER_FOLD512

#define LARDER_FOLD256(x, k, data) \
    _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00), _mm256_clmulepi64_epi128(x, k, 0x11)), data)

/// `fold_pclmul` with 256-bit registers (VPCLMULQDQ with AVX2, for processors that have it
/// without AVX-512): four registers of two 128-bit lanes, folded forward 1,024 bits (128 bytes)
/// at a time, twice the bytes a step of the 128-bit loop takes. `length` is at least 128 and a
/// multiple of 16.
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1")))
static uint32_t fold_vpclmul256(uint32_t crc, const uint8_t *p, size_t length) {
    // Each 128-bit lane folds by the same distance, so each constant pair is repeated per lane.
    const __m256i fold1024 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x000000014a7fe880ULL, 0x00000001e88ef372ULL));
    const __m256i fold256 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x000000015a546366ULL, 0x00000000f1da05aaULL));
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);

    __m256i x0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)crc)));
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + 32));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(p + 64));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(p + 96));
    p += 128;
    length -= 128;
    while (length >= 128) {
        x0 = LARDER_FOLD256(x0, fold1024, _mm256_loadu_si256((const __m256i *)p));
        x1 = LARDER_FOLD256(x1, fold1024, _mm256_loadu_si256((const __m256i *)(p + 32)));
        x2 = LARDER_FOLD256(x2, fold1024, _mm256_loadu_si256((const __m256i *)(p + 64)));
        x3 = LARDER_FOLD256(x3, fold1024, _mm256_loadu_si256((const __m256i *)(p + 96)));
        p += 128;
        length -= 128;
    }
    // The four registers into one, then the remaining 32-byte blocks.
    x0 = LARDER_FOLD256(x0, fold256, x1);
    x0 = LARDER_FOLD256(x0, fold256, x2);
    x0 = LARDER_FOLD256(x0, fold256, x3);
    while (length >= 32) {
        x0 = LARDER_FOLD256(x0, fold256, _mm256_loadu_si256((const __m256i *)p));
        p += 32;
        length -= 32;
    }
    // The register's low lane folded forward onto its high one, then the remaining 16-byte block.
    __m128i y = LARDER_FOLD(_mm256_castsi256_si128(x0), fold128, _mm256_extracti128_si256(x0, 1));
    return finish_pclmul(y, p, length);
}
#undef LARDER_FOLD256
#undef LARDER_FOLD
#endif

/// Eight tables of 256 entries for the byte-wise rest: `tables[0]` is the classic table of the
/// reflected polynomial 0xEDB88320, `tables[k][b]` the register after byte `b` and `k` zero bytes.
/// Filled once at load time, before any thread can call in.
static uint32_t tables[8][256];

#if defined(__x86_64__)
/// The widest registers the processor folds with, in bits: 512 (`fold_vpclmul`), 256
/// (`fold_vpclmul256`), 128 (`fold_pclmul`), or 0 without carry-less multiplication. Set with
/// the tables.
static int widest_fold;
#endif

__attribute__((constructor)) static void fill_tables(void) {
#if defined(__x86_64__)
    // Constructors may run before the compiler runtime's own: read the processor's flags first.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        widest_fold = 128;
        if (__builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2")) widest_fold = 256;
        if (widest_fold == 256 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) widest_fold = 512;
    }
#endif
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int i = 0; i < 8; i++) r = (r >> 1) ^ (0xEDB88320u & (0u - (r & 1)));
        tables[0][b] = r;
    }
    for (uint32_t b = 0; b < 256; b++) {
        for (int k = 1; k < 8; k++) tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFF];
    }
}

/// The raw register (no inversions) after `length` bytes, eight at a time ("slicing by 8": eight
/// independent table lookups per word instead of a chain of eight), then one at a time. The ends of
/// buffers are short, and zlib's own loop takes them a byte at a time.
static uint32_t sliced(uint32_t crc, const uint8_t *p, size_t length) {
    while (length >= 8) {
        uint32_t low = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t high = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = tables[7][low & 0xFF] ^ tables[6][(low >> 8) & 0xFF] ^ tables[5][(low >> 16) & 0xFF] ^ tables[4][low >> 24] ^
              tables[3][high & 0xFF] ^ tables[2][(high >> 8) & 0xFF] ^ tables[1][(high >> 16) & 0xFF] ^ tables[0][high >> 24];
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xFF];
        length--;
    }
    return crc;
}

/// `larder_crc32`, folding with registers of at most `widest` bits (512, 256 or 128) where the
/// processor has them.
static uint32_t checksum(uint32_t crc, const void *buffer, size_t length, int widest) {
    const uint8_t *p = (const uint8_t *)buffer;
#if defined(__x86_64__)
    // The flags were read once at load time, before any thread could call in: no lazy state.
    int width = widest < widest_fold ? widest : widest_fold;
    if (length >= 16 && width >= 128) {
        size_t bulk = length & ~(size_t)15;
        // zlib's CRC inverts the register before and after; the fold works on the raw register.
        if (width >= 512 && bulk >= 256) {
            crc = ~fold_vpclmul(~crc, p, bulk);
        } else if (width >= 256 && bulk >= 128) {
            crc = ~fold_vpclmul256(~crc, p, bulk);
        } else {
            crc = ~fold_pclmul(~crc, p, bulk);
        }
        p += bulk;
        length -= bulk;
    }
#else
    (void)widest;
#endif
    // Without carry-less multiplication, long inputs take zlib's braided loop, faster than eight
    // table lookups a word; short ones and the rest take the sliced loop.
    while (length >= 4096) {
        uInt chunk = length > 0x40000000 ? 0x40000000 : (uInt)length;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        length -= chunk;
    }
    return ~sliced(~crc, p, length);
}

uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length) { return checksum(crc, buffer, length, 512); }

uint32_t larder_crc32_folding(uint32_t crc, const void *buffer, size_t length, int widest) {
    return checksum(crc, buffer, length, widest);
}

int larder_crc32_widest_fold(void) {
#if defined(__x86_64__)
    return widest_fold;
#else
    return 0;
#endif
}
