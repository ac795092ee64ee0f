// zlib from Debian's zlib1g-dev, for CRC-32 (S3's x-amz-checksum-crc32).
#ifndef BLOBD_CZLIB_SHIM_H
#define BLOBD_CZLIB_SHIM_H
#include <zlib.h>
#endif
