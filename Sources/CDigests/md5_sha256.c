/*
 * md5_sha256.c - one-pass ("stitched") MD5 + SHA-256 using SHA-NI.
 *
 * See md5_sha256.h for the API.  Layout of this file:
 *   1. CPU feature detection (cpuid, cached in an atomic).
 *   2. The stitched block kernel: per 64-byte block, 16 SHA-256 quad-rounds
 *      (SHA-NI) each followed by 4 MD5 steps (RFC 1321).  The two
 *      computations are completely independent, so the out-of-order core
 *      overlaps SHA-NI (vector units) with MD5's serial integer chain.
 *   3. blobd_md5_sha256_update(): glue onto OpenSSL's MD5_CTX / SHA256_CTX.
 *
 * Assumptions: x86/x86-64 only (little-endian, unaligned loads are fine);
 * on other targets the kernel is compiled out and everything goes through
 * OpenSSL.  The file needs no -msha/-msse4.1: the kernel carries
 * __attribute__((target(...))) and is only called after a CPUID check.
 */
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include "md5_sha256.h"

#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define BLOBD_HAVE_SHANI_KERNEL 1
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#else
#define BLOBD_HAVE_SHANI_KERNEL 0
#endif

/* ------------------------------------------------------------------------ */
/* 1. CPU feature detection                                                 */
/* ------------------------------------------------------------------------ */

#if BLOBD_HAVE_SHANI_KERNEL
static int detect_sha_ni(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    /* CPUID.1:ECX bit 9 = SSSE3 (pshufb), bit 19 = SSE4.1 (pblendw). */
    if (!(ecx & (1u << 9)) || !(ecx & (1u << 19)))
        return 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return 0;
    /* CPUID.(EAX=7,ECX=0):EBX bit 29 = SHA extensions. */
    return (ebx & (1u << 29)) != 0;
}
#endif

int blobd_md5_sha256_available(void)
{
#if BLOBD_HAVE_SHANI_KERNEL
    /* -1 = not yet probed.  Racing threads compute the same value, so a
     * relaxed load/store is enough. */
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = detect_sha_ni();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------------------ */
/* 2. The stitched kernel                                                   */
/* ------------------------------------------------------------------------ */

#if BLOBD_HAVE_SHANI_KERNEL

/* SHA-256 round constants (FIPS 180-4), read-only. */
static const uint32_t K256[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* ---- MD5 (RFC 1321) ----------------------------------------------------
 * One step is  a = b + ROL(a + f(b,c,d) + X[k] + T[i], s).  b is the value
 * produced by the previous step, so everything that depends on b is the
 * critical path; everything else is computed off it first:
 *   t = a + X[k] + T[i]          (+ c & ~d for G)        -- off the path
 *   a = b + ROL(t + f, s)                                -- on the path
 * Boolean functions, arranged so the b-dependent part is short:
 *   F = d ^ (b & (c ^ d))
 *   G = (b & d) | (c & ~d)   the two terms are disjoint, so the OR becomes
 *                            two adds and only (b & d) is on the path
 *   H = b ^ (c ^ d)
 *   I = c ^ (b | ~d)
 * MD5_OPAQUE(t) (defined below) stops the compiler from re-associating the
 * constant T[i] to after the f() add: clang otherwise emits
 * ((a + X) + f) + T, one extra add on the critical path of every step. */
#define MD5_ROL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))

#define MD5_STEP(a, b, f_off, f_on, x, t, s)                            \
    do {                                                                \
        uint32_t t_ = (a) + (x) + (uint32_t)(t) + (f_off);              \
        MD5_OPAQUE(t_);                                                 \
        t_ += (f_on);                                                   \
        (a) = MD5_ROL(t_, s) + (b);                                     \
    } while (0)
#define MD5_F(a, b, c, d, x, t, s) MD5_STEP(a, b, 0, (d) ^ ((b) & ((c) ^ (d))), x, t, s)
#define MD5_G(a, b, c, d, x, t, s) MD5_STEP(a, b, (c) & ~(d), (b) & (d), x, t, s)
#define MD5_H(a, b, c, d, x, t, s) MD5_STEP(a, b, 0, (b) ^ ((c) ^ (d)), x, t, s)
#define MD5_I(a, b, c, d, x, t, s) MD5_STEP(a, b, 0, (c) ^ ((b) | ~(d)), x, t, s)

/* ---- SHA-256 with SHA-NI ------------------------------------------------
 * Standard Intel pattern.  State is kept as ABEF / CDGH in st0 / st1.
 * M0..M3 hold the current 16 message-schedule words, rotating.
 *
 * SHA_QR(m, i): rounds 4i..4i+3 using schedule vector m.
 * SHA_NEXT(mn, mc, mp): finish W[] for the vector after mc:
 *     mn += alignr(mc, mp, 4); mn = sha256msg2(mn, mc)
 * SHA_MSG1(mp, mc): mp = sha256msg1(mp, mc) (first half of a future W[]). */
#define SHA_QR(m, i)                                                      \
    do {                                                                  \
        __m128i wk_ = _mm_add_epi32((m),                                  \
            _mm_load_si128((const __m128i *)&K256[4 * (i)]));             \
        st1 = _mm_sha256rnds2_epu32(st1, st0, wk_);                       \
        wk_ = _mm_shuffle_epi32(wk_, 0x0E);                               \
        st0 = _mm_sha256rnds2_epu32(st0, st1, wk_);                       \
    } while (0)
#define SHA_NEXT(mn, mc, mp)                                              \
    do {                                                                  \
        (mn) = _mm_add_epi32((mn), _mm_alignr_epi8((mc), (mp), 4));       \
        (mn) = _mm_sha256msg2_epu32((mn), (mc));                          \
    } while (0)
#define SHA_MSG1(mp, mc) ((mp) = _mm_sha256msg1_epu32((mp), (mc)))

/* Two compiler-only hints; both are empty asm statements that emit no
 * instructions (GNU C; gcc and clang).  Without them clang 21 produced a
 * kernel barely faster than MD5 + SHA-256 back to back; gcc does fine
 * either way.
 *
 * MD5_OPAQUE(v): hides v's value from the optimiser, so the
 *   off-critical-path partial sum a + X[k] + T[i] is kept as one value
 *   (see the MD5 comment above).
 *
 * FENCE(): the SHA state and MD5 state pass through an empty asm, so the
 *   compiler must emit the preceding SHA quad-round and MD5 steps before
 *   starting the next group, i.e. it keeps the source interleaving.  The
 *   "memory" clobber also stops it from hoisting all 16 MD5 message-word
 *   loads to the top of the block (which causes spills).  Without it, clang
 *   sinks all 32 sha256rnds2 to the end of the block, where the out-of-order
 *   window is too small to overlap them with MD5.  The CPU still overlaps
 *   neighbouring groups freely; this only fixes the instruction order.
 *   Build with -DBLOBD_STITCH_FENCE=0 to disable (for experiments). */
#define MD5_OPAQUE(v) __asm__("" : "+r"(v))

#ifndef BLOBD_STITCH_FENCE
#define BLOBD_STITCH_FENCE 1
#endif
#if BLOBD_STITCH_FENCE
#define FENCE() __asm__ volatile("" : "+x"(st0), "+x"(st1), "+r"(a), "+r"(b), \
                                      "+r"(c), "+r"(d) : : "memory")
#else
#define FENCE() ((void)0)
#endif

/* Little-endian 32-bit load from a possibly unaligned pointer. */
static inline uint32_t load_le32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4); /* x86 is little-endian */
    return v;
}

/* Process nblocks whole 64-byte blocks: md5st = {A,B,C,D},
 * shast = {h0..h7} (OpenSSL's context words).  p may be unaligned. */
__attribute__((target("sha,sse4.1")))
static void md5_sha256_blocks(uint32_t md5st[4], uint32_t shast[8],
                              const unsigned char *p, size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
                                         0x0405060700010203ULL);
    __m128i st0, st1, tmp, save0, save1, M0, M1, M2, M3;
    uint32_t a, b, c, d, sa, sb, sc, sd;

    /* SHA state h0..h7 -> ABEF / CDGH. */
    tmp = _mm_loadu_si128((const __m128i *)&shast[0]);  /* DCBA */
    st1 = _mm_loadu_si128((const __m128i *)&shast[4]);  /* HGFE */
    tmp = _mm_shuffle_epi32(tmp, 0xB1);                  /* CDAB */
    st1 = _mm_shuffle_epi32(st1, 0x1B);                  /* EFGH */
    st0 = _mm_alignr_epi8(tmp, st1, 8);                  /* ABEF */
    st1 = _mm_blend_epi16(st1, tmp, 0xF0);               /* CDGH */

    a = md5st[0]; b = md5st[1]; c = md5st[2]; d = md5st[3];

    for (; nblocks > 0; nblocks--, p += 64) {
#define X(k) load_le32(p + 4 * (k))
        save0 = st0; save1 = st1;
        sa = a; sb = b; sc = c; sd = d;

        M0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p +  0)), bswap);
        M1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
        M2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
        M3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);

        /* Each line: one SHA-256 quad-round (+ schedule) and four MD5 steps. */
        /* --- MD5 round 1 (F) --- */
        FENCE(); SHA_QR(M0, 0);
        MD5_F(a, b, c, d, X( 0), 0xd76aa478,  7); MD5_F(d, a, b, c, X( 1), 0xe8c7b756, 12);
        MD5_F(c, d, a, b, X( 2), 0x242070db, 17); MD5_F(b, c, d, a, X( 3), 0xc1bdceee, 22);
        FENCE(); SHA_QR(M1, 1); SHA_MSG1(M0, M1);
        MD5_F(a, b, c, d, X( 4), 0xf57c0faf,  7); MD5_F(d, a, b, c, X( 5), 0x4787c62a, 12);
        MD5_F(c, d, a, b, X( 6), 0xa8304613, 17); MD5_F(b, c, d, a, X( 7), 0xfd469501, 22);
        FENCE(); SHA_QR(M2, 2); SHA_MSG1(M1, M2);
        MD5_F(a, b, c, d, X( 8), 0x698098d8,  7); MD5_F(d, a, b, c, X( 9), 0x8b44f7af, 12);
        MD5_F(c, d, a, b, X(10), 0xffff5bb1, 17); MD5_F(b, c, d, a, X(11), 0x895cd7be, 22);
        FENCE(); SHA_QR(M3, 3); SHA_NEXT(M0, M3, M2); SHA_MSG1(M2, M3);
        MD5_F(a, b, c, d, X(12), 0x6b901122,  7); MD5_F(d, a, b, c, X(13), 0xfd987193, 12);
        MD5_F(c, d, a, b, X(14), 0xa679438e, 17); MD5_F(b, c, d, a, X(15), 0x49b40821, 22);

        /* --- MD5 round 2 (G) --- */
        FENCE(); SHA_QR(M0, 4); SHA_NEXT(M1, M0, M3); SHA_MSG1(M3, M0);
        MD5_G(a, b, c, d, X( 1), 0xf61e2562,  5); MD5_G(d, a, b, c, X( 6), 0xc040b340,  9);
        MD5_G(c, d, a, b, X(11), 0x265e5a51, 14); MD5_G(b, c, d, a, X( 0), 0xe9b6c7aa, 20);
        FENCE(); SHA_QR(M1, 5); SHA_NEXT(M2, M1, M0); SHA_MSG1(M0, M1);
        MD5_G(a, b, c, d, X( 5), 0xd62f105d,  5); MD5_G(d, a, b, c, X(10), 0x02441453,  9);
        MD5_G(c, d, a, b, X(15), 0xd8a1e681, 14); MD5_G(b, c, d, a, X( 4), 0xe7d3fbc8, 20);
        FENCE(); SHA_QR(M2, 6); SHA_NEXT(M3, M2, M1); SHA_MSG1(M1, M2);
        MD5_G(a, b, c, d, X( 9), 0x21e1cde6,  5); MD5_G(d, a, b, c, X(14), 0xc33707d6,  9);
        MD5_G(c, d, a, b, X( 3), 0xf4d50d87, 14); MD5_G(b, c, d, a, X( 8), 0x455a14ed, 20);
        FENCE(); SHA_QR(M3, 7); SHA_NEXT(M0, M3, M2); SHA_MSG1(M2, M3);
        MD5_G(a, b, c, d, X(13), 0xa9e3e905,  5); MD5_G(d, a, b, c, X( 2), 0xfcefa3f8,  9);
        MD5_G(c, d, a, b, X( 7), 0x676f02d9, 14); MD5_G(b, c, d, a, X(12), 0x8d2a4c8a, 20);

        /* --- MD5 round 3 (H) --- */
        FENCE(); SHA_QR(M0, 8); SHA_NEXT(M1, M0, M3); SHA_MSG1(M3, M0);
        MD5_H(a, b, c, d, X( 5), 0xfffa3942,  4); MD5_H(d, a, b, c, X( 8), 0x8771f681, 11);
        MD5_H(c, d, a, b, X(11), 0x6d9d6122, 16); MD5_H(b, c, d, a, X(14), 0xfde5380c, 23);
        FENCE(); SHA_QR(M1, 9); SHA_NEXT(M2, M1, M0); SHA_MSG1(M0, M1);
        MD5_H(a, b, c, d, X( 1), 0xa4beea44,  4); MD5_H(d, a, b, c, X( 4), 0x4bdecfa9, 11);
        MD5_H(c, d, a, b, X( 7), 0xf6bb4b60, 16); MD5_H(b, c, d, a, X(10), 0xbebfbc70, 23);
        FENCE(); SHA_QR(M2, 10); SHA_NEXT(M3, M2, M1); SHA_MSG1(M1, M2);
        MD5_H(a, b, c, d, X(13), 0x289b7ec6,  4); MD5_H(d, a, b, c, X( 0), 0xeaa127fa, 11);
        MD5_H(c, d, a, b, X( 3), 0xd4ef3085, 16); MD5_H(b, c, d, a, X( 6), 0x04881d05, 23);
        FENCE(); SHA_QR(M3, 11); SHA_NEXT(M0, M3, M2); SHA_MSG1(M2, M3);
        MD5_H(a, b, c, d, X( 9), 0xd9d4d039,  4); MD5_H(d, a, b, c, X(12), 0xe6db99e5, 11);
        MD5_H(c, d, a, b, X(15), 0x1fa27cf8, 16); MD5_H(b, c, d, a, X( 2), 0xc4ac5665, 23);

        /* --- MD5 round 4 (I) --- */
        FENCE(); SHA_QR(M0, 12); SHA_NEXT(M1, M0, M3); SHA_MSG1(M3, M0);
        MD5_I(a, b, c, d, X( 0), 0xf4292244,  6); MD5_I(d, a, b, c, X( 7), 0x432aff97, 10);
        MD5_I(c, d, a, b, X(14), 0xab9423a7, 15); MD5_I(b, c, d, a, X( 5), 0xfc93a039, 21);
        FENCE(); SHA_QR(M1, 13); SHA_NEXT(M2, M1, M0);
        MD5_I(a, b, c, d, X(12), 0x655b59c3,  6); MD5_I(d, a, b, c, X( 3), 0x8f0ccc92, 10);
        MD5_I(c, d, a, b, X(10), 0xffeff47d, 15); MD5_I(b, c, d, a, X( 1), 0x85845dd1, 21);
        FENCE(); SHA_QR(M2, 14); SHA_NEXT(M3, M2, M1);
        MD5_I(a, b, c, d, X( 8), 0x6fa87e4f,  6); MD5_I(d, a, b, c, X(15), 0xfe2ce6e0, 10);
        MD5_I(c, d, a, b, X( 6), 0xa3014314, 15); MD5_I(b, c, d, a, X(13), 0x4e0811a1, 21);
        FENCE(); SHA_QR(M3, 15);
        MD5_I(a, b, c, d, X( 4), 0xf7537e82,  6); MD5_I(d, a, b, c, X(11), 0xbd3af235, 10);
        MD5_I(c, d, a, b, X( 2), 0x2ad7d2bb, 15); MD5_I(b, c, d, a, X( 9), 0xeb86d391, 21);
#undef X

        st0 = _mm_add_epi32(st0, save0);
        st1 = _mm_add_epi32(st1, save1);
        a += sa; b += sb; c += sc; d += sd;
    }

    md5st[0] = a; md5st[1] = b; md5st[2] = c; md5st[3] = d;

    /* ABEF / CDGH -> h0..h7. */
    tmp = _mm_shuffle_epi32(st0, 0x1B);                  /* FEBA */
    st1 = _mm_shuffle_epi32(st1, 0xB1);                  /* DCHG */
    st0 = _mm_blend_epi16(tmp, st1, 0xF0);               /* DCBA */
    st1 = _mm_alignr_epi8(st1, tmp, 8);                  /* HGFE */
    _mm_storeu_si128((__m128i *)&shast[0], st0);
    _mm_storeu_si128((__m128i *)&shast[4], st1);
}

_Static_assert(sizeof(SHA_LONG) == 4 && sizeof(MD5_LONG) == 4,
               "OpenSSL context words must be 32-bit");

/* Add `bytes` to a Nl/Nh bit counter (64-bit count split into 32-bit
 * halves, low half first), exactly as OpenSSL's md32_common.h does. */
static inline void add_bit_count(unsigned int *Nl, unsigned int *Nh,
                                 size_t bytes)
{
    uint64_t n = ((uint64_t)*Nh << 32) | *Nl;
    n += (uint64_t)bytes << 3;
    *Nl = (unsigned int)n;
    *Nh = (unsigned int)(n >> 32);
}

#endif /* BLOBD_HAVE_SHANI_KERNEL */

/* ------------------------------------------------------------------------ */
/* 3. Glue onto OpenSSL's contexts                                          */
/* ------------------------------------------------------------------------ */

static void update_openssl(MD5_CTX *md5, SHA256_CTX *sha,
                           const unsigned char *p, size_t len)
{
    MD5_Update(md5, p, len);
    SHA256_Update(sha, p, len);
}

void blobd_md5_sha256_update(MD5_CTX *md5, SHA256_CTX *sha,
                             const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;

#if BLOBD_HAVE_SHANI_KERNEL
    /* The kernel needs both contexts on a block boundary.  If both hold the
     * same number of pending bytes (which is what happens when they are only
     * ever fed the same data), top them up through OpenSSL first; OpenSSL
     * then compresses that block and resets num to 0. */
    if (len > 0 && md5->num == sha->num && blobd_md5_sha256_available()) {
        size_t pending = md5->num;
        if (pending != 0) {
            size_t fill = 64 - pending;
            if (fill > len)
                fill = len;
            update_openssl(md5, sha, p, fill);
            p += fill;
            len -= fill;
        }
        if (len >= 64 && md5->num == 0 && sha->num == 0) {
            size_t nblocks = len / 64;
            size_t bytes = nblocks * 64;
            /* MD5_CTX: A,B,C,D are four consecutive MD5_LONGs; copy through
             * a local array rather than relying on struct layout. */
            uint32_t m[4] = { md5->A, md5->B, md5->C, md5->D };
            md5_sha256_blocks(m, (uint32_t *)sha->h, p, nblocks);
            md5->A = m[0]; md5->B = m[1]; md5->C = m[2]; md5->D = m[3];
            add_bit_count(&md5->Nl, &md5->Nh, bytes);
            add_bit_count(&sha->Nl, &sha->Nh, bytes);
            p += bytes;
            len -= bytes;
        }
    }
#endif
    if (len > 0)
        update_openssl(md5, sha, p, len);
}
