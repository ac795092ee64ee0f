// libpq from Debian's libpq-dev: the PostgreSQL index of a multi-node blobd.
#ifndef BLOBD_CLIBPQ_SHIM_H
#define BLOBD_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
