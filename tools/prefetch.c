/* prefetch.c - `tally merge -j N`: N - 1 worker threads read and check
 * (CRC, every bound) the next files while the main thread adds the
 * previous ones to the result, in the order given, so the output is the
 * same for every N.  A window of 2 x N slots bounds the memory: at most
 * that many parsed files wait to be taken.  */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch.h"

struct slot
{
  struct tally_data d;
  char err[256];
  int rc;
  int ready;
};

struct tally_prefetch
{
  const char *const *paths;
  size_t n;
  size_t next;  /* next index a worker takes */
  size_t taken; /* next index the consumer takes */
  int stop;
  size_t window;
  struct slot *slots;
  int nthreads;
  pthread_t *threads;
  pthread_mutex_t lock;
  pthread_cond_t cond;
};

static void *
worker (void *arg)
{
  struct tally_prefetch *p = arg;
  pthread_mutex_lock (&p->lock);
  for (;;)
    {
      while (!p->stop && p->next < p->n && p->next >= p->taken + p->window)
        pthread_cond_wait (&p->cond, &p->lock);
      if (p->stop || p->next >= p->n)
        break;
      size_t i = p->next++;
      pthread_mutex_unlock (&p->lock);
      struct slot s;
      s.rc = tally_read_file (p->paths[i], &s.d, s.err, sizeof s.err);
      s.ready = 1;
      pthread_mutex_lock (&p->lock);
      p->slots[i % p->window] = s;
      pthread_cond_broadcast (&p->cond);
    }
  pthread_mutex_unlock (&p->lock);
  return NULL;
}

struct tally_prefetch *
tally_prefetch_start (const char *const *paths, size_t n, int jobs)
{
  struct tally_prefetch *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  p->paths = paths;
  p->n = n;
  p->nthreads = jobs > 1 ? jobs - 1 : 0;
  p->window = 2 * (size_t) (jobs > 1 ? jobs : 1);
  p->slots = calloc (p->window, sizeof *p->slots);
  p->threads = calloc ((size_t) p->nthreads + 1, sizeof *p->threads);
  if (!p->slots || !p->threads)
    {
      free (p->slots);
      free (p->threads);
      free (p);
      return NULL;
    }
  pthread_mutex_init (&p->lock, NULL);
  pthread_cond_init (&p->cond, NULL);
  for (int t = 0; t < p->nthreads; t++)
    if (pthread_create (&p->threads[t], NULL, worker, p) != 0)
      {
        p->nthreads = t; /* fewer threads; the consumer reads the rest */
        break;
      }
  return p;
}

int
tally_prefetch_next (struct tally_prefetch *p, struct tally_data *d,
                     char *err, size_t errlen)
{
  pthread_mutex_lock (&p->lock);
  size_t i = p->taken;
  struct slot *s = &p->slots[i % p->window];
  if (p->nthreads == 0 || (p->next <= i && !s->ready))
    {
      /* No worker has it: read it here.  */
      if (p->next <= i)
        p->next = i + 1;
      pthread_mutex_unlock (&p->lock);
      int rc = tally_read_file (p->paths[i], d, err, errlen);
      pthread_mutex_lock (&p->lock);
      p->taken++;
      pthread_cond_broadcast (&p->cond);
      pthread_mutex_unlock (&p->lock);
      return rc;
    }
  while (!s->ready)
    pthread_cond_wait (&p->cond, &p->lock);
  *d = s->d;
  int rc = s->rc;
  if (rc != 0)
    {
      size_t k = strlen (s->err);
      if (k >= errlen)
        k = errlen - 1;
      memcpy (err, s->err, k);
      err[k] = 0;
    }
  memset (s, 0, sizeof *s);
  p->taken++;
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
  return rc;
}

void
tally_prefetch_end (struct tally_prefetch *p)
{
  if (!p)
    return;
  pthread_mutex_lock (&p->lock);
  p->stop = 1;
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
  for (int t = 0; t < p->nthreads; t++)
    pthread_join (p->threads[t], NULL);
  for (size_t i = 0; i < p->window; i++)
    if (p->slots[i].ready && p->slots[i].rc == 0)
      tally_data_free (&p->slots[i].d);
  pthread_mutex_destroy (&p->lock);
  pthread_cond_destroy (&p->cond);
  free (p->slots);
  free (p->threads);
  free (p);
}
