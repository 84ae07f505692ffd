// SPDX-License-Identifier: GPL-2.0
/*
 * The heatmap writer of refcnt-run and refcnt-dump: a grid of counts
 * (rows x accessing node) drawn as SVG, written directly, or PNG through
 * libpng, with a built-in 5x7 bitmap font for the labels. Only the tools
 * that draw link it (and libpng, zlib).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <png.h>

#include "heatmap.h"

/* 5x7 glyphs of ASCII 32..126: one byte per row, bit 4 the leftmost. */
static const unsigned char rt_font[95][7] = {
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 },	/*   */
	{ 0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04 },	/* ! */
	{ 0x0a, 0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00 },	/* " */
	{ 0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a },	/* # */
	{ 0x04, 0x0f, 0x14, 0x0e, 0x05, 0x1e, 0x04 },	/* $ */
	{ 0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03 },	/* % */
	{ 0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d },	/* & */
	{ 0x04, 0x04, 0x04, 0x00, 0x00, 0x00, 0x00 },	/* quote */
	{ 0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02 },	/* ( */
	{ 0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08 },	/* ) */
	{ 0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00 },	/* star */
	{ 0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00 },	/* + */
	{ 0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08 },	/* , */
	{ 0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00 },	/* - */
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c },	/* . */
	{ 0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00 },	/* slash */
	{ 0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e },	/* 0 */
	{ 0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e },	/* 1 */
	{ 0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f },	/* 2 */
	{ 0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e },	/* 3 */
	{ 0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02 },	/* 4 */
	{ 0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e },	/* 5 */
	{ 0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e },	/* 6 */
	{ 0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08 },	/* 7 */
	{ 0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e },	/* 8 */
	{ 0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c },	/* 9 */
	{ 0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00 },	/* : */
	{ 0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x04, 0x08 },	/* ; */
	{ 0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02 },	/* < */
	{ 0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00 },	/* = */
	{ 0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08 },	/* > */
	{ 0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04 },	/* ? */
	{ 0x0e, 0x11, 0x01, 0x0d, 0x15, 0x15, 0x0e },	/* @ */
	{ 0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11 },	/* A */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e },	/* B */
	{ 0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e },	/* C */
	{ 0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c },	/* D */
	{ 0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f },	/* E */
	{ 0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10 },	/* F */
	{ 0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f },	/* G */
	{ 0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11 },	/* H */
	{ 0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e },	/* I */
	{ 0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c },	/* J */
	{ 0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11 },	/* K */
	{ 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f },	/* L */
	{ 0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11 },	/* M */
	{ 0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11 },	/* N */
	{ 0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e },	/* O */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10 },	/* P */
	{ 0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d },	/* Q */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11 },	/* R */
	{ 0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e },	/* S */
	{ 0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04 },	/* T */
	{ 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e },	/* U */
	{ 0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04 },	/* V */
	{ 0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a },	/* W */
	{ 0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11 },	/* X */
	{ 0x11, 0x11, 0x11, 0x0a, 0x04, 0x04, 0x04 },	/* Y */
	{ 0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f },	/* Z */
	{ 0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e },	/* [ */
	{ 0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00 },	/* backslash */
	{ 0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e },	/* ] */
	{ 0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00 },	/* ^ */
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f },	/* _ */
	{ 0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00 },	/* ` */
	{ 0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f },	/* a */
	{ 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e },	/* b */
	{ 0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e },	/* c */
	{ 0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f },	/* d */
	{ 0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e },	/* e */
	{ 0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08 },	/* f */
	{ 0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e },	/* g */
	{ 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11 },	/* h */
	{ 0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e },	/* i */
	{ 0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c },	/* j */
	{ 0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12 },	/* k */
	{ 0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e },	/* l */
	{ 0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11 },	/* m */
	{ 0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11 },	/* n */
	{ 0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e },	/* o */
	{ 0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10 },	/* p */
	{ 0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01 },	/* q */
	{ 0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10 },	/* r */
	{ 0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e },	/* s */
	{ 0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06 },	/* t */
	{ 0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d },	/* u */
	{ 0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04 },	/* v */
	{ 0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a },	/* w */
	{ 0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11 },	/* x */
	{ 0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e },	/* y */
	{ 0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f },	/* z */
	{ 0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02 },	/* { */
	{ 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04 },	/* | */
	{ 0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08 },	/* } */
	{ 0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00 },	/* ~ */
};

/* Drawing on a PNG raster or into an SVG stream, with the same layout. */
struct rt_canvas {
	FILE *svg;
	unsigned char *px;	/* PNG: w * h RGB */
	int w, h;
	int s;			/* text scale: glyphs are 5s x 7s pixels */
};

#define RGB(r, g, b)	(((unsigned int)(r) << 16) | ((g) << 8) | (b))
#define C_WHITE		RGB(255, 255, 255)
#define C_TEXT		RGB(32, 32, 32)
#define C_GRID		RGB(90, 90, 90)
#define C_ZERO		RGB(238, 238, 238)
#define C_MARK		RGB(230, 20, 40)

static void cv_fill(struct rt_canvas *cv, int x0, int y0, int x1, int y1,
		    unsigned int rgb)
{
	int x, y;

	if (cv->svg) {
		if (x1 > x0 && y1 > y0)
			fprintf(cv->svg, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\"/>\n",
				x0, y0, x1 - x0, y1 - y0, rgb);
		return;
	}
	if (x0 < 0)
		x0 = 0;
	if (y0 < 0)
		y0 = 0;
	if (x1 > cv->w)
		x1 = cv->w;
	if (y1 > cv->h)
		y1 = cv->h;
	for (y = y0; y < y1; y++)
		for (x = x0; x < x1; x++) {
			unsigned char *p = cv->px + ((size_t)y * cv->w + x) * 3;

			p[0] = rgb >> 16;
			p[1] = rgb >> 8;
			p[2] = rgb;
		}
}

/* Outline of width t inside [x0, x1) x [y0, y1). */
static void cv_outline(struct rt_canvas *cv, int x0, int y0, int x1, int y1,
		       int t, unsigned int rgb)
{
	if (cv->svg) {
		fprintf(cv->svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#%06x\" stroke-width=\"%d\"/>\n",
			x0 + t / 2.0, y0 + t / 2.0, x1 - x0 - (double)t,
			y1 - y0 - (double)t, rgb, t);
		return;
	}
	cv_fill(cv, x0, y0, x1, y0 + t, rgb);
	cv_fill(cv, x0, y1 - t, x1, y1, rgb);
	cv_fill(cv, x0, y0, x0 + t, y1, rgb);
	cv_fill(cv, x1 - t, y0, x1, y1, rgb);
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
				fputc(*s, f);
			else
				fputc('?', f);
		}
	}
}

/* Pixels a text of n characters takes. */
static int cv_text_w(const struct rt_canvas *cv, size_t n)
{
	return (int)n * 6 * cv->s;
}

/*
 * Text whose top is y, starting at x (align -1), centred on x (0) or
 * ending at x (1). At most max characters (0: all); longer ones are cut
 * with a '~'.
 */
static void cv_text(struct rt_canvas *cv, int x, int y, const char *str,
		    int align, size_t max, unsigned int rgb)
{
	char buf[256];
	size_t n = strlen(str);
	int w, i, r, c;

	if (max && n > max) {
		if (max >= sizeof(buf))
			max = sizeof(buf) - 1;
		memcpy(buf, str, max - 1);
		buf[max - 1] = '~';
		buf[max] = '\0';
		n = max;
	} else {
		snprintf(buf, sizeof(buf), "%s", str);
		n = strlen(buf);
	}
	w = cv_text_w(cv, n) - cv->s;
	if (align == 0)
		x -= w / 2;
	else if (align > 0)
		x -= w;
	if (cv->svg) {
		fprintf(cv->svg, "<text x=\"%d\" y=\"%d\" font-family=\"DejaVu Sans Mono,monospace\" font-size=\"%d\" textLength=\"%d\" fill=\"#%06x\">",
			x, y + 7 * cv->s, 10 * cv->s, w, rgb);
		xml_text(cv->svg, buf);
		fputs("</text>\n", cv->svg);
		return;
	}
	for (i = 0; buf[i]; i++) {
		unsigned char ch = buf[i];
		const unsigned char *g;

		if (ch < 32 || ch > 126)
			ch = '?';
		g = rt_font[ch - 32];
		for (r = 0; r < 7; r++)
			for (c = 0; c < 5; c++)
				if (g[r] & (0x10 >> c))
					cv_fill(cv, x + (i * 6 + c) * cv->s,
						y + r * cv->s,
						x + (i * 6 + c + 1) * cv->s,
						y + (r + 1) * cv->s, rgb);
	}
}

/* viridis, from 0 (few) to 1 (most). */
static unsigned int rt_colour(double t)
{
	static const double cp[][3] = {
		{ 68, 1, 84 }, { 72, 40, 120 }, { 62, 74, 137 },
		{ 49, 104, 142 }, { 38, 130, 142 }, { 31, 158, 137 },
		{ 53, 183, 121 }, { 110, 206, 88 }, { 181, 222, 43 },
		{ 253, 231, 37 },
	};
	const int n = sizeof(cp) / sizeof(cp[0]);
	double f;
	int i;

	if (t < 0)
		t = 0;
	if (t > 1)
		t = 1;
	f = t * (n - 1);
	i = (int)f;
	if (i >= n - 1)
		i = n - 2;
	f -= i;
	return RGB((int)lround(cp[i][0] + f * (cp[i + 1][0] - cp[i][0])),
		   (int)lround(cp[i][1] + f * (cp[i + 1][1] - cp[i][1])),
		   (int)lround(cp[i][2] + f * (cp[i + 1][2] - cp[i][2])));
}

static unsigned int rt_value_colour(double v, double vmax)
{
	if (v <= 0 || vmax <= 0)
		return C_ZERO;
	/* Log scale: counts span orders of magnitude. */
	return rt_colour(log1p(v) / log1p(vmax));
}

static unsigned int rt_group_colour(int g)
{
	static const unsigned int pal[] = {
		RGB(31, 119, 180), RGB(255, 127, 14), RGB(44, 160, 44),
		RGB(214, 39, 40), RGB(148, 103, 189), RGB(140, 86, 75),
		RGB(227, 119, 194), RGB(127, 127, 127), RGB(188, 189, 34),
		RGB(23, 190, 207),
	};

	return pal[g % (int)(sizeof(pal) / sizeof(pal[0]))];
}

static void rt_count_str(double v, char *buf, size_t size)
{
	if (v < 1e4)
		snprintf(buf, size, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, size, "%.0fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, size, "%.1fM", v / 1e6);
	else
		snprintf(buf, size, "%.1fG", v / 1e9);
}

static size_t rt_maxlen(char *const *labels, int n, size_t cap)
{
	size_t m = 0;
	int i;

	for (i = 0; labels && i < n; i++)
		if (labels[i] && strlen(labels[i]) > m)
			m = strlen(labels[i]);
	return m > cap ? cap : m;
}

#define ROW_LABEL_MAX	40
#define GROUP_LABEL_MAX	12

/* Where the parts of a heatmap go on a canvas, in pixels. */
struct rt_layout {
	int s, lh, pad;		/* text scale, line height, margin */
	int gx, gy, gw, gh;	/* the grid of cells */
	int lgx, bar_w;		/* the legend's colour bar */
	int band;		/* group band left of the grid */
	size_t rl, gl, cl;	/* longest row, group, column label */
	double vmax;
};

/* y of row r's top edge (r == rows: the grid's bottom). */
static int row_y(const struct rt_layout *l, const struct rt_heatmap *hm, int r)
{
	return l->gy + (int)((long long)r * l->gh / hm->rows);
}

/* x of column c's left edge. */
static int col_x(const struct rt_layout *l, const struct rt_heatmap *hm, int c)
{
	return l->gx + (int)((long long)c * l->gw / hm->cols);
}

/* Lay hm out on cv: 0, or -1 (printed) when the image is too small. */
static int rt_layout(const struct rt_canvas *cv, const struct rt_heatmap *hm,
		     struct rt_layout *l)
{
	const int s = cv->s;
	int i;

	l->s = s;
	l->lh = 11 * s;
	l->pad = 8 * s;
	l->bar_w = 14 * s;
	l->rl = rt_maxlen(hm->row_label, hm->rows, ROW_LABEL_MAX);
	l->gl = hm->row_group ? rt_maxlen(hm->group_name, hm->nr_groups,
					  GROUP_LABEL_MAX) : 0;
	l->cl = rt_maxlen(hm->col_label, hm->cols, 16);
	l->band = hm->row_group ? 6 * s : 0;
	l->vmax = 0;
	for (i = 0; i < hm->rows * hm->cols; i++)
		if (hm->v[i] > l->vmax)
			l->vmax = hm->v[i];
	l->gy = l->pad + l->lh + l->lh / 2 + l->lh + 2 * s;
	l->gh = cv->h - l->gy -
		(3 * s + l->lh + l->lh + (hm->note ? l->lh : 0) + l->pad);
	l->gx = l->pad + (l->gl ? cv_text_w(cv, l->gl) + 4 * s : 0) +
		(l->rl ? cv_text_w(cv, l->rl) + 4 * s : 0) + l->band + 2 * s;
	l->lgx = cv->w - l->pad - (l->bar_w + 6 * s + cv_text_w(cv, 8));
	l->gw = l->lgx - 10 * s - l->gx;
	if (l->gw < hm->cols || l->gh < hm->rows || l->gh < 4 * l->lh) {
		rt_err("a %dx%d image has no room for %d rows x %d columns of cells and their labels: make it larger (--width/--height) or use fewer rows (--rows)",
		       cv->w, cv->h, hm->rows, hm->cols);
		return -1;
	}
	return 0;
}

/* Title, the y axis name, the unit over the legend. */
static void draw_titles(struct rt_canvas *cv, const struct rt_heatmap *hm,
			const struct rt_layout *l)
{
	const int s = l->s, W = cv->w;

	cv_text(cv, l->pad, l->pad, hm->title ? hm->title : "", -1,
		(size_t)(W - 2 * l->pad) / (6 * s), C_TEXT);
	if (hm->ylabel)
		cv_text(cv, l->gx - l->band - 2 * s, l->pad + l->lh + l->lh / 2,
			hm->ylabel, 1, 0, C_TEXT);
	if (hm->unit)
		cv_text(cv, l->lgx, l->pad + l->lh + l->lh / 2, hm->unit, -1,
			(size_t)(W - l->lgx) / (6 * s), C_TEXT);
}

/* Column labels (as many as fit), the x axis name, the note. */
static void draw_below(struct rt_canvas *cv, const struct rt_heatmap *hm,
		       const struct rt_layout *l)
{
	const int s = l->s, W = cv->w, below = l->gy + l->gh + 3 * s;
	int c, step = (cv_text_w(cv, l->cl) + 4 * s) * hm->cols / l->gw + 1;

	for (c = 0; c < hm->cols; c += step)
		cv_text(cv, (col_x(l, hm, c) + col_x(l, hm, c + 1)) / 2,
			below, hm->col_label[c], 0, 16, C_TEXT);
	if (hm->xlabel)
		cv_text(cv, l->gx + l->gw / 2, below + l->lh, hm->xlabel, 0,
			0, C_TEXT);
	if (hm->note)
		cv_text(cv, l->pad, below + 2 * l->lh, hm->note, -1,
			(size_t)(W - 2 * l->pad) / (6 * s), C_TEXT);
}

/* Cell (r, c) in [x0, x1) x [y0, y1); SVG cells carry a tooltip. */
static void draw_cell(struct rt_canvas *cv, const struct rt_heatmap *hm,
		      const struct rt_layout *l, int r, int c, int x0, int y0,
		      int x1, int y1)
{
	double v = hm->v[(size_t)r * hm->cols + c];

	if (cv->svg && v > 0) {
		fprintf(cv->svg, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\"><title>",
			x0, y0, x1 - x0, y1 - y0, rt_value_colour(v, l->vmax));
		if (hm->row_label && hm->row_label[r])
			xml_text(cv->svg, hm->row_label[r]);
		fputs(" from ", cv->svg);
		xml_text(cv->svg, hm->col_label[c]);
		fprintf(cv->svg, ": %.0f</title></rect>\n", v);
	} else {
		cv_fill(cv, x0, y0, x1, y1, rt_value_colour(v, l->vmax));
	}
	if (hm->mark && hm->mark[(size_t)r * hm->cols + c] &&
	    x1 - x0 >= 3 && y1 - y0 >= 3)
		cv_outline(cv, x0, y0, x1, y1,
			   (x1 - x0 >= 12 && y1 - y0 >= 12) ? 2 * l->s : 1,
			   C_MARK);
}

/* The cells, a one-pixel gap between them when they are large. */
static void draw_cells(struct rt_canvas *cv, const struct rt_heatmap *hm,
		       const struct rt_layout *l)
{
	int r, c;

	for (r = 0; r < hm->rows; r++) {
		int y0 = row_y(l, hm, r), y1 = row_y(l, hm, r + 1);

		if (y1 - y0 >= 8)
			y1--;
		for (c = 0; c < hm->cols; c++) {
			int x0 = col_x(l, hm, c), x1 = col_x(l, hm, c + 1);

			if (x1 - x0 >= 8)
				x1--;
			draw_cell(cv, hm, l, r, c, x0, y0, x1, y1);
		}
	}
}

/* Row labels, as many as fit. */
static void draw_row_labels(struct rt_canvas *cv, const struct rt_heatmap *hm,
			const struct rt_layout *l)
{
	const int s = l->s, lh = l->lh, gh = l->gh;
	int r, step;

	step = (lh + (gh / hm->rows) - 1) / (gh / hm->rows ? gh / hm->rows : 1);
	if (gh / hm->rows == 0)
		step = (lh * hm->rows + gh - 1) / gh;
	if (step < 1)
		step = 1;
	for (r = 0; l->rl && r < hm->rows; r += step)
		if (hm->row_label[r])
			cv_text(cv, l->gx - l->band - 4 * s,
				(row_y(l, hm, r) + row_y(l, hm, r + 1)) / 2 - 7 * s / 2,
				hm->row_label[r], 1, ROW_LABEL_MAX, C_TEXT);
}

/* Groups of rows: coloured band, name (when it fits), separators. */
static void draw_groups(struct rt_canvas *cv, const struct rt_heatmap *hm,
			const struct rt_layout *l)
{
	const int s = l->s, bx = l->gx - l->band - 2 * s;
	int r, e, g, y0, y1, ty, last = -1000 * l->lh;

	for (r = 0; hm->row_group && r < hm->rows; r = e) {
		g = hm->row_group[r];
		for (e = r; e < hm->rows && hm->row_group[e] == g; e++)
			;
		y0 = row_y(l, hm, r);
		y1 = row_y(l, hm, e);
		if (g >= 0) {
			cv_fill(cv, bx, y0, l->gx - 2 * s, y1, rt_group_colour(g));
			ty = (y0 + y1) / 2 - 7 * s / 2;
			if (ty < y0)
				ty = y0;
			if (g < hm->nr_groups && hm->group_name[g] &&
			    ty >= last + l->lh) {
				cv_text(cv, l->pad, ty, hm->group_name[g], -1,
					GROUP_LABEL_MAX, rt_group_colour(g));
				last = ty;
			}
		}
		if (r > 0)
			cv_fill(cv, bx, y0 - (s > 1 ? 1 : 0), l->gx + l->gw,
				y0 + 1, C_GRID);
	}
}

/* Ticks of the legend's log scale at 1, 10, 100, ... and the maximum. */
static void draw_ticks(struct rt_canvas *cv, const struct rt_layout *l,
		       int by0, int by1)
{
	const int s = l->s, lgx = l->lgx, bar_w = l->bar_w;
	int ty, last = by1 + l->lh;
	double v, tv, lastv = -1;
	char buf[64];

	for (v = 1;; v *= 10) {
		tv = v > l->vmax ? l->vmax : v;
		ty = by1 - 1 - (int)lround(log1p(tv) / log1p(l->vmax) *
					   (by1 - by0 - 1));
		if (tv != lastv && ty <= last - l->lh &&
		    (tv == l->vmax || ty >= by0 + l->lh)) {
			rt_count_str(tv, buf, sizeof(buf));
			cv_fill(cv, lgx + bar_w, ty, lgx + bar_w + 3 * s, ty + 1,
				C_GRID);
			cv_text(cv, lgx + bar_w + 6 * s, ty - 7 * s / 2, buf, -1,
				8, C_TEXT);
			last = ty;
		}
		lastv = tv;
		if (v >= l->vmax)
			break;
	}
}

/* Legend: log colour bar, 0 below it. */
static void draw_legend(struct rt_canvas *cv, const struct rt_layout *l)
{
	const int s = l->s, lh = l->lh, lgx = l->lgx, bar_w = l->bar_w;
	int by0 = l->gy, by1 = l->gy + l->gh - 2 * lh, y;

	if (by1 - by0 < 2 * lh)
		by1 = l->gy + l->gh;
	if (l->vmax <= 0) {
		cv_fill(cv, lgx, by0, lgx + bar_w, by0 + lh, C_ZERO);
		cv_text(cv, lgx + bar_w + 4 * s, by0 + 2 * s, "none", -1, 0,
			C_TEXT);
		return;
	}
	for (y = by0; y < by1; y++) {
		double t = 1.0 - (double)(y - by0) / (by1 - by0 - 1);

		cv_fill(cv, lgx, y, lgx + bar_w, y + 1, rt_colour(t));
	}
	cv_outline(cv, lgx, by0, lgx + bar_w, by1, 1, C_GRID);
	draw_ticks(cv, l, by0, by1);
	if (by1 + lh + 2 * s <= l->gy + l->gh) {
		cv_fill(cv, lgx, by1 + lh / 2, lgx + bar_w, by1 + lh + lh / 2,
			C_ZERO);
		cv_text(cv, lgx + bar_w + 4 * s, by1 + lh / 2 + 2 * s, "0", -1,
			0, C_TEXT);
	}
}

static int rt_heatmap_draw(struct rt_canvas *cv, const struct rt_heatmap *hm)
{
	struct rt_layout l;

	if (rt_layout(cv, hm, &l))
		return -1;
	cv_fill(cv, 0, 0, cv->w, cv->h, C_WHITE);
	draw_titles(cv, hm, &l);
	draw_cells(cv, hm, &l);
	draw_row_labels(cv, hm, &l);
	draw_groups(cv, hm, &l);
	draw_below(cv, hm, &l);
	draw_legend(cv, &l);
	return 0;
}

static int rt_png_save(const char *path, const unsigned char *px, int w,
		       int h, const char *title)
{
	png_structp png;
	png_infop info;
	png_text text[2];
	FILE *volatile f;
	int y;

	f = fopen(path, "wb");
	if (!f) {
		rt_err("%s: %s", path, strerror(errno));
		return -1;
	}
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info) {
		rt_err("%s: libpng cannot start (out of memory)", path);
		png_destroy_write_struct(&png, NULL);
		fclose(f);
		return -1;
	}
	if (setjmp(png_jmpbuf(png))) {
		rt_err("%s: libpng failed to write the image", path);
		png_destroy_write_struct(&png, &info);
		fclose(f);
		unlink(path);
		return -1;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	memset(text, 0, sizeof(text));
	text[0].compression = PNG_TEXT_COMPRESSION_NONE;
	text[0].key = (char *)"Title";
	text[0].text = (char *)(title ? title : "refcnt heatmap");
	text[1].compression = PNG_TEXT_COMPRESSION_NONE;
	text[1].key = (char *)"Software";
	text[1].text = (char *)rt_prog;
	png_set_text(png, info, text, 2);
	png_write_info(png, info);
	for (y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep)(px + (size_t)y * w * 3));
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	if (fclose(f)) {
		rt_err("%s: %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

int rt_heatmap_alloc(struct rt_heatmap *hm, const struct rt_counters *c,
		     int rows)
{
	int i;

	memset(hm, 0, sizeof(*hm));
	hm->rows = rows;
	hm->cols = c->nr;
	hm->nr_groups = c->nr_cnodes;
	hm->v = calloc((size_t)rows * c->nr, sizeof(*hm->v));
	hm->mark = calloc((size_t)rows * c->nr, 1);
	hm->row_label = calloc(rows, sizeof(*hm->row_label));
	hm->row_group = calloc(rows, sizeof(*hm->row_group));
	hm->col_label = calloc(c->nr, sizeof(*hm->col_label));
	hm->group_name = calloc(c->nr_cnodes, sizeof(*hm->group_name));
	if (!hm->v || !hm->mark || !hm->row_label || !hm->row_group ||
	    !hm->col_label || !hm->group_name) {
		rt_heatmap_free(hm);
		return -1;
	}
	for (i = 0; i < c->nr; i++)
		hm->col_label[i] = c->label[i];
	hm->xlabel = "accessing node";
	hm->unit = "references";
	return 0;
}

void rt_heatmap_free(struct rt_heatmap *hm)
{
	int i;

	for (i = 0; hm->row_label && i < hm->rows; i++)
		free(hm->row_label[i]);
	for (i = 0; hm->group_name && i < hm->nr_groups; i++)
		free(hm->group_name[i]);
	free(hm->row_label);
	free(hm->group_name);
	free(hm->col_label);	/* its names are the counters' */
	free(hm->row_group);
	free(hm->mark);
	free(hm->v);
}

int rt_heatmap_name_ok(const char *path)
{
	const char *ext = strrchr(path, '.');

	return ext && (!strcasecmp(ext, ".svg") || !strcasecmp(ext, ".png"));
}

/* Open path as SVG or PNG, draw(cv, arg) on it, write it: 0 or -1. */
static int rt_canvas_write(const char *path, int width, int height,
			   const char *title,
			   int (*draw)(struct rt_canvas *cv, const void *arg),
			   const void *arg)
{
	struct rt_canvas cv = { .w = width, .h = height };
	int svg, err;

	svg = !strcasecmp(strrchr(path, '.'), ".svg");
	if (width < 64 || height < 64 || width > 16384 || height > 16384) {
		rt_err("image size %dx%d: width and height must be 64..16384 pixels",
		       width, height);
		return -1;
	}
	cv.s = (width >= 1600 && height >= 1000) ? 2 : 1;
	if (svg) {
		cv.svg = fopen(path, "w");
		if (!cv.svg) {
			rt_err("%s: %s", path, strerror(errno));
			return -1;
		}
		fprintf(cv.svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" shape-rendering=\"crispEdges\">\n<title>",
			width, height, width, height);
		xml_text(cv.svg, title);
		fputs("</title>\n", cv.svg);
		err = draw(&cv, arg);
		fputs("</svg>\n", cv.svg);
		if (fclose(cv.svg) && !err) {
			rt_err("%s: %s", path, strerror(errno));
			err = -1;
		}
		if (err)
			unlink(path);
		return err;
	}
	cv.px = malloc((size_t)width * height * 3);
	if (!cv.px) {
		rt_err("out of memory for a %dx%d image", width, height);
		return -1;
	}
	err = draw(&cv, arg);
	if (!err)
		err = rt_png_save(path, cv.px, width, height, title);
	free(cv.px);
	return err;
}

static int heatmap_draw(struct rt_canvas *cv, const void *arg)
{
	return rt_heatmap_draw(cv, arg);
}

int rt_heatmap_write(const struct rt_heatmap *hm, const char *path,
		     int width, int height)
{
	if (!rt_heatmap_name_ok(path)) {
		rt_err("%s: the heatmap's name must end in .svg or .png", path);
		return -1;
	}
	if (hm->rows <= 0 || hm->cols <= 0) {
		rt_err("%s: nothing to draw", path);
		return -1;
	}
	return rt_canvas_write(path, width, height,
			       hm->title ? hm->title : "refcnt heatmap",
			       heatmap_draw, hm);
}

/* ------------------------------------------------------------ bars */

/* A round step of about range / n: 1, 2 or 5 times a power of ten. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = 1;

	if (raw <= 0)
		return 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	if (raw > 5 * p)
		return 10 * p;
	if (raw > 2 * p)
		return 5 * p;
	if (raw > p)
		return 2 * p;
	return p;
}

static int bars_draw(struct rt_canvas *cv, const void *arg)
{
	const struct rt_bars *b = arg;
	const int s = cv->s, left = 80 * s, right = 20 * s, top = 30 * s;
	const int bottom = 50 * s;
	int pw = cv->w - left - right, ph = cv->h - top - bottom, i;
	double vmax = 0, step, t;
	char buf[64];

	if (pw < 10 || ph < 10) {
		rt_err("image too small for the chart");
		return -1;
	}
	for (i = 0; i < b->n; i++)
		if (b->v[i] > vmax)
			vmax = b->v[i];
	if (vmax <= 0)
		vmax = 1;
	step = nice_step(vmax, 5);
	vmax = ceil(vmax / step) * step;
	cv_fill(cv, 0, 0, cv->w, cv->h, C_WHITE);
	if (b->title)
		cv_text(cv, cv->w / 2, 8 * s, b->title, 0, 0, C_TEXT);
	/* the y axis: grid lines and counts */
	for (t = 0; t <= vmax + step / 2; t += step) {
		int y = top + ph - (int)(ph * t / vmax);

		cv_fill(cv, left, y, left + pw, y + 1, C_ZERO);
		rt_count_str(t, buf, sizeof(buf));
		cv_text(cv, left - 6 * s, y - 3 * s, buf, 1, 0, C_TEXT);
	}
	for (i = 0; i < b->n; i++) {
		int x0 = left + (int)((long long)pw * i / b->n);
		int x1 = left + (int)((long long)pw * (i + 1) / b->n);
		int y = top + ph - (int)(ph * b->v[i] / vmax);

		if (x1 - x0 > 2)
			x1--;
		if (x1 <= x0)
			x1 = x0 + 1;
		cv_fill(cv, x0, y, x1, top + ph, rt_colour(0.25));
	}
	cv_fill(cv, left, top, left + 1, top + ph, C_GRID);
	cv_fill(cv, left, top + ph, left + pw, top + ph + 1, C_GRID);
	/* the x axis: first and last bin, and the label */
	rt_count_str(b->x0, buf, sizeof(buf));
	cv_text(cv, left, top + ph + 6 * s, buf, -1, 0, C_TEXT);
	rt_count_str(b->x0 + b->xstep * b->n, buf, sizeof(buf));
	cv_text(cv, left + pw, top + ph + 6 * s, buf, 1, 0, C_TEXT);
	if (b->xlabel)
		cv_text(cv, left + pw / 2, top + ph + 24 * s, b->xlabel, 0, 0, C_TEXT);
	if (b->ylabel)
		cv_text(cv, 4 * s, top - 16 * s, b->ylabel, -1, 0, C_TEXT);
	return 0;
}

int rt_bars_write(const struct rt_bars *b, const char *path, int width,
		  int height)
{
	if (!rt_heatmap_name_ok(path)) {
		rt_err("%s: the chart's name must end in .svg or .png", path);
		return -1;
	}
	if (b->n <= 0) {
		rt_err("%s: nothing to draw", path);
		return -1;
	}
	return rt_canvas_write(path, width, height,
			       b->title ? b->title : "refcnt chart", bars_draw, b);
}
