#ifndef CMAILSEC_SHIMS_H
#define CMAILSEC_SHIMS_H

/* Real, prefixed functions for the C macros and inline helpers of GPGME and
 * GMime that Swift cannot call directly, and the one GObject subclass Swift
 * cannot declare (a write-only stream that hands each write to a callback).
 * Nothing here has logic of its own. */

#include <gpgme.h>
#include <gmime/gmime.h>

/* gpgme_check_version is a macro over gpgme_check_version_internal. */
const char *mailsec_gpgme_check_version(const char *required);

/* gpgme_err_code / gpgme_err_source are inline in gpgme.h. */
unsigned int mailsec_gpgme_err_code(gpgme_error_t err);
unsigned int mailsec_gpgme_err_source(gpgme_error_t err);
gpgme_error_t mailsec_gpgme_error(unsigned int code);

/* GObject type checks (GMIME_IS_* macros). */
int mailsec_gmime_is_message(void *object);
int mailsec_gmime_is_part(void *object);
int mailsec_gmime_is_text_part(void *object);
int mailsec_gmime_is_multipart(void *object);
int mailsec_gmime_is_message_part(void *object);
int mailsec_is_address_group(void *address);

/* A write-only GMimeStream that passes every write to `write(bytes, length,
 * context)`: lets GMime write a message, or decode a part's content, in
 * pieces, without a copy of the whole in memory. Reading is not supported. */
typedef void (*mailsec_sink_write)(const char *bytes, size_t length, void *context);
GMimeStream *mailsec_sink_stream_new(mailsec_sink_write write, void *context);

#endif
