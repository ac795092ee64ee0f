// OpenSSL's libcrypto, for SHA-256 and SHA-1 with a context that is a plain struct: a resumable
// upload saves it between requests and across restarts. The low-level API is deprecated in
// OpenSSL 3 but stable, and it uses the CPU's SHA instructions.
#ifndef BLOBD_CCRYPTO_SHIM_H
#define BLOBD_CCRYPTO_SHIM_H
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#endif
