/* profile.h - the measured block and edge counts that
 * -fplugin-arg-tally-profile=FILE places counters by (plugin/profile.cc).
 *
 * FILE is a data file of an earlier run of the same sources built with
 * blocks=count (any placement, update, at; several runs merged by %m or
 * `tally merge`).  Every function with a block map that counts blocks
 * (kinds 1, 2 and 6) is solved (format/blockmap.c) and kept as its
 * identity and its counts: every block's and every normal edge's, in map
 * order.  A function is the same one in a later build when its symbol,
 * the base name of its file and its identity (tally_profile_identity)
 * are; its counts then weigh the later build's spanning tree.  The
 * counts only move counters, they never make one: a build placed by a
 * wrong profile counts as exactly as one placed by GCC's guess.
 *
 * The file is read by the strict reader (datafile.c) and its maps checked
 * (tally_data_check_maps) before anything is solved, so a damaged or
 * foreign file is a one-line message naming it.  C, callable from C++.  */
#ifndef TALLY_FORMAT_PROFILE_H
#define TALLY_FORMAT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_blockmap;

/* One function body of the profile: the sum of every record with its
   symbol, file base name and identity.  */
struct tally_profile_fn
{
  char *symbol;       /* assembler name of the body */
  char *base;         /* base name of its source file */
  uint64_t identity;  /* tally_profile_identity of its map */
  uint32_t nblocks;   /* ENTRY and EXIT included */
  uint32_t nedges;    /* its normal (not fake) edges */
  uint64_t *block;    /* nblocks counts, by map number */
  uint64_t *edge;     /* nedges counts, the normal edges in map order */
  uint32_t records;   /* how many records were summed into it */
};

/* A profile: its functions sorted by symbol, base name and identity.  */
struct tally_profile
{
  struct tally_profile_fn *fns;
  size_t nfns;
  uint32_t undetermined; /* bodies left out: a count the map did not
                            determine (an incomplete callers trailer) */
};

/* The identity of a function's flow graph as its map M describes it, for
   a function defined in FILE at LINE (its record's file and line): a
   64-bit FNV-1a hash of the block count, each block's "ends with a call
   that may not return" flag and its locations (a line of FILE as its
   distance from LINE, so that the function may move in its file; a line
   of another file as that file's base name and the line), and each normal
   edge's source, destination and kind (fallthrough, true, false).  Fake
   edges, values and the map's kind are left out: they differ between
   builds of one graph (placement, visited, a call known to return).  */
uint64_t tally_profile_identity (const struct tally_blockmap *m,
                                 const char *file, uint32_t line);

/* Read the data file PATH into *OUT.  Returns 0, or -1 with a one-line
   message naming PATH in ERR (ERRLEN bytes at most) and *OUT empty: the
   file cannot be read, is not a tally data file or is damaged (the
   reader's message), or has no function whose blocks it counts (a
   blocks=visited or function-counts-only build).  */
int tally_profile_read (const char *path, struct tally_profile *out, char *err,
                        size_t errlen);

/* The same for the data file D already read, named NAME in messages (the
   fuzz target's entry).  */
struct tally_data;
int tally_profile_of (const struct tally_data *d, const char *name,
                      struct tally_profile *out, char *err, size_t errlen);

/* The outcome of tally_profile_find.  */
enum tally_profile_match
{
  TALLY_PROFILE_FOUND,   /* the counts of a function of this identity */
  TALLY_PROFILE_CHANGED, /* the symbol is there, with other graphs only */
  TALLY_PROFILE_ABSENT   /* no body of that symbol and file */
};

/* The body of SYMBOL, defined in FILE at LINE, whose map is M (of a new
   build: its values and kind do not matter), in P: one of a file with the
   base name of FILE, of M's identity and with M's block and normal edge
   counts.  *FN set when found.  */
enum tally_profile_match
tally_profile_find (const struct tally_profile *p, const char *symbol,
                    const char *file, uint32_t line,
                    const struct tally_blockmap *m,
                    const struct tally_profile_fn **fn);

/* Release what tally_profile_read stored and empty *P; safe on an empty
   one.  */
void tally_profile_free (struct tally_profile *p);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_FORMAT_PROFILE_H */
