/* The baseline of scripts/bench's parsing case: the same work as
 * `mailsec-bench parse`, done directly with GMime: parse an mbox, walk every
 * part of every message, decode every leaf (and convert text parts to UTF-8).
 * Prints "<bytes> <seconds> <parts>". The mbox is read from disk as it is
 * parsed (GMime's file stream), by both. */
#include <gmime/gmime.h>
#include <stdio.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>

static long parts;

static void visit(GMimeObject *parent, GMimeObject *part, gpointer data) {
    (void)parent; (void)data;
    parts++;
    if (GMIME_IS_MESSAGE_PART(part)) {
        GMimeMessage *inner = g_mime_message_part_get_message(GMIME_MESSAGE_PART(part));
        if (inner) g_mime_message_foreach(inner, visit, NULL);
        return;
    }
    if (!GMIME_IS_PART(part)) return;
    GMimeDataWrapper *content = g_mime_part_get_content(GMIME_PART(part));
    if (content) {
        GMimeStream *sink = g_mime_stream_mem_new();
        g_mime_data_wrapper_write_to_stream(content, sink);
        g_object_unref(sink);
    }
    if (GMIME_IS_TEXT_PART(part)) g_free(g_mime_text_part_get_text(GMIME_TEXT_PART(part)));
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: gmime-walk MBOX\n"); return 64; }
    g_mime_init();
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 66; }
    struct stat info;
    if (fstat(fd, &info) != 0) return 66;
    long size = (long)info.st_size;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* Read from disk as it is parsed, as mailsec-bench does. */
    GMimeStream *stream = g_mime_stream_fs_new(fd);
    GMimeParser *parser = g_mime_parser_new_with_stream(stream);
    g_mime_parser_set_format(parser, GMIME_FORMAT_MBOX);
    g_mime_parser_set_persist_stream(parser, FALSE);
    while (!g_mime_parser_eos(parser)) {
        GMimeMessage *message = g_mime_parser_construct_message(parser, NULL);
        if (!message) break;
        g_mime_message_foreach(message, visit, NULL);
        g_object_unref(message);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("%ld %f %ld\n", size, (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9, parts);
    g_object_unref(parser);
    g_object_unref(stream);
    return 0;
}
