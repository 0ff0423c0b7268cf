// CRC-32 by carry-less multiplication: the folding method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for zlib's
// reflected polynomial. Each constant is x^n mod P for the distance the fold covers, bit-reflected
// and shifted as the method requires; docs/FORMAT.md's vectors and the randomized comparison with
// zlib in Tests/LarderTests/Support/ChecksumTests.swift check the result.
#include "CLarderChecksum.h"
#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define LARDER_FOLD(x, k, data) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data)

/// The raw CRC register (no inversions) after `length` bytes; `length` is at least 64 and a
/// multiple of 16.
__attribute__((target("pclmul,sse4.1")))
static uint32_t fold_pclmul(uint32_t crc, const uint8_t *p, size_t length) {
    const __m128i fold512 = _mm_set_epi64x(0x00000001c6e41596ULL, 0x0000000154442bd4ULL);
    const __m128i fold128 = _mm_set_epi64x(0x00000000ccaa009eULL, 0x00000001751997d0ULL);
    const __m128i fold64 = _mm_set_epi64x(0, 0x0000000163cd6124ULL);
    const __m128i barrett = _mm_set_epi64x(0x00000001f7011641ULL, 0x00000001db710641ULL);
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);

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
#undef LARDER_FOLD
#endif

uint32_t larder_crc32(uint32_t crc, const void *buffer, size_t length) {
    const uint8_t *p = (const uint8_t *)buffer;
#if defined(__x86_64__)
    // __builtin_cpu_supports reads flags the runtime set at start-up: no lazy state to race on.
    if (length >= 64 && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        size_t bulk = length & ~(size_t)15;
        // zlib's CRC inverts the register before and after; the fold works on the raw register.
        crc = ~fold_pclmul(~crc, p, bulk);
        p += bulk;
        length -= bulk;
    }
#endif
    while (length > 0) {
        uInt chunk = length > 0x40000000 ? 0x40000000 : (uInt)length;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        length -= chunk;
    }
    return crc;
}
