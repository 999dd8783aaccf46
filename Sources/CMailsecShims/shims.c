#include "CMailsecShims.h"

const char *mailsec_gpgme_check_version(const char *required) {
    return gpgme_check_version(required);
}

unsigned int mailsec_gpgme_err_code(gpgme_error_t err) { return gpgme_err_code(err); }
unsigned int mailsec_gpgme_err_source(gpgme_error_t err) { return gpgme_err_source(err); }
gpgme_error_t mailsec_gpgme_error(unsigned int code) { return gpgme_error((gpgme_err_code_t)code); }

int mailsec_gmime_is_message(void *object) { return object != NULL && GMIME_IS_MESSAGE(object); }
int mailsec_gmime_is_part(void *object) { return object != NULL && GMIME_IS_PART(object); }
int mailsec_gmime_is_text_part(void *object) { return object != NULL && GMIME_IS_TEXT_PART(object); }
int mailsec_gmime_is_multipart(void *object) { return object != NULL && GMIME_IS_MULTIPART(object); }
int mailsec_gmime_is_message_part(void *object) { return object != NULL && GMIME_IS_MESSAGE_PART(object); }
int mailsec_is_address_group(void *address) { return address != NULL && INTERNET_ADDRESS_IS_GROUP(address); }
