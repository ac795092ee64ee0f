// OpenSSL's libcrypto, for SHA-256, SHA-1 and HMAC-SHA256 (S3's SigV4) with a context that is a plain struct: a resumable
// upload saves it between requests and across restarts. The low-level API is deprecated in
// OpenSSL 3 but stable, and it uses the CPU's SHA instructions.
#ifndef BLOBD_CCRYPTO_SHIM_H
#define BLOBD_CCRYPTO_SHIM_H
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <openssl/md5.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#endif
