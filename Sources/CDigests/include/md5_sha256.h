/*
 * md5_sha256.h - one-pass ("stitched") MD5 + SHA-256 over the same bytes.
 *
 * MD5 is a single long chain of dependent integer ops (~1 IPC, latency
 * bound); SHA-256 via the x86 SHA extensions (SHA-NI) runs on separate
 * vector execution units.  Interleaving the two in one loop lets the
 * out-of-order core hide most of the SHA-256 work behind MD5's latency.
 *
 * The functions operate directly on OpenSSL's own low-level contexts, so
 * callers keep using MD5_Init/MD5_Final and SHA256_Init/SHA256_Final
 * (or SHA224_*; the compression function is identical).
 */
#ifndef BLOBD_MD5_SHA256_H
#define BLOBD_MD5_SHA256_H

#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include <stddef.h>
#include <openssl/md5.h>
#include <openssl/sha.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if this CPU has the SHA extensions (CPUID.7.0:EBX[29]) plus SSSE3 and
 * SSE4.1, i.e. the stitched kernel can run; 0 otherwise (always 0 on non-x86).
 * The CPUID result is cached in a relaxed atomic; safe from any thread. */
int blobd_md5_sha256_available(void);

/* Same effect as MD5_Update(md5, data, len) followed by
 * SHA256_Update(sha, data, len).
 *
 * If the CPU is capable and both contexts sit at the same position inside a
 * 64-byte block (the normal case when they have only ever been fed the same
 * bytes), whole 64-byte blocks go through the stitched kernel; a leading
 * partial block (to re-align both contexts) and the trailing remainder go
 * through MD5_Update / SHA256_Update.  In every other case this is exactly
 * the two OpenSSL calls.  No alignment requirement on data. */
void blobd_md5_sha256_update(MD5_CTX *md5, SHA256_CTX *sha,
                             const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* BLOBD_MD5_SHA256_H */
