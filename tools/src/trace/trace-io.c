// SPDX-License-Identifier: GPL-2.0
/*
 * Trace files as plain, zstd or gzip byte streams (trace-io.h). Streaming
 * both ways: nothing holds more than one buffer of a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "trace-format.h"
#include "trace-io.h"

#define BUF_SIZE	(256 * 1024)

int tr_compress_parse(const char *s, enum tr_compress *c)
{
	if (!strcmp(s, "none") || !strcmp(s, "off"))
		*c = TR_PLAIN;
	else if (!strcmp(s, "zstd"))
		*c = TR_ZSTD;
	else if (!strcmp(s, "gzip"))
		*c = TR_GZIP;
	else
		return -1;
	return 0;
}

const char *tr_compress_name(enum tr_compress c)
{
	return c == TR_ZSTD ? "zstd" : c == TR_GZIP ? "gzip" : "none";
}

const char *tr_compress_suffix(enum tr_compress c)
{
	return c == TR_ZSTD ? ".zst" : c == TR_GZIP ? ".gz" : "";
}

/* ------------------------------------------------------------ sinks */

struct tr_sink {
	enum tr_compress c;
	int fd;
	gzFile gz;
	ZSTD_CCtx *zc;
	unsigned char *out;	/* zstd's output buffer */
	size_t out_size;
	uint64_t bytes;
};

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

struct tr_sink *tr_sink_open(const char *path, enum tr_compress c, int level)
{
	struct tr_sink *s = calloc(1, sizeof(*s));
	char mode[8];

	if (!s)
		return NULL;
	s->c = c;
	s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (s->fd < 0)
		goto fail;
	if (c == TR_GZIP) {
		snprintf(mode, sizeof(mode), "wb%d", level > 0 && level <= 9 ? level : 1);
		s->gz = gzdopen(dup(s->fd), mode);
		if (!s->gz) {
			errno = ENOMEM;
			goto fail;
		}
		gzbuffer(s->gz, BUF_SIZE);
	} else if (c == TR_ZSTD) {
		s->zc = ZSTD_createCCtx();
		s->out_size = ZSTD_CStreamOutSize();
		s->out = malloc(s->out_size);
		if (!s->zc || !s->out) {
			errno = ENOMEM;
			goto fail;
		}
		ZSTD_CCtx_setParameter(s->zc, ZSTD_c_compressionLevel,
				       level > 0 ? level : 1);
	}
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	ZSTD_freeCCtx(s->zc);
	free(s->out);
	free(s);
	return NULL;
}

/* Run the zstd stream over in (NULL: end it) and write what comes out. */
static int zstd_pump(struct tr_sink *s, const void *buf, size_t n,
		     ZSTD_EndDirective end)
{
	ZSTD_inBuffer in = { buf, n, 0 };
	size_t left;

	do {
		ZSTD_outBuffer out = { s->out, s->out_size, 0 };

		left = ZSTD_compressStream2(s->zc, &out, &in, end);
		if (ZSTD_isError(left)) {
			errno = EIO;
			return -1;
		}
		if (write_all(s->fd, s->out, out.pos))
			return -1;
		s->bytes += out.pos;
	} while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

int tr_sink_write(struct tr_sink *s, const void *buf, size_t n)
{
	if (!n)
		return 0;
	if (s->c == TR_GZIP) {
		if (gzwrite(s->gz, buf, (unsigned int)n) != (int)n) {
			errno = errno ? errno : EIO;
			return -1;
		}
		return 0;
	}
	if (s->c == TR_ZSTD)
		return zstd_pump(s, buf, n, ZSTD_e_continue);
	if (write_all(s->fd, buf, n))
		return -1;
	s->bytes += n;
	return 0;
}

uint64_t tr_sink_bytes(const struct tr_sink *s)
{
	struct stat st;

	if (s->c == TR_GZIP)
		return fstat(s->fd, &st) ? 0 : (uint64_t)st.st_size;
	return s->bytes;
}

int tr_sink_close(struct tr_sink *s)
{
	int rc = 0, e = 0;

	if (s->c == TR_GZIP && gzclose(s->gz) != Z_OK) {
		rc = -1;
		e = EIO;
	}
	if (s->c == TR_ZSTD && zstd_pump(s, NULL, 0, ZSTD_e_end)) {
		rc = -1;
		e = errno;
	}
	if (fsync(s->fd) && !rc) {
		rc = -1;
		e = errno;
	}
	if (close(s->fd) && !rc) {
		rc = -1;
		e = errno;
	}
	ZSTD_freeCCtx(s->zc);
	free(s->out);
	free(s);
	errno = e;
	return rc;
}

/* ------------------------------------------------------------ sources */

struct tr_source {
	enum tr_compress c;
	int fd;
	z_stream *zs;		/* gzip */
	int zend;		/* gzip: the stream's end was seen */
	ZSTD_DCtx *zd;
	unsigned char *in;	/* compressed bytes read ahead */
	ZSTD_inBuffer zin;
	size_t zlast;		/* ZSTD_decompressStream's last hint: 0 = frame done */
	int eof;
	uint64_t pos, size;
	unsigned char peek[4];
	size_t npeek;		/* plain: bytes of peek not yet returned */
};

struct tr_source *tr_source_open(const char *path)
{
	struct tr_source *s = calloc(1, sizeof(*s));
	struct stat st;
	ssize_t n = 0;

	if (!s)
		return NULL;
	s->fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(0);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	if (!fstat(s->fd, &st) && S_ISREG(st.st_mode))
		s->size = st.st_size;
	while (s->npeek < 4) {
		n = read(s->fd, s->peek + s->npeek, 4 - s->npeek);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		s->npeek += n;
	}
	if (n < 0)
		goto fail;
	if (s->npeek >= 2 && s->peek[0] == 0x1f && s->peek[1] == 0x8b)
		s->c = TR_GZIP;
	else if (s->npeek == 4 && tr_get32(s->peek) == ZSTD_MAGICNUMBER)
		s->c = TR_ZSTD;
	if (s->c != TR_PLAIN) {
		s->in = malloc(BUF_SIZE);
		if (!s->in) {
			errno = ENOMEM;
			goto fail;
		}
		memcpy(s->in, s->peek, s->npeek);
	}
	if (s->c == TR_GZIP) {
		s->zs = calloc(1, sizeof(*s->zs));
		if (!s->zs || inflateInit2(s->zs, 16 + MAX_WBITS) != Z_OK) {
			free(s->zs);
			s->zs = NULL;
			errno = ENOMEM;
			goto fail;
		}
		s->zs->next_in = s->in;
		s->zs->avail_in = s->npeek;
		s->npeek = 0;
	} else if (s->c == TR_ZSTD) {
		s->zd = ZSTD_createDCtx();
		if (!s->zd) {
			errno = ENOMEM;
			goto fail;
		}
		s->zin.src = s->in;
		s->zin.size = s->npeek;
		s->npeek = 0;
		s->zlast = 1;
	}
	s->pos = 4;
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	free(s->in);
	ZSTD_freeDCtx(s->zd);
	free(s);
	return NULL;
}

enum tr_compress tr_source_compress(const struct tr_source *s)
{
	return s->c;
}

static long read_plain(struct tr_source *s, void *buf, size_t n)
{
	size_t got = 0;

	if (s->npeek) {
		got = n < s->npeek ? n : s->npeek;
		memcpy(buf, s->peek, got);
		memmove(s->peek, s->peek + got, s->npeek - got);
		s->npeek -= got;
	}
	while (got < n) {
		ssize_t r = read(s->fd, (char *)buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (!r)
			break;
		got += r;
		s->pos += r;
	}
	return (long)got;
}

/* Refill the compressed input: 0, or -1 with *why set. */
static int refill(struct tr_source *s, const char **why)
{
	ssize_t r;

	do
		r = read(s->fd, s->in, BUF_SIZE);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		*why = strerror(errno);
		return -1;
	}
	s->eof = !r;
	s->pos += r;
	return (int)r;
}

static long read_zstd(struct tr_source *s, void *buf, size_t n, const char **why)
{
	ZSTD_outBuffer out = { buf, n, 0 };

	while (out.pos < out.size) {
		if (s->zin.pos == s->zin.size && !s->eof) {
			int got = refill(s, why);

			if (got < 0)
				return -1;
			s->zin.size = got;
			s->zin.pos = 0;
		}
		if (s->zin.pos == s->zin.size && s->eof) {
			if (s->zlast) {
				*why = "the zstd stream is truncated";
				return -1;
			}
			break;
		}
		s->zlast = ZSTD_decompressStream(s->zd, &out, &s->zin);
		if (ZSTD_isError(s->zlast)) {
			*why = ZSTD_getErrorName(s->zlast);
			return -1;
		}
	}
	return (long)out.pos;
}

static long read_gzip(struct tr_source *s, void *buf, size_t n, const char **why)
{
	z_stream *z = s->zs;
	int r;

	z->next_out = buf;
	z->avail_out = (uInt)n;
	while (z->avail_out && !s->zend) {
		if (!z->avail_in && !s->eof) {
			int got = refill(s, why);

			if (got < 0)
				return -1;
			z->next_in = s->in;
			z->avail_in = got;
		}
		if (!z->avail_in && s->eof) {
			*why = "the gzip stream is truncated";
			return -1;
		}
		r = inflate(z, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			s->zend = 1;
		} else if (r != Z_OK && r != Z_BUF_ERROR) {
			*why = z->msg ? z->msg : "the gzip stream is corrupt";
			return -1;
		}
	}
	return (long)(n - z->avail_out);
}

long tr_source_read(struct tr_source *s, void *buf, size_t n, const char **why)
{
	long r;

	*why = NULL;
	if (s->c == TR_ZSTD)
		return read_zstd(s, buf, n, why);
	if (s->c == TR_GZIP)
		return read_gzip(s, buf, n, why);
	r = read_plain(s, buf, n);
	if (r < 0)
		*why = strerror(errno);
	return r;
}

uint64_t tr_source_file_pos(const struct tr_source *s)
{
	return s->pos;
}

uint64_t tr_source_file_size(const struct tr_source *s)
{
	return s->size;
}

void tr_source_close(struct tr_source *s)
{
	if (!s)
		return;
	if (s->zs) {
		inflateEnd(s->zs);
		free(s->zs);
	}
	if (s->fd >= 0)
		close(s->fd);
	ZSTD_freeDCtx(s->zd);
	free(s->in);
	free(s);
}
