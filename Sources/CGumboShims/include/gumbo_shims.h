#ifndef MAILSEC_GUMBO_SHIMS_H
#define MAILSEC_GUMBO_SHIMS_H

#include <gumbo.h>
#include <stddef.h>

/// A parse of Gumbo's with a budget: gumbo_parse_with_options with parse
/// errors not recorded, and every allocation counted. When Gumbo has asked for
/// more than `budget` bytes in all (the tree HTML5 builds can be quadratic in
/// the input: formatting elements reopened in every block), or memory runs out,
/// the parse is abandoned: NULL, `*exceeded` set, everything Gumbo had allocated
/// freed. Otherwise the output, to be freed with mailsec_gumbo_destroy with
/// `*arena`. NULL with `*exceeded` zero: no memory for the bookkeeping.
GumboOutput *mailsec_gumbo_parse(const char *buffer, size_t length, size_t budget, int *exceeded, void **arena);

/// Frees an output of mailsec_gumbo_parse (gumbo_destroy_output) and its arena.
void mailsec_gumbo_destroy(GumboOutput *output, void *arena);

#endif
