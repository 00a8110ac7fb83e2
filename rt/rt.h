/* rt/rt.h - internals shared by the runtime's source files.
 *
 * The runtime in layers, read top to bottom.  A file calls functions (and
 * uses data) of its own layer and of the layers below it, never of a layer
 * above, and no files call each other in a circle, within a layer either.
 * A lower layer reaches a higher one only through the declared callbacks
 * listed after the layers.  testsuite/rt-layers.py checks all of it on the
 * built objects (which rt file defines and which uses each symbol) against
 * this table, as written here.
 *
 *   layer 5 process: register.c signal.c exec.c
 *     registration (the constructors' __tally_register and the setup of
 *     the first one: exit dump, signal handlers, pthread_atfork), the
 *     handlers of the signals that dump, the exec wrappers
 *   layer 4 dump: dump.c
 *     when a file is written and what goes in: the exit dump and late
 *     counts, tally_dump, tally_image, a module leaving, tally_reset, the
 *     fork child
 *   layer 3 output: continuous.c merge-write.c merge-extras.c merge.c
 *   layer 3 output: outname.c outfile.c pattern.c rank.c merge-image.c
 *     the output file: its name (pattern.c, rank.c), its temporary and its
 *     place (outname.c), exclusive creation, checks and locks (outfile.c),
 *     merge-on-write (merge-write.c; the reader merge.c; MEAS, FRMS and
 *     PATH merge-extras.c; a whole file made in memory, libtally-mpi's
 *     reduced file, merge-image.c), continuous output (continuous.c)
 *   layer 2 records: records.c mapblob.c
 *     the writer, the records of a data file, the retained records of
 *     unloaded modules, the module list and the dump lock; a module's
 *     values and its record written from the unit's compile-time blob
 *     (mapblob.c)
 *   layer 1 counters: hooks.c frames.c papi.c shadow.c tls.c unwind.c
 *   layer 1 counters: paths.c
 *     the hooks and what they update: counters, shadow stacks, the
 *     calling-context tree, PAPI events, per-thread copies (the hot path)
 *   layer 0 base: instance.c env.c error.c crc32.c mapcode.c sys.c
 *     one runtime per process (instance.c), the environment, the one
 *     error reporter, CRC-32, the version 2 block map's codec, the
 *     runtime's own libc functions (sys.h)
 *
 * Declared callbacks, the only calls up the layers (FILE: what it calls):
 *   callback instance.c: tally_rt_register_local tally_rt_unregister_local
 *   callback instance.c: tally_rt_dump tally_rt_reset_local tally_rt_exec_dump
 *   callback instance.c: tally_rt_tls_attach_local
 *     the entry points of a copy of the runtime (struct tally_rt_instance,
 *     tally_rt_self): the public entry points call the primary copy's
 *   callback records.c: tally_rt_cont_mapped
 *     through the pointer tally_rt_cont_mapped_cb, which continuous.c sets
 *     when it maps a module's counters into the file
 *   callback unwind.c: tally_rt_frames_disarm tally_rt_frames_rearm
 *     frames.c's, weak: linked only where a unit has return frames
 *     (exit=frames), whose code calls frames.c
 *   callback shadow.c: tally_rt_papi_read tally_rt_papi_push
 *   callback shadow.c: tally_rt_papi_pop tally_rt_papi_thread_gone
 *     papi.c's functions are weak: called only where papi.o is linked
 *     (measure=papi), whose hooks call shadow.c's entry and exit
 */
#ifndef TALLY_RT_H
#define TALLY_RT_H

#include <stddef.h>
#include <stdint.h>

#include "tally/abi.h"
#include "tally/format.h"

#define TALLY_HIDDEN __attribute__ ((visibility ("hidden")))
/* Code that the preserving stubs' fast calls run (TALLY_PRESERVING_STUB):
   compiled to use the general registers only, so that it leaves every
   vector and x87 register as it found them.  A function of this kind
   calls only others of this kind; static inline ones are also
   always_inline, so that ordinary code inlines them too.  */
#if defined(__x86_64__) && !defined(__ILP32__)
#define TALLY_GPR_ONLY __attribute__ ((target ("general-regs-only")))
#else
#define TALLY_GPR_ONLY
#endif
#define TALLY_GPR_INLINE \
  static inline __attribute__ ((always_inline)) TALLY_GPR_ONLY

#include "sys.h" /* before any other header: see there */

/* struct tally_module.rt_state values (the low byte), and a flag or'ed
   into REGISTERED: the module's record blob passed tally_rt_blob_check at
   registration (mapblob.c writes from it only then).  */
#define TALLY_STATE_REGISTERED 1u
#define TALLY_STATE_GONE 2u
#define TALLY_STATE_MASK 0xffu
#define TALLY_STATE_BLOB 0x100u

/* Head of the list of registered modules, newest first (records.c).
   Registration pushes lock-free; unlinking (tally_rt_module_gone) and
   walking (dumps, reset) happen under the dump lock, so a walker that
   loaded the head can go on while others register.  */
extern struct tally_module *tally_modules TALLY_HIDDEN;

/* Set once the final dump at process exit has run.  */
extern int tally_exit_dumped TALLY_HIDDEN;

/* Write one "tally: ..." line to stderr.  Only %s, %d, %u, %lu and %% are
   understood; async-signal-safe, no stdio, errno preserved.  A line longer
   than 512 bytes loses the middle of its longest strings, never its end.  */
void tally_rt_error (const char *fmt, ...) TALLY_HIDDEN
    __attribute__ ((format (printf, 1, 2)));

/* The words for an errno value (error.c).  */
const char *tally_rt_errno_text (int e) TALLY_HIDDEN;

/* env.c: the value of environment variable NAME, or NULL;
   async-signal-safe.  The runtime's only way to the environment: in a
   secure-execution process (AT_SECURE: setuid, setgid, file capabilities)
   always NULL.  */
const char *tally_rt_env (const char *name) TALLY_HIDDEN;
/* Whether this is a secure-execution process (getauxval (AT_SECURE)).  */
int tally_rt_secure (void) TALLY_HIDDEN;

/* Skip one str field at P (a u32 length and the bytes) of a record this
   runtime wrote or checked.  */
static inline unsigned char *
tally_rt_skip_str (const unsigned char *p)
{
  return (unsigned char *) p + TALLY_STR_FIXED + tally_le_get32 (p);
}

/* outfile.c: how files are created, opened and replaced (doc/guarantees.md,
   "Security").  Each reports its own failures ("tally: cannot ... PATH:
   why") and returns -1 with errno set.  */
/* Whether PATH may be written: 0 if it is missing or a regular file the
   dump may replace, *INPLACE set if it is a FIFO or character device of
   the user or root, to be written in place (tally_rt_out_inplace).  */
int tally_rt_out_check (const char *path, int *inplace) TALLY_HIDDEN;
/* Open the FIFO or device PATH for writing in place, checked again.  */
int tally_rt_out_inplace (const char *path) TALLY_HIDDEN;
/* Create PATH.tmp.RANDOM (O_CREAT|O_EXCL|O_NOFOLLOW, 0644, 0600 under
   AT_SECURE; a new name on EEXIST), its name in TMP; O_RDWR if RW, else
   O_WRONLY.  Not reported: the caller names TMP.  */
int tally_rt_out_tmp (const char *path, char *tmp, size_t cap, int rw)
    TALLY_HIDDEN;
/* Rename TMP over PATH if PATH is missing or still a file that may be
   replaced.  */
int tally_rt_out_commit (const char *tmp, const char *path) TALLY_HIDDEN;
/* Open the existing PATH (FLAGS: O_RDONLY, O_RDWR) without following a
   link; only a regular file ("cannot WHAT PATH: ..." otherwise).  -1 with
   errno ENOENT (missing) unreported; -2, unreported, for a regular file
   owned by another user than the effective user and root.  */
int tally_rt_out_open_own (const char *path, int flags, const char *what)
    TALLY_HIDDEN;
/* Move the file of another user PATH aside to PATH.other-owner (.1, ...),
   reported; 0, or -1 (reported: nothing may be written).  */
int tally_rt_out_foreign_aside (const char *path, char *out, size_t cap)
    TALLY_HIDDEN;
/* Open (create, 0600) and check the lock file PATH.  */
int tally_rt_out_lock (const char *path) TALLY_HIDDEN;
/* Move PATH aside to PATH SUFFIX (or SUFFIX.1 ... SUFFIX.999, then
   SUFFIX.<random>; never replacing a file), its new name in OUT.  Not
   reported.  */
int tally_rt_out_aside (const char *path, const char *suffix, char *out,
                        size_t cap) TALLY_HIDDEN;

/* Install the handlers TALLY_DUMP_ON asks for (signal.c); called once, by
   the first registration in the copy that keeps the modules.  Undone by
   tally_rt_signals_fini, from the runtime's destructor, so that no handler
   points into a copy that dlclose unmaps.  */
void tally_rt_signals_init (void) TALLY_HIDDEN;
void tally_rt_signals_fini (void) TALLY_HIDDEN;

/* A dump from a handler of a fatal signal: like tally_rt_dump (0), but
   waits for a dump running in another thread.  */
int tally_rt_dump_fatal (void) TALLY_HIDDEN;

/* The exec wrappers (exec.c).  DONE 0: wait for a dump running in another
   thread, dump, and keep the dump lock, so that no other thread starts a
   dump the exec would cut short; returns whether the lock is held.  DONE
   1: the exec failed, release the lock.  */
int tally_rt_exec_dump (int done) TALLY_HIDDEN;

/* Decimal digits of V into BUF, NUL-terminated; returns their count.  */
size_t tally_rt_utoa (char buf[24], unsigned long v) TALLY_HIDDEN;

/* Write the data file.  AT_EXIT marks the final dump.  Returns 0 or -1
   with errno set.  */
int tally_rt_dump (int at_exit) TALLY_HIDDEN;

/* After the exit dump: write the file again if any live module's
   counters moved since (dump.c explains).  */
void tally_rt_late_check (void) TALLY_HIDDEN;

/* Module M is going away: mark it gone and take it out of the list, after
   keeping its record for every later dump if KEEP.  */
void tally_rt_module_gone (struct tally_module *m, int keep) TALLY_HIDDEN;

/* Called at process exit (atexit and destructor); dumps once.  */
void tally_rt_exit_dump (void) TALLY_HIDDEN;

/* Called by every registration; the first one in this copy notes the
   owning process for the exec wrappers (exec.c).  */
void tally_rt_exec_init (void) TALLY_HIDDEN;

/* pthread_atfork child handler: the child starts counting from zero.  */
void tally_rt_fork_child (void) TALLY_HIDDEN;

/* tls.c: update=tls.  Init makes the thread-exit key (at the registration
   of a module built with update=tls).  Add adds the live threads' copies
   of counters K to K+N-1 of function FN of M to OUT[0..N-1]; sum returns
   the sum of their copies of counters 0 to N-1.  Both walk the NATT
   attachments ATT that tally_rt_tls_of gathered (all of M's, live or not,
   at most MAX of them; it returns how many M has), or every module's if
   ATT is NULL: a dump gathers once per module and walks per function.  */
void tally_rt_tls_init (void) TALLY_HIDDEN;
void tally_rt_tls_attach_local (struct tally_module *m) TALLY_HIDDEN;
uint32_t tally_rt_tls_of (const struct tally_module *m, const void **att,
                          uint32_t max) TALLY_HIDDEN;
void tally_rt_tls_add (const struct tally_module *m, const void *const *att,
                       uint32_t natt, uint32_t fn, uint32_t k, uint32_t n,
                       uint64_t *out) TALLY_HIDDEN;
uint64_t tally_rt_tls_sum (const struct tally_module *m,
                           const void *const *att, uint32_t natt, uint32_t fn,
                           uint32_t n) TALLY_HIDDEN;
/* And the dump's read of function FN of M whole (mapblob.c): its N
   counters at C (as its code updates them) with the copies added, into
   OUT in the data file's byte order; returns their sum and ors them into
   *ANY.  One pass when at most one thread has copies.  */
uint64_t tally_rt_tls_read (const struct tally_module *m,
                            const void *const *att, uint32_t natt,
                            uint32_t fn, const uint64_t *c, uint32_t n,
                            uint64_t *out, uint64_t *any) TALLY_HIDDEN;
void tally_rt_tls_module_gone (struct tally_module *m) TALLY_HIDDEN;
/* The exit dump (not from a signal handler), before it reads: the calling
   thread's copies join the counters and its attachments are released, as
   at its exit (code it runs later attaches again), so that the dump and
   the late checks read the counters alone, not its copies as well.  */
void tally_rt_tls_exit_dump (void) TALLY_HIDDEN;
void tally_rt_tls_zero (void) TALLY_HIDDEN;
void tally_rt_tls_fork_child (void) TALLY_HIDDEN;

/* records.c: the records of a data file (layout: tally/format.h).  */
/* Value K of function FN of M as the data file has it (counters, then
   visited bytes as 0/1), and how many there are.  */
uint64_t tally_rt_fn_value (const struct tally_module *m, uint32_t fn,
                            uint32_t k) TALLY_HIDDEN;
static inline uint32_t
tally_rt_fn_nvalues (const struct tally_fn *f)
{
  return f->ncounters + (f->visited ? f->nvisited : 0);
}
/* The writer: to the file descriptor FD through a static buffer, or into
   MEM if set, or (FD -1) nowhere, a sizing pass.  Only the holder of the
   dump lock writes (the buffer is one).  */
struct tally_rt_writer
{
  unsigned char *mem; /* if set, write here instead of to fd */
  int fd;
  size_t used;    /* bytes in outbuf */
  uint64_t total; /* bytes handed to the writer so far */
  uint32_t crc;
  int failed;     /* errno of the first failure, 0 if none */
};
void tally_rt_put (struct tally_rt_writer *w, const void *p, size_t n)
    TALLY_HIDDEN;
void tally_rt_put_u32 (struct tally_rt_writer *w, uint32_t v) TALLY_HIDDEN;
void tally_rt_put_u64 (struct tally_rt_writer *w, uint64_t v) TALLY_HIDDEN;
/* Write out the buffered bytes; the CRC of everything put so far.  */
void tally_rt_flush (struct tally_rt_writer *w) TALLY_HIDDEN;
uint32_t tally_rt_writer_crc (const struct tally_rt_writer *w) TALLY_HIDDEN;
/* Whether M is registered, and whether a dump writes its record (not if
   its counts are in a region of the continuous file).  */
int tally_rt_module_live (struct tally_module *m) TALLY_HIDDEN;
int tally_rt_module_written (struct tally_module *m) TALLY_HIDDEN;
/* The declared callback behind tally_rt_module_written: continuous.c's
   tally_rt_cont_mapped once it mapped a module, NULL before.  */
extern int (*tally_rt_cont_mapped_cb) (const struct tally_module *m)
    TALLY_HIDDEN;
/* The header of a file of NMODULES module records.  */
void tally_rt_put_header (struct tally_rt_writer *w, uint64_t file_size,
                          uint32_t nmodules, uint32_t flags,
                          const char *program) TALLY_HIDDEN;
/* The records of the NLIVE written modules from HEAD (the list head loaded
   once, so that every pass sees the same modules), then the retained
   ones.  */
void tally_rt_put_records (struct tally_rt_writer *w,
                           struct tally_module *head, uint32_t nlive)
    TALLY_HIDDEN;
/* What a dump writes after the records, fixed once for its passes: MEAS
   if any module measures (tally_rt_any_measured), with the PAPI events
   (tally_rt_dump_events), FRMS of NFRAMES frames
   (tally_rt_frames_snapshot), PATH of the nodes tally_rt_any_paths counts
   (0: none), and their events.  */
int tally_rt_any_measured (struct tally_module *head) TALLY_HIDDEN;
unsigned tally_rt_dump_events (void) TALLY_HIDDEN;
uint32_t tally_rt_any_paths (void) TALLY_HIDDEN;
void tally_rt_put_extras (struct tally_rt_writer *w,
                          struct tally_module *head, uint32_t nlive, int meas,
                          unsigned nev, uint32_t nframes, uint32_t paths)
    TALLY_HIDDEN;
/* The dump lock (records.c explains; 0 or -1 with EBUSY), and its taking
   over in a fork child, whose other threads are gone.  */
int tally_rt_lock (int wait) TALLY_HIDDEN;
void tally_rt_unlock (void) TALLY_HIDDEN;
void tally_rt_lock_fork_child (void) TALLY_HIDDEN;
/* Module M's record in file format at MEM (NULL: only its size).  */
size_t tally_rt_module_record (const struct tally_module *m,
                               unsigned char *mem) TALLY_HIDDEN;
/* Keep M's record for every later dump (the dump lock held): where it
   is, or NULL if no memory could be had.  */
unsigned char *tally_rt_retain (struct tally_module *m) TALLY_HIDDEN;
/* The retained records: their number, the id of the first function of
   record R (UINT32_MAX if unknown), and their counters zeroed.  */
uint32_t tally_rt_retained_count (void) TALLY_HIDDEN;
uint32_t tally_rt_retained_id (uint32_t r) TALLY_HIDDEN;
void tally_rt_zero_retained (void) TALLY_HIDDEN;

/* merge.c: module records in file format, for merge-on-write.  */
/* Size of the module record at P, whose bytes there are AVAIL at most; 0
   if it is malformed or does not fit.  The tag is not checked.  */
size_t tally_rt_rec_size (const unsigned char *p, size_t avail) TALLY_HIDDEN;
/* Whether records A and B (both checked by tally_rt_rec_size) are the same
   build of the same unit: same ABI, checksum, flags, source, and the same
   function symbols and counter counts in the same order.  */
int tally_rt_rec_match (const unsigned char *a, const unsigned char *b)
    TALLY_HIDDEN;
/* Where a file's optional records after the modules are (offsets, 0 if
   absent), as tally_rt_check_file found them.  */
struct tally_rt_extras
{
  size_t meas, meas_values, frames, paths, pevt, end;
  uint32_t nmeas;   /* values per function in MEAS */
  uint32_t nevents; /* events per node in PEVT */
  uint32_t nframes; /* FRMS entries */
  uint32_t npaths;  /* PATH nodes, the root not counted */
};
/* Check the whole data file BUF (LEN bytes): NULL if valid, with the
   offset of its first module record in *RECORDS, their number in
   *NMODULES and the MEAS, FRMS and PATH records in *X; else why not.  */
const char *tally_rt_check_file (const unsigned char *buf, size_t len,
                                 size_t *records, uint32_t *nmodules,
                                 struct tally_rt_extras *x) TALLY_HIDDEN;
/* Read the regular file FD, SIZE bytes (> 0) by its fstat, into private
   anonymous memory *BUF (SIZE bytes, for munmap) with pread: 0; 1 (and no
   memory) if the file shrank or grew meanwhile (another writer, which the
   advisory lock does not stop); -1 with the errno value in *E if it could
   not be read.  A mapping of the file itself would turn a truncation by
   another process into SIGBUS.  */
int tally_rt_read_whole (int fd, size_t size, unsigned char **buf, int *e)
    TALLY_HIDDEN;
/* Drop the unknown and empty of the *N ranges at R and sort the rest
   (tally_id_range_find, tally/format.h, finds an id's).  */
void tally_rt_ranges (struct tally_id_range *r, uint32_t *n) TALLY_HIDDEN;
/* The index of ID among the N increasing frame ids at IDS, or UINT32_MAX.  */
uint32_t tally_rt_frame_index (const uint32_t *ids, uint32_t n, uint32_t id)
    TALLY_HIDDEN;
/* Scratch bytes check_extras needs for N records in BYTES bytes.  */
size_t tally_rt_extras_scratch (uint32_t nmodules, size_t bytes) TALLY_HIDDEN;

/* merge-extras.c: merge-on-write of MEAS, FRMS and PATH.  */
/* Find the records of *X from POS to END of BUF (written by this runtime,
   so not checked).  */
void tally_rt_extras_locate (const unsigned char *buf, size_t pos, size_t end,
                             struct tally_rt_extras *x) TALLY_HIDDEN;
/* NULL if the MEAS records of A and B (either may lack one) measure the
   same values, else a phrase saying how B's differ.  */
const char *tally_rt_meas_conflict (const unsigned char *a,
                                    const struct tally_rt_extras *ax,
                                    const unsigned char *b,
                                    const struct tally_rt_extras *bx)
    TALLY_HIDDEN;
/* This process's records at BUF (NREC module records, with NFNS functions
   and first function id IDS each): replace the measured values and the
   tree's values by what came since the last merged write, and note what
   was read as the next baseline.  */
void tally_rt_extras_delta (unsigned char *buf, const struct tally_rt_extras *x,
                            uint32_t nrec, const uint32_t *nfns,
                            const uint32_t *ids) TALLY_HIDDEN;
/* The write succeeded: the noted values are the baseline.  */
void tally_rt_extras_commit (void) TALLY_HIDDEN;
/* Forget the baseline (tally_reset, the fork child).  */
void tally_rt_extras_drop (void) TALLY_HIDDEN;
/* One side of a merge: BUF holds N module records (NFNS functions each)
   and the records of *X; record r goes to output record OUT[r].  */
struct tally_rt_xside
{
  const unsigned char *buf;
  const struct tally_rt_extras *x;
  uint32_t n;
  const uint32_t *nfns;
  const uint32_t *out;
};
/* The merged MEAS, FRMS and PATH records of the NOUT output records
   (OUT_NFNS functions each) into *RESULT (mmap'ed, the size returned);
   0 if there are none, (size_t) -1 if memory ran out.  */
size_t tally_rt_merge_extras (const struct tally_rt_xside *ours,
                              const struct tally_rt_xside *old, uint32_t nout,
                              const uint32_t *out_nfns, unsigned char **result)
    TALLY_HIDDEN;

/* merge-image.c: merge the data file IMAGE (LEN bytes, its trailer made
   here) into the file PATH by merge-on-write's rules (tally_write_image
   with %m).  0, or -1 (reported, errno set).  */
int tally_rt_merge_image (const unsigned char *image, size_t len,
                          const char *path) TALLY_HIDDEN;

/* shadow.c: measure=cycles.  The per-function totals indexed by function
   id, and their number in *NFNS (NULL and 0 until something measured).  */
const struct tally_meas *tally_rt_meas (uint32_t *nfns) TALLY_HIDDEN;
/* Zero them (tally_reset, the fork child).  */
void tally_rt_meas_zero (void) TALLY_HIDDEN;
/* Close the calling thread's open frames now (the exit dump).  */
void tally_rt_shadow_close_current (void) TALLY_HIDDEN;

/* shadow.c: the measuring entry and exit (FLAGS: TALLY_SF_*), for
   papi.c's hooks.  */
#define TALLY_STACK_FRAMES ((size_t) 1 << 19) /* frames per thread: as deep
                                                 as an 8 MiB stack of
                                                 16-byte frames (reserved,
                                                 not committed) */
/* Returns the frame pushed, NULL if none (a full stack).  */
struct tally_sframe *tally_rt_enter (struct tally_module *m, uint32_t fn,
                                     void *cfa, uint32_t flags) TALLY_HIDDEN;
/* The slow entry: stale frames closed, FN's frame pushed with FLAGS and
   (if PATHS) its call path, or NULL (a full stack, or inside the
   runtime's own calls); not counted.  CACHE, if not NULL, is the inline
   paths=on entry's node cache of FN (shadow.c explains).  */
struct tally_sframe *tally_rt_enter_slow (struct tally_fn *fn, void *cfa,
                                          int paths, uint32_t flags,
                                          uint64_t *cache) TALLY_HIDDEN;
/* struct tally_sframe.flags, the runtime's own beside TALLY_SF_*:
   exit=frames, the real return address is in the slot while a backtrace
   walks (tally_rt_frames_disarm).  */
#define TALLY_SF_DISARMED 0x100u
/* exit=frames: called by the return trampoline (frames.c).  */
uint64_t tally_rt_frames_exit (uint64_t cfa) TALLY_HIDDEN;
/* exit=frames: the calling thread's frame of the activation with CFA CFA,
   if it has a return frame (else NULL); its open frames, from *FIRST to
   __tally_ss.top (0 if it has no stack yet).  */
struct tally_sframe *tally_rt_frame_at (uint64_t cfa) TALLY_HIDDEN;
int tally_rt_frames_open (struct tally_sframe **first) TALLY_HIDDEN;
/* frames.c, for unwind.c (weak, a declared callback: frames.o is linked
   only into programs with exit=frames units): put the real return
   addresses back into the calling thread's return slots for a walk of
   its stack, and the trampoline again after it.  Disarm returns whether
   it did (a nested call while they are out does nothing).  */
int tally_rt_frames_disarm (void) TALLY_HIDDEN __attribute__ ((weak));
void tally_rt_frames_rearm (void) TALLY_HIDDEN __attribute__ ((weak));

/* x86-64: an entry point NAME that calls the C function TARGET after
   ARGS (moves from the saved registers: %rax at -8(%rbp), %rcx -16,
   %rdx -24), FAST first if it is not "" (TALLY_STUB_FAST), and
   preserves every register, vector registers included
   (XSAVE of what XCR0 enables, FXSAVE without OSXSAVE: which, and
   XSAVE's size, asked of CPUID on the first call only and kept in
   tally_rt_xsave_bytes, since CPUID traps to the hypervisor in a virtual
   machine and costs microseconds there), for the
   plugin's asm statements (shadow.c, frames.c), which call it 128 bytes
   below their stack pointer (the red zone): its unwind rows say so, so
   that an unwinder walking out of it (libunwind for the first call path
   of a thread) finds the caller's frame.  */
/* The XSAVE area's size for TALLY_PRESERVING_STUB: 0 until its first
   call, UINT32_MAX without OSXSAVE (threads that race to set it store the
   same value).  */
extern uint32_t tally_rt_xsave_bytes TALLY_HIDDEN;
/* FAST for TALLY_PRESERVING_STUB: first call the TALLY_GPR_ONLY function
   TARGET with ARGS, and return at once if it returns non-zero (it did
   the work without touching a vector register: no XSAVE, which costs
   some 200 ns in a virtual machine); "" for none.  */
#define TALLY_STUB_FAST(TARGET, ARGS)                                        \
  "\tandq $-16, %rsp\n"                                                       \
  ARGS                                                                         \
  "\tcall " TARGET "\n"                                                        \
  "\ttestl %eax, %eax\n"                                                      \
  "\tjnz 2f\n"
#define TALLY_PRESERVING_STUB(NAME, FAST, TARGET, ARGS)                              \
  "\t.text\n"                                                                  \
  "\t.globl " NAME "\n"                                                        \
  "\t.type " NAME ", @function\n" NAME ":\n"                                   \
  ".L" NAME ":\n"                                                              \
  "\t.cfi_startproc\n"                                                         \
  /* The caller stepped 128 bytes below its red zone before the call: the  \
     CFA is its stack pointer (libunwind takes the CFA for it).  */          \
  "\t.cfi_def_cfa_offset 136\n"                                                \
  "\t.cfi_offset %rip, -136\n"                                                 \
  "\tpushq %rbp\n"                                                             \
  "\t.cfi_def_cfa_offset 144\n"                                                \
  "\t.cfi_offset %rbp, -144\n"                                                 \
  "\tmovq %rsp, %rbp\n"                                                        \
  "\t.cfi_def_cfa_register %rbp\n"                                             \
  "\tpushq %rax\n\tpushq %rcx\n\tpushq %rdx\n\tpushq %rsi\n"                   \
  "\tpushq %rdi\n\tpushq %r8\n\tpushq %r9\n\tpushq %r10\n"                     \
  "\tpushq %r11\n\tpushq %rbx\n"                                               \
  FAST                                                                         \
  "\tmovl tally_rt_xsave_bytes(%rip), %ebx\n"                                 \
  "\ttestl %ebx, %ebx\n"                                                       \
  "\tjnz 3f\n"                                                                 \
  "\tmovl $1, %eax\n"                                                          \
  "\tcpuid\n"                                                                  \
  "\tmovl $-1, %ebx\n"                                                         \
  "\tbtl $27, %ecx\n"                                                          \
  "\tjnc 4f\n"                                                                 \
  "\tmovl $0xd, %eax\n"                                                        \
  "\txorl %ecx, %ecx\n"                                                        \
  "\tcpuid\n"                                                                  \
  "4:\n"                                                                       \
  "\tmovl %ebx, tally_rt_xsave_bytes(%rip)\n"                                 \
  "3:\n"                                                                       \
  "\tcmpl $-1, %ebx\n"                                                         \
  "\tje 1f\n"                                                                  \
  "\tsubq %rbx, %rsp\n"                                                        \
  "\tandq $-64, %rsp\n"                                                        \
  "\txorl %eax, %eax\n"                                                        \
  "\tmovq %rax, 512(%rsp)\n\tmovq %rax, 520(%rsp)\n"                           \
  "\tmovq %rax, 528(%rsp)\n\tmovq %rax, 536(%rsp)\n"                           \
  "\tmovq %rax, 544(%rsp)\n\tmovq %rax, 552(%rsp)\n"                           \
  "\tmovq %rax, 560(%rsp)\n\tmovq %rax, 568(%rsp)\n"                           \
  "\tmovl $-1, %eax\n"                                                         \
  "\tmovl $-1, %edx\n"                                                         \
  "\txsave (%rsp)\n"                                                           \
  ARGS                                                                         \
  "\tcall " TARGET "\n"                                                        \
  "\tmovl $-1, %eax\n"                                                         \
  "\tmovl $-1, %edx\n"                                                         \
  "\txrstor (%rsp)\n"                                                          \
  "\tjmp 2f\n"                                                                 \
  "1:\n"                                                                       \
  "\tsubq $512, %rsp\n"                                                        \
  "\tandq $-16, %rsp\n"                                                        \
  "\tfxsave (%rsp)\n"                                                          \
  ARGS                                                                         \
  "\tcall " TARGET "\n"                                                        \
  "\tfxrstor (%rsp)\n"                                                         \
  "2:\n"                                                                       \
  "\tleaq -80(%rbp), %rsp\n"                                                   \
  "\tpopq %rbx\n\tpopq %r11\n\tpopq %r10\n\tpopq %r9\n"                        \
  "\tpopq %r8\n\tpopq %rdi\n\tpopq %rsi\n\tpopq %rdx\n"                        \
  "\tpopq %rcx\n\tpopq %rax\n"                                                 \
  "\tpopq %rbp\n"                                                              \
  "\t.cfi_def_cfa %rsp, 136\n"                                                 \
  "\tret\n"                                                                    \
  "\t.cfi_endproc\n"                                                           \
  "\t.size " NAME ", .-" NAME "\n"

void tally_rt_exit (struct tally_module *m, uint32_t fn, void *cfa)
    TALLY_HIDDEN;

/* papi.c: measure=papi.  Weak: a static link pulls papi.o (and needs
   -lpapi) only when a measure=papi module calls __tally_enter_papi.  */
#define TALLY_PAPI_MAX 8 /* events at most */
/* Read the calling thread's events into EV; their number, or -1.  */
int tally_rt_papi_read (uint64_t *ev) TALLY_HIDDEN __attribute__ ((weak));
/* Note the events at the entry of frame IDX; 0, or -1 if this thread
   has no events.  */
int tally_rt_papi_push (size_t idx) TALLY_HIDDEN __attribute__ ((weak));
/* Close frame IDX of function FN, on path NODE (TALLY_PATH_NONE: none),
   with the events EV read now.  */
void tally_rt_papi_pop (size_t idx, uint32_t fn, uint32_t node,
                        const uint64_t *ev) TALLY_HIDDEN __attribute__ ((weak));
void tally_rt_papi_thread_gone (void) TALLY_HIDDEN __attribute__ ((weak));
/* The events measured (their names in NAMES), 0 if none.  */
unsigned tally_rt_papi_events (const char **names) TALLY_HIDDEN
    __attribute__ ((weak));
/* The totals of event EV for function FN.  */
void tally_rt_papi_totals (uint32_t fn, unsigned ev, uint64_t *incl,
                           uint64_t *excl) TALLY_HIDDEN __attribute__ ((weak));
void tally_rt_papi_zero (void) TALLY_HIDDEN __attribute__ ((weak));

/* paths.c: paths=on, the calling-context tree.  */
#define TALLY_PATH_NONE UINT32_MAX
/* The node field of a thread's sentinel frame (below its first): no
   inline entry's cache key (node + 1) is ever its, so an entry at the
   bottom of the stack always asks the runtime (and libunwind).  */
#define TALLY_PATH_BOTTOM (UINT32_MAX - 1)
/* The node of function FN called on the path of node PARENT (0: the
   root), made if new; TALLY_PATH_NONE if the tree is full.  */
uint32_t tally_rt_path_node (uint32_t parent, uint32_t fn) TALLY_HIDDEN;
/* The same once the tree is set up (tally_rt_paths_ready), in general
   registers only: for the inline entry's fast call (shadow.c).  */
int tally_rt_paths_ready (void) TALLY_HIDDEN TALLY_GPR_ONLY;
uint32_t tally_rt_path_find (uint32_t parent, uint32_t fn)
    TALLY_HIDDEN TALLY_GPR_ONLY;
/* NODE if it is a node of function FN, else 0 (the root).  */
uint32_t tally_rt_path_owner (uint32_t node, uint32_t fn)
    TALLY_HIDDEN TALLY_GPR_ONLY;
/* Add one closed activation to NODE (if it is FN's).  */
void tally_rt_path_add (uint32_t node, uint32_t fn, uint64_t d, uint64_t self)
    TALLY_HIDDEN;
/* measure=papi: add the NEV event deltas D (SELF without the callees') of
   one closed activation to NODE (if it is FN's).  */
void tally_rt_path_add_events (uint32_t node, uint32_t fn, unsigned nev,
                               const uint64_t *d, const uint64_t *self)
    TALLY_HIDDEN;
/* The events per node, [node][TALLY_PAPI_MAX] (inclusive, exclusive)
   pairs; NULL if none were added.  */
const uint64_t *tally_rt_path_events (void) TALLY_HIDDEN;
/* The nodes (*N of them, the root first), the depth limit and the number
   of activations lost to a full tree; NULL before any path.  */
const struct tally_path_node *tally_rt_paths (uint32_t *n, uint32_t *depth,
                                              uint64_t *lost) TALLY_HIDDEN;
void tally_rt_paths_zero (void) TALLY_HIDDEN;

/* unwind.c: libunwind.  Find it (linked, or loaded with dlopen by the
   static runtime); not async-signal-safe.  Whether it was found.  */
void tally_rt_unwind_load (void) TALLY_HIDDEN;
int tally_rt_have_unwind (void) TALLY_HIDDEN;
/* paths=on: the node under which an entry with CFA CFA that finds its
   thread's shadow stack empty goes: its unwound callers' innermost node,
   or 0 (the root) without libunwind.  */
uint32_t tally_rt_unwind_base (uint64_t cfa) TALLY_HIDDEN;
/* The dump: fix which outside frames this dump writes (their number);
   whether pseudo function ID is one of them; frame I's start address and
   name (LEN bytes, no NUL), 0 if it is not written.  */
uint32_t tally_rt_frames_snapshot (void) TALLY_HIDDEN;
int tally_rt_frame_dumped (uint32_t id) TALLY_HIDDEN;
int tally_rt_frame_get (uint32_t i, uint64_t *addr, const char **name,
                        uint32_t *len) TALLY_HIDDEN;

/* V in the data file's byte order (little-endian), for a store of 8
   aligned bytes.  */
static inline uint64_t
tally_rt_le64 (uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return __builtin_bswap64 (v);
#else
  return v;
#endif
}

/* counters=mapped: the bias of M's counters (0 for every other module).  */
static inline intptr_t
tally_rt_bias (const struct tally_module *m)
{
  if (!(m->flags & TALLY_MOD_COUNTERS_MAPPED) || !m->bias)
    return 0;
  return __atomic_load_n (m->bias, __ATOMIC_ACQUIRE);
}
/* Where the code of M updates counter array C, or visited bytes V.  */
static inline uint64_t *
tally_rt_live_counters (const struct tally_module *m, uint64_t *c)
{
  return (uint64_t *) (void *) ((char *) c + tally_rt_bias (m));
}
static inline unsigned char *
tally_rt_live_visited (const struct tally_module *m, unsigned char *v)
{
  return (unsigned char *) v + tally_rt_bias (m);
}

/* pattern.c: the TALLY_OUTPUT pattern (or the default), this program's
   path (readlink /proc/self/exe, "" if unknown), the pattern's expansion
   (%c sets *CONT, %m *MERGE; 0, or -1 if too long), and S appended to DST
   at POS (CAP bytes; the new POS, not NUL-terminated).  */
const char *tally_rt_output_pattern (void) TALLY_HIDDEN;
void tally_rt_program (char *program, size_t cap) TALLY_HIDDEN;
int tally_rt_expand_path (char *path, size_t cap, const char *pattern,
                          const char *program, int *merge, int *cont)
    TALLY_HIDDEN;
size_t tally_rt_append (char *dst, size_t pos, size_t cap, const char *s)
    TALLY_HIDDEN;
/* mapblob.c: module M's record from its compile-time blob (TALLY_MOD_BLOB)
   into SINK: to MEM if set, else to FD by writev (CRC advanced), else only
   counted (a sizing pass).  Returns 0, doing nothing, if M has no blob
   this runtime can use; then the caller writes the record itself.  */
struct tally_rt_sink
{
  unsigned char *mem; /* write here (at mem + total) if set */
  int fd;             /* else to this file, if >= 0 */
  uint64_t total;     /* bytes written so far */
  uint32_t crc;       /* CRC-32 of those bytes (file output only) */
  int failed;         /* errno of the first failure, 0 if none */
};
int tally_rt_blob_usable (const struct tally_module *m) TALLY_HIDDEN;
/* Whether M's blob agrees with its function table (O(functions)); asked
   once, at registration, whose answer tally_rt_blob_usable reads.  */
int tally_rt_blob_check (const struct tally_module *m) TALLY_HIDDEN;
int tally_rt_blob_put (const struct tally_module *m, struct tally_rt_sink *sink)
    TALLY_HIDDEN;
/* The sum of all of M's values, as tally_rt_fn_value reads them (dump.c's
   watch for counts made after the exit dump).  */
uint64_t tally_rt_values_sum (const struct tally_module *m) TALLY_HIDDEN;
/* For that watch at the exit dump (dump.c): while a table of N is given
   (NULL: none), the blob writer stores the sum of the values of M it reads
   and writes in M's entry if that is pending (1; then 2).  The entries are
   in the order the dump writes the modules.  */
struct tally_rt_sum
{
  struct tally_module *m;
  uint64_t sum;
  int pending;
};
void tally_rt_blob_sums (struct tally_rt_sum *table, size_t n) TALLY_HIDDEN;
/* The entry of M among the N of TABLE, looked for from *CURSOR on, which
   then points after it (the entries are in list order: O(1) a module when
   they are taken in that order); NULL if M has none.  */
struct tally_rt_sum *tally_rt_sum_of (struct tally_rt_sum *table, size_t n,
                                      size_t *cursor,
                                      const struct tally_module *m)
    TALLY_HIDDEN;
/* CRC-32 arithmetic: A times B modulo the polynomial, and x^(8N) mod it
   (appending N bytes of CRC C to a CRC R: mulmod (shift (N), R) ^ C).  */
uint32_t tally_rt_crc_mulmod (uint32_t a, uint32_t b) TALLY_HIDDEN;
uint32_t tally_rt_crc_shift (uint64_t n) TALLY_HIDDEN;
/* crc32.c: A times B as tally_rt_crc_mulmod, by carry-less multiplication;
   0 if this machine has none.  */
int tally_crc32_mulmod_fast (uint32_t a, uint32_t b, uint32_t *out) TALLY_HIDDEN;
/* crc32.c: tally_crc32 (tally_rt_crc_mulmod (SHIFT, CRC) ^ SEG, BUF, LEN)
   in one call, by carry-less multiplication, which is there if
   tally_crc32_append_ok () (asked once a record).  */
int tally_crc32_append_ok (void) TALLY_HIDDEN;
uint32_t tally_crc32_append (uint32_t crc, uint32_t shift, uint32_t seg,
                             const void *buf, size_t len) TALLY_HIDDEN;
/* rank.c: the job rank and size from the launcher's environment (%r,
   %R), decimal into DIGITS; 0 outside a job.  */
int tally_rt_job_rank (char digits[24]) TALLY_HIDDEN;
int tally_rt_job_size (char digits[24]) TALLY_HIDDEN;
#define TALLY_DEFAULT_OUTPUT "tally.%p.data"

/* outname.c: where a finished data file goes.  UNIQUE (a pattern with %p
   and no merge, tally_rt_pattern_unique): never over another process's
   file; the name taken is then tally_rt_placed ().  */
int tally_rt_pattern_unique (const char *pattern, int merge) TALLY_HIDDEN;
int tally_rt_place (const char *tmp, const char *path, int unique) TALLY_HIDDEN;
const char *tally_rt_placed (void) TALLY_HIDDEN;
/* A dump's file: create PATH's temporary (its name in TMP, "" when PATH
   is a FIFO or device written in place); the descriptor, or -1 (reported).
   Then, its records written through W, add the trailer and put it in
   place (UNIQUE as above): 0, or -1 (reported, errno set, TMP removed).  */
int tally_rt_open_tmp (const char *path, char *tmp, size_t cap) TALLY_HIDDEN;
int tally_rt_finish_file (struct tally_rt_writer *w, uint64_t file_size,
                          const char *tmp, const char *path, int unique)
    TALLY_HIDDEN;

/* merge-write.c: merge-on-write (TALLY_OUTPUT with %m).  Write this
   process's records (NLIVE live modules from HEAD, and the retained ones)
   into PATH, merged with what it holds (0, or -1 reported, errno set);
   make the record REC of M just retained relative to the last merged
   write; forget that write (tally_reset, the fork child).  */
int tally_rt_merge_dump (int at_exit, const char *path, const char *program,
                         struct tally_module *head, uint32_t nlive)
    TALLY_HIDDEN;
void tally_rt_merge_retained (const struct tally_module *m, unsigned char *rec)
    TALLY_HIDDEN;
void tally_rt_merge_drop (void) TALLY_HIDDEN;
/* Steps 2 and 3 of a merge, which merge-image.c shares: the existing
   file of a merge is its bytes (private memory for munmap, NULL if none),
   their number, the offset of its first module record, their number, its
   MEAS, FRMS and PATH records.  */
struct tally_rt_oldfile
{
  unsigned char *buf;
  size_t len, rec;
  uint32_t n;
  struct tally_rt_extras x;
};
/* Lock PATH.lock, then read and check the existing PATH into *OLD, to
   merge the records OURS (their extras OX) into it.  One that is not a
   regular file of this user, damaged, or measuring other values than OURS
   is moved aside (reported; TMP, CAP bytes, holds its new name) and *OLD
   left empty.  The lock's descriptor (to close after the rename), or -1
   with the errno value in *E (reported, but ENAMETOOLONG: no data
   written) and *OLD empty.  */
int tally_rt_merge_begin (const char *path, const unsigned char *ours,
                          const struct tally_rt_extras *ox,
                          struct tally_rt_oldfile *old, char *tmp,
                          size_t cap, int *e) TALLY_HIDDEN;
/* Step 4's end: the merged MEAS, FRMS and PATH records of OURS and of
   *OLD (its record r, of OLD_NFNS[r] functions, goes to output record
   OLD_OUT[r]) for the NOUT output records (OUT_NFNS functions each) into
   *XBUF, *XLEN bytes (tally_rt_merge_extras).  0, or -1 if memory ran out
   (reported as PATH's, *XLEN 0, *E ENOMEM).  */
int tally_rt_merge_old_extras (const struct tally_rt_xside *ours,
                               const struct tally_rt_oldfile *old,
                               const uint32_t *old_nfns,
                               const uint32_t *old_out, uint32_t nout,
                               const uint32_t *out_nfns, const char *path,
                               unsigned char **xbuf, size_t *xlen, int *e)
    TALLY_HIDDEN;
/* The end of a merge, written or not: close the lock LFD (if >= 0: after
   the rename), unmap *OLD's bytes and XBUF (XLEN bytes: the merged MEAS,
   FRMS and PATH records, if any).  */
void tally_rt_merge_end (int lfd, struct tally_rt_oldfile *old,
                         unsigned char *xbuf, size_t xlen) TALLY_HIDDEN;

/* continuous.c: continuous output (TALLY_OUTPUT with %c).  All but
   register are called with the dump lock held.  */
/* Before M (counters=mapped) joins the list: decide on continuous output
   (first time), then move M's counters into a region of the file.  */
void tally_rt_cont_register (struct tally_module *m) TALLY_HIDDEN;
/* Whether M's counts are in a region (and so not in the dump's image).  */
int tally_rt_cont_mapped (const struct tally_module *m) TALLY_HIDDEN;
/* M unregisters; whether its counts were in a region (they stay there).  */
int tally_rt_cont_gone (const struct tally_module *m) TALLY_HIDDEN;
/* Whether dumps go into the continuous file, and its path.  */
int tally_rt_cont_on (void) TALLY_HIDDEN;
const char *tally_rt_cont_path (void) TALLY_HIDDEN;
/* A dump's image of SIZE bytes: begin writes the DUMP chunk header and
   returns a descriptor positioned after it (-1: reported, errno set); end
   says whether the image was written whole (else it is cut off again).  */
int tally_rt_cont_dump_begin (uint64_t size) TALLY_HIDDEN;
void tally_rt_cont_dump_end (uint64_t size, int ok) TALLY_HIDDEN;
/* In a forked child, before its counters are zeroed: a file of its own
   mapped over the parent's regions.  */
void tally_rt_cont_fork_child (void) TALLY_HIDDEN;

/* What this copy of the runtime does itself, as opposed to the public
   entry points, which go to the primary copy (instance.c).  */
void tally_rt_register_local (struct tally_module *m) TALLY_HIDDEN;
void tally_rt_unregister_local (struct tally_module *m) TALLY_HIDDEN;
void tally_rt_reset_local (void) TALLY_HIDDEN;
void tally_rt_pin_local (void) TALLY_HIDDEN;
/* Pins this copy's object (tally_rt_pin_local) if it was linked without
   start files (sys.h: tally_rt_sys_atexit), before exit and fork
   handlers are registered.  */
void tally_rt_pin_without_dso_handle (void) TALLY_HIDDEN;

/* The entry points of one copy of the runtime.  A layout change bumps
   TALLY_RT_INSTANCE_VERSION.  */
#define TALLY_RT_INSTANCE_MAGIC 0x49524c54u /* "TLRI" */
#define TALLY_RT_INSTANCE_VERSION 3u
struct tally_rt_instance
{
  uint32_t magic;
  uint32_t version;
  void (*register_module) (struct tally_module *m);
  void (*unregister_module) (struct tally_module *m);
  int (*dump) (int at_exit);
  void (*reset) (void);
  void (*pin) (void);
  void (*tls_attach) (struct tally_module *m);
  int (*exec_dump) (int done);
};

/* This copy's entry points.  */
extern const struct tally_rt_instance tally_rt_self TALLY_HIDDEN;

/* The copy that keeps the process's modules and writes its data file: the
   first one loaded.  */
const struct tally_rt_instance *tally_rt_primary (void) TALLY_HIDDEN;

#endif /* TALLY_RT_H */
