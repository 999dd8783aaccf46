#include "gumbo_shims.h"

#include <setjmp.h>
#include <stdlib.h>

/// Each allocation is preceded by a header linking it into the arena's list,
/// so that an abandoned parse can free everything Gumbo held.
typedef union Header {
    struct { union Header *prev, *next; } links;
    max_align_t align;
} Header;

typedef struct {
    GumboOptions options;
    jmp_buf escape;
    int parsing;      /* the escape is valid only while Gumbo parses */
    size_t used;      /* bytes asked for in all, freed or not: a measure of work */
    size_t budget;
    Header head;
} Arena;

static void free_all(Arena *arena) {
    Header *block = arena->head.links.next;
    while (block != &arena->head) {
        Header *next = block->links.next;
        free(block);
        block = next;
    }
    arena->head.links.prev = arena->head.links.next = &arena->head;
}

static void *arena_allocate(void *userdata, size_t size) {
    Arena *arena = userdata;
    arena->used += size;
    Header *block = (arena->parsing && arena->used > arena->budget) ? NULL : malloc(sizeof(Header) + size);
    if (block == NULL) {
        if (arena->parsing) longjmp(arena->escape, 1);
        abort();   /* Gumbo has no way to fail an allocation */
    }
    block->links.prev = &arena->head;
    block->links.next = arena->head.links.next;
    arena->head.links.next->links.prev = block;
    arena->head.links.next = block;
    return block + 1;
}

static void arena_free(void *userdata, void *pointer) {
    (void)userdata;
    if (pointer == NULL) return;
    Header *block = (Header *)pointer - 1;
    block->links.prev->links.next = block->links.next;
    block->links.next->links.prev = block->links.prev;
    free(block);
}

GumboOutput *mailsec_gumbo_parse(const char *buffer, size_t length, size_t budget, int *exceeded, void **arena_out) {
    *exceeded = 0;
    *arena_out = NULL;
    Arena *arena = calloc(1, sizeof(Arena));
    if (arena == NULL) return NULL;
    arena->options = kGumboDefaultOptions;
    arena->options.allocator = arena_allocate;
    arena->options.deallocator = arena_free;
    arena->options.userdata = arena;
    /* Parse errors are not wanted; recorded, a broken document makes one per mistake. */
    arena->options.max_errors = 0;
    arena->options.stop_on_first_error = false;
    arena->budget = budget;
    arena->head.links.prev = arena->head.links.next = &arena->head;
    if (setjmp(arena->escape)) {
        arena->parsing = 0;
        free_all(arena);
        free(arena);
        *exceeded = 1;
        return NULL;
    }
    arena->parsing = 1;
    GumboOutput *output = gumbo_parse_with_options(&arena->options, buffer, length);
    arena->parsing = 0;
    if (output == NULL) {
        free_all(arena);
        free(arena);
        return NULL;
    }
    *arena_out = arena;
    return output;
}

void mailsec_gumbo_destroy(GumboOutput *output, void *arena_pointer) {
    Arena *arena = arena_pointer;
    gumbo_destroy_output(&arena->options, output);
    free_all(arena);
    free(arena);
}
