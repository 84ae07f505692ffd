/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace files as byte streams, plain or compressed (zstd, gzip), for the
 * writer in the refcnt-truth plugin and refcnt-trace make (sinks) and for
 * every reader (sources). Compression is told apart by the stream's magic
 * bytes, never by the file's name. trace-io.c; needs libzstd and zlib.
 */
#ifndef REFCNT_TRACE_IO_H
#define REFCNT_TRACE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum tr_compress { TR_PLAIN, TR_ZSTD, TR_GZIP };

/* "none", "zstd", "gzip" -> *c: 0, or -1 for another name. */
int tr_compress_parse(const char *s, enum tr_compress *c);
const char *tr_compress_name(enum tr_compress c);
/* The file name suffix the writer adds: "", ".zst", ".gz". */
const char *tr_compress_suffix(enum tr_compress c);

struct tr_sink;

/*
 * Create path (truncating it) for writing, compressed as c (level: zstd
 * 1..19, gzip 1..9; 0 the library's fast default). NULL with errno set.
 */
struct tr_sink *tr_sink_open(const char *path, enum tr_compress c, int level);
/* Append n bytes: 0, or -1 with errno set (EIO for a compressor error). */
int tr_sink_write(struct tr_sink *s, const void *buf, size_t n);
/* Bytes written to the file so far (compressed). */
uint64_t tr_sink_bytes(const struct tr_sink *s);
/* End the stream, fsync and close: 0, or -1 with errno set. Frees s. */
int tr_sink_close(struct tr_sink *s);

struct tr_source;

/*
 * Open path ("-": standard input) for reading; the compression is found
 * from the first bytes. NULL with errno set.
 */
struct tr_source *tr_source_open(const char *path);
enum tr_compress tr_source_compress(const struct tr_source *s);
/*
 * Read up to n bytes: how many (0 at the end of the stream), or -1 with
 * *why set to the cause (a read error, a corrupt or truncated compressed
 * stream).
 */
long tr_source_read(struct tr_source *s, void *buf, size_t n, const char **why);
/* Bytes of the file consumed so far (compressed), for progress. */
uint64_t tr_source_file_pos(const struct tr_source *s);
/* The file's size, 0 when unknown (a pipe). */
uint64_t tr_source_file_size(const struct tr_source *s);
void tr_source_close(struct tr_source *s);

#endif /* REFCNT_TRACE_IO_H */
