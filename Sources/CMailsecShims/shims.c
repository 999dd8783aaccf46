#include "CMailsecShims.h"

#include <string.h>

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

/* The sink stream: GMimeStream with a write that calls back, and nothing else. */
typedef struct {
    GMimeStream parent;
    mailsec_sink_write write;
    void *context;
} MailsecSinkStream;

typedef struct {
    GMimeStreamClass parent_class;
} MailsecSinkStreamClass;

G_DEFINE_TYPE(MailsecSinkStream, mailsec_sink_stream, GMIME_TYPE_STREAM)

static ssize_t sink_read(GMimeStream *stream, char *buf, size_t len) { return -1; }

static ssize_t sink_write(GMimeStream *stream, const char *buf, size_t len) {
    MailsecSinkStream *sink = (MailsecSinkStream *)stream;
    sink->write(buf, len, sink->context);
    stream->position += len;
    return (ssize_t)len;
}

static int sink_flush(GMimeStream *stream) { return 0; }
static int sink_close(GMimeStream *stream) { return 0; }
static gboolean sink_eos(GMimeStream *stream) { return TRUE; }
static int sink_reset(GMimeStream *stream) { return -1; }
static gint64 sink_seek(GMimeStream *stream, gint64 offset, GMimeSeekWhence whence) { return -1; }
static gint64 sink_tell(GMimeStream *stream) { return stream->position; }
static gint64 sink_length(GMimeStream *stream) { return -1; }
static GMimeStream *sink_substream(GMimeStream *stream, gint64 start, gint64 end) { return NULL; }

static void mailsec_sink_stream_class_init(MailsecSinkStreamClass *klass) {
    GMimeStreamClass *stream_class = GMIME_STREAM_CLASS(klass);
    stream_class->read = sink_read;
    stream_class->write = sink_write;
    stream_class->flush = sink_flush;
    stream_class->close = sink_close;
    stream_class->eos = sink_eos;
    stream_class->reset = sink_reset;
    stream_class->seek = sink_seek;
    stream_class->tell = sink_tell;
    stream_class->length = sink_length;
    stream_class->substream = sink_substream;
}

static void mailsec_sink_stream_init(MailsecSinkStream *sink) {}

GMimeStream *mailsec_sink_stream_new(mailsec_sink_write write, void *context) {
    MailsecSinkStream *sink = g_object_new(mailsec_sink_stream_get_type(), NULL);
    g_mime_stream_construct(GMIME_STREAM(sink), 0, -1);
    sink->write = write;
    sink->context = context;
    return GMIME_STREAM(sink);
}
