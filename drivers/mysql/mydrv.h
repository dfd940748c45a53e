/*
 * mydrv.h -- what the files of the MySQL/MariaDB driver share: the TLS
 * modes and settings, and the option-file reader (optfile.c) that
 * mysql.c uses when it connects. Internal to the driver.
 */
#ifndef SQLLOCK_MYDRV_H
#define SQLLOCK_MYDRV_H

#include "sqllock_driver.h"

/* The TLS modes of the ssl_mode URL parameter (and of an option file's
 * ssl-mode), named as MySQL names them. MYDRV_SSL_DEFAULT: none given. */
typedef enum mydrv_ssl_mode {
    MYDRV_SSL_DEFAULT = 0,
    MYDRV_SSL_DISABLED,
    MYDRV_SSL_PREFERRED,
    MYDRV_SSL_REQUIRED,
    MYDRV_SSL_VERIFY_CA,
    MYDRV_SSL_VERIFY_IDENTITY
} mydrv_ssl_mode;

/* The TLS files and settings, in the order of sqllock__my_tls_names:
 * the URL spells them ssl_ca, ssl_capath, ..., an option file ssl-ca,
 * ssl-capath, ... (MySQL's option names). */
enum {
    MYDRV_TLS_CA = 0,
    MYDRV_TLS_CAPATH,
    MYDRV_TLS_CERT,
    MYDRV_TLS_KEY,
    MYDRV_TLS_CIPHER,
    MYDRV_TLS_CRL,
    MYDRV_TLS_CRLPATH,
    MYDRV_TLS_N
};

/* "ca", "capath", "cert", "key", "cipher", "crl", "crlpath". */
extern const char *const sqllock__my_tls_names[MYDRV_TLS_N];

/* The mode that `name` spells (ASCII case ignored): 1, or 0 for none. */
int sqllock__my_ssl_mode_parse(const char *name, mydrv_ssl_mode *mode);

/* MySQL's name of a mode ("VERIFY_IDENTITY"). */
const char *sqllock__my_ssl_mode_name(mydrv_ssl_mode mode);

/* What an option file gave: copies, owned; NULL where it said nothing. */
typedef struct mydrv_optfile {
    char *user;
    char *password;            /* overwritten with zeros before it is freed */
    mydrv_ssl_mode mode;       /* ssl-mode, or ssl-verify-server-cert */
    char *tls[MYDRV_TLS_N];
    int files;                 /* option files read (includes counted) */
} mydrv_optfile;

/*
 * Reads the option file `path` as MySQL's clients read one: the options
 * of the groups [client], [client-server], [client-mariadb] and, when not
 * NULL, [group], in the order they appear (a later value replaces an
 * earlier one), with !include and !includedir. Only user, password and
 * the TLS options are taken; every other option is ignored. With
 * `missing_ok`, a file that does not exist reads as empty. Fills `out`
 * (which must be zeroed or hold an earlier read's results, which later
 * values replace). On failure returns SQLLOCK_EURL (or SQLLOCK_ENOMEM)
 * and says why in `err`, naming the file and line but never a value read
 * from it. Free `out` with sqllock__my_optfile_free(), also after a
 * failure.
 */
int sqllock__my_optfile_read(const char *path, const char *group,
                             int missing_ok, mydrv_optfile *out,
                             sqllock_dberr *err);

void sqllock__my_optfile_free(mydrv_optfile *f);

#endif /* SQLLOCK_MYDRV_H */
