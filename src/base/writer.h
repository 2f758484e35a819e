/* The one buffered writer of hakmem's reports: the statistics, the heap
 * profile, the configuration listing, malloc_stats and malloc_info. Bytes
 * gather in a buffer the caller gives (on its stack, or static under its
 * lock) and go out whole: to a file descriptor, each write retried after
 * EINTR and continued after a short write, or to a stdio FILE, so that they
 * keep their place among the program's own writes to it. It never
 * allocates. A leaf: the knobs (rank 2) print through it. */
#ifndef HK_WRITER_H
#define HK_WRITER_H

#include <stdio.h>
#include "base/config.h"

typedef struct {
  int fd;         /* the destination: fp when it is set, else fd */
  FILE *fp;
  char *buf;      /* the caller's buffer: size bytes, n of them waiting */
  size_t size, n;
  size_t total;   /* bytes taken since the start (columns are counted in it) */
  bool failed;    /* a write failed: what was waiting then, and all after, is dropped */
} hk_writer_t;

/* A writer onto fd, or onto fp, with the buffer buf of size bytes (at least
 * 2; the larger, the fewer writes: a record that fits is written at once). */
void hk_writer_to_fd(hk_writer_t *w, int fd, char *buf, size_t size);
void hk_writer_to_file(hk_writer_t *w, FILE *fp, char *buf, size_t size);

/* Append bytes, a string, or printf's output. A string of any length goes
 * out whole; one formatted piece longer than the whole buffer is cut at its
 * size, so long texts go through hk_write_str. */
void hk_write_bytes(hk_writer_t *w, const char *s, size_t n);
void hk_write_str(hk_writer_t *w, const char *s);
void hk_write_fmt(hk_writer_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write out what is waiting. true when every byte so far went out; false
 * after a failed write (errno says why where the OS said), when the output
 * is incomplete. */
bool hk_write_flush(hk_writer_t *w);

#endif
