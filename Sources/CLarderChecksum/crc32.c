// CRC-32 by carry-less multiplication: the folding method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for zlib's
// reflected polynomial. Each constant is x^n mod P for the distance the fold covers, bit-reflected
// and shifted as the method requires (x^(d+32) and x^(d-32) for a fold over d bits). Buffers of
// 16 bytes or more are folded in 128-bit lanes, or in 512-bit registers (VPCLMULQDQ) from 256
// bytes where the processor has them; buffers under 16 bytes and the tail: table lookups, 8 bytes
// at a time. docs/FORMAT.md's vectors and the comparison with a bit-by-bit CRC at every length to
// 1,100 and every alignment in Tests/LarderTests/Support/ChecksumTests.swift, with and without
// the 512-bit registers, check every path.
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
#undef LARDER_FOLD
#endif

/// Eight tables of 256 entries for the byte-wise rest: `tables[0]` is the classic table of the
/// reflected polynomial 0xEDB88320, `tables[k][b]` the register after byte `b` and `k` zero bytes.
/// Filled once at load time, before any thread can call in.
static uint32_t tables[8][256];

#if defined(__x86_64__)
/// Whether the processor folds with 512-bit registers (`fold_vpclmul`): set with the tables.
static int has_vpclmul;
#endif

__attribute__((constructor)) static void fill_tables(void) {
#if defined(__x86_64__)
    has_vpclmul = __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
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

/// `larder_crc32`, folding with 512-bit registers where `wide` and the processor allow.
static uint32_t checksum(uint32_t crc, const void *buffer, size_t length, int wide) {
    const uint8_t *p = (const uint8_t *)buffer;
#if defined(__x86_64__)
    // __builtin_cpu_supports reads flags the runtime set at start-up: no lazy state to race on.
    if (length >= 16 && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        size_t bulk = length & ~(size_t)15;
        // zlib's CRC inverts the register before and after; the fold works on the raw register.
        if (wide && bulk >= 256 && has_vpclmul) {
            crc = ~fold_vpclmul(~crc, p, bulk);
        } else {
            crc = ~fold_pclmul(~crc, p, bulk);
        }
        p += bulk;
        length -= bulk;
    }
#else
    (void)wide;
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

uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length) { return checksum(crc, buffer, length, 1); }

uint32_t larder_crc32_narrow(uint32_t crc, const void *buffer, size_t length) { return checksum(crc, buffer, length, 0); }
