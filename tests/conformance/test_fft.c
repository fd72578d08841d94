/* SPDX-License-Identifier: Apache-2.0 */
/* test_fft.c - FFT c2c/r2c/c2r in 1, 2 and 3 dimensions, batched, with
 * strides, distances and embeddings, in and out of place, forward and
 * inverse, every normalisation, against a naive double-precision DFT; bad
 * input; work in stream order. The plan cache's tests are in
 * test_fft_cache.c, in the same suite.
 *
 * Written against the default device type so every backend runs it.
 * Suite: fft (XDEV_CPU_DEVICES=2 for the per-device cases). */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_fft_common.h"

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static double rnd(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)((int64_t)(g_rng >> 40) - (1 << 23)) / (double)(1 << 23);
}

/* ------------------------------------------------------------- layouts */

/* One side of a transform as the test understands the documented layout. */
typedef struct side {
    int rank;
    int64_t dims[3], embed[3], stride, dist, elems; /* elems: logical per batch */
    bool cplx;
} side_t;

static side_t make_side(const xdev_fft_desc_t *d, bool input) {
    side_t s = {.rank = d->rank, .elems = 1};
    bool half = input ? d->type == XDEV_FFT_C2R : d->type == XDEV_FFT_R2C;
    s.cplx = input ? d->type != XDEV_FFT_R2C : d->type != XDEV_FFT_C2R;
    const int64_t *embed = input ? d->inembed : d->onembed;
    int64_t stride = input ? d->istride : d->ostride, dist = input ? d->idist : d->odist;
    int64_t span = 1;
    for (int i = 0; i < d->rank; i++) {
        s.dims[i] = d->n[i];
        if (half && i == d->rank - 1) s.dims[i] = d->n[i] / 2 + 1;
        s.embed[i] = i > 0 && embed[i] ? embed[i] : s.dims[i];
        s.elems *= s.dims[i];
        span *= s.embed[i];
    }
    s.stride = stride ? stride : 1;
    s.dist = dist ? dist : span * s.stride;
    return s;
}

/* Offset (in elements) of logical element `flat` of batch b. */
static int64_t offset(const side_t *s, int64_t b, int64_t flat) {
    int64_t off = 0, pitch = s->stride;
    for (int i = s->rank - 1; i >= 0; i--) {
        off += (flat % s->dims[i]) * pitch;
        flat /= s->dims[i];
        pitch *= s->embed[i];
    }
    return b * s->dist + off;
}

static int64_t buffer_elems(const side_t *s, int64_t batch) {
    return offset(s, batch - 1, s->elems - 1) + 1;
}

/* Naive DFT of one batch over a rank-r grid `n` (logical complex arrays). */
static void dft(int rank, const int64_t *n, int sign, const double complex *in,
                double complex *out) {
    int64_t total = 1;
    for (int i = 0; i < rank; i++)
        total *= n[i];
    for (int64_t k = 0; k < total; k++) {
        double complex acc = 0;
        for (int64_t x = 0; x < total; x++) {
            double phase = 0;
            for (int64_t kk = k, xx = x, i = rank - 1; i >= 0; i--) {
                phase += (double)((kk % n[i]) * (xx % n[i]) % n[i]) / (double)n[i];
                kk /= n[i], xx /= n[i];
            }
            acc += in[x] * cexp(sign * 2.0 * M_PI * I * phase);
        }
        out[k] = acc;
    }
}

/* Logical index in the full grid of element `flat` of the half (last dim n/2+1) grid. */
static int64_t half_to_full(int rank, const int64_t *n, int64_t flat) {
    int64_t h = n[rank - 1] / 2 + 1, last = flat % h, rest = flat / h;
    return rest * n[rank - 1] + last;
}

typedef struct fcase {
    xdev_fft_type_t type;
    int rank;
    int64_t n[3], batch;
    int64_t inembed[3], istride, idist, onembed[3], ostride, odist;
    bool in_place;
} fcase_t;

static xdev_fft_desc_t desc_of(const fcase_t *c, xdev_fft_precision_t prec) {
    xdev_fft_desc_t d = xdev_fft_desc_basic(c->type, prec, c->rank, c->n, c->batch);
    memcpy(d.inembed, c->inembed, sizeof d.inembed);
    memcpy(d.onembed, c->onembed, sizeof d.onembed);
    d.istride = c->istride, d.idist = c->idist, d.ostride = c->ostride, d.odist = c->odist;
    return d;
}

static void store(bool f32, void *buf, int64_t i, double v) {
    if (f32)
        ((float *)buf)[i] = (float)v;
    else
        ((double *)buf)[i] = v;
}

static double load(bool f32, const void *buf, int64_t i) {
    return f32 ? ((const float *)buf)[i] : ((const double *)buf)[i];
}

/* Run one transform and compare with the reference. Returns nothing; fails
 * the test on the first element off by more than tol * sum|input| of its batch. */
static void run_fft(const fcase_t *c, xdev_fft_precision_t prec, xdev_fft_direction_t dir,
                    xdev_fft_norm_t norm) {
    xdev_fft_desc_t d = desc_of(c, prec);
    bool f32 = prec == XDEV_FFT_F32;
    side_t si = make_side(&d, true), so = make_side(&d, false);
    int64_t total = 1;
    for (int i = 0; i < c->rank; i++)
        total *= c->n[i];
    size_t rs = f32 ? 4 : 8;
    size_t in_bytes = (size_t)buffer_elems(&si, c->batch) * rs * (si.cplx ? 2 : 1);
    size_t out_bytes = (size_t)buffer_elems(&so, c->batch) * rs * (so.cplx ? 2 : 1);
    size_t bytes = in_bytes > out_bytes ? in_bytes : out_bytes;
    unsigned char *hin = malloc(bytes), *hout = malloc(bytes);
    for (size_t i = 0; i < bytes / rs; i++) /* gaps hold NaN: reading them poisons the result */
        store(f32, hin, (int64_t)i, NAN), store(f32, hout, (int64_t)i, NAN);
    double complex *x = calloc((size_t)total, sizeof *x), *ref = calloc((size_t)total, sizeof *ref);
    double complex *full = calloc((size_t)total, sizeof *full);
    double *l1 = calloc((size_t)c->batch, sizeof *l1);
    double scale = 1.0;
    XT_OK(xdev_fft_norm_scale(&d, dir, norm, &scale));
    double(*refs)[2] = calloc((size_t)(c->batch * so.elems), sizeof *refs);
    for (int64_t b = 0; b < c->batch; b++) {
        if (c->type == XDEV_FFT_C2R) {
            /* The input is the spectrum of a real signal x: the output is N x. */
            for (int64_t i = 0; i < total; i++)
                full[i] = rnd();
            dft(c->rank, c->n, -1, full, x);
            for (int64_t e = 0; e < si.elems; e++) {
                double complex v = x[half_to_full(c->rank, c->n, e)];
                int64_t o = offset(&si, b, e);
                store(f32, hin, 2 * o, creal(v)), store(f32, hin, 2 * o + 1, cimag(v));
                l1[b] += cabs(v);
            }
            for (int64_t i = 0; i < total; i++)
                refs[b * so.elems + i][0] = creal(full[i]) * (double)total * scale;
            continue;
        }
        for (int64_t e = 0; e < si.elems; e++) {
            int64_t o = offset(&si, b, e);
            double re = rnd(), im = si.cplx ? rnd() : 0.0;
            if (si.cplx)
                store(f32, hin, 2 * o, re), store(f32, hin, 2 * o + 1, im);
            else
                store(f32, hin, o, re);
            x[e] = (si.cplx ? load(f32, hin, 2 * o) + I * load(f32, hin, 2 * o + 1)
                            : load(f32, hin, o));
            l1[b] += cabs(x[e]);
        }
        dft(c->rank, c->n, dir == XDEV_FFT_FORWARD ? -1 : 1, x, ref);
        for (int64_t e = 0; e < so.elems; e++) {
            double complex v =
                ref[c->type == XDEV_FFT_R2C ? half_to_full(c->rank, c->n, e) : e] * scale;
            refs[b * so.elems + e][0] = creal(v), refs[b * so.elems + e][1] = cimag(v);
        }
    }
    void *din = dalloc(0, bytes), *dout = c->in_place ? din : dalloc(0, bytes);
    XT_OK(xdev_memcpy(din, hin, bytes));
    if (!c->in_place) XT_OK(xdev_memcpy(dout, hout, bytes));
    XT_OK(xdev_fft_exec(&d, din, dout, dir, norm, NULL));
    XT_OK(xdev_memcpy(hout, dout, bytes));
    double tol = f32 ? 2e-6 * (3.0 + log2((double)total)) : 1e-14 * (3.0 + log2((double)total));
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t e = 0; e < so.elems; e++) {
            int64_t o = offset(&so, b, e);
            double gr = so.cplx ? load(f32, hout, 2 * o) : load(f32, hout, o);
            double gi = so.cplx ? load(f32, hout, 2 * o + 1) : 0.0;
            double *r = refs[b * so.elems + e];
            double err = hypot(gr - r[0], gi - r[1]),
                   bound = tol * (l1[b] + 1e-300) * fmax(scale, 1e-300);
            ck_assert_msg(err <= bound, /* NaN fails */
                          "%s %s rank %d n=%lldx%lldx%lld batch %lld %s norm %d: out[%lld][%lld] "
                          "= (%g, %g), expected (%g, %g), err %g > %g",
                          f32 ? "f32" : "f64",
                          c->type == XDEV_FFT_C2C   ? "c2c"
                          : c->type == XDEV_FFT_R2C ? "r2c"
                                                    : "c2r",
                          c->rank, (long long)c->n[0], (long long)c->n[1], (long long)c->n[2],
                          (long long)c->batch, c->in_place ? "in place" : "out of place", norm,
                          (long long)b, (long long)e, gr, gi, r[0], r[1], err, bound);
        }
    XT_OK(xdev_free(din));
    if (!c->in_place) XT_OK(xdev_free(dout));
    free(hin), free(hout), free(x), free(ref), free(full), free(l1), free(refs);
}

static const fcase_t g_cases[] = {
    {C2C, 1, {1}, 1, {0}, 0, 0, {0}, 0, 0, false},
    {C2C, 1, {8}, 3, {0}, 0, 0, {0}, 0, 0, false},
    {C2C, 1, {15}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {C2C, 1, {64}, 1, {0}, 0, 0, {0}, 0, 0, false},
    {R2C, 1, {8}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {R2C, 1, {9}, 1, {0}, 0, 0, {0}, 0, 0, false},
    {C2R, 1, {12}, 3, {0}, 0, 0, {0}, 0, 0, false},
    {C2R, 1, {9}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {C2C, 2, {6, 10}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {R2C, 2, {5, 8}, 1, {0}, 0, 0, {0}, 0, 0, false},
    {C2R, 2, {4, 7}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {C2C, 3, {4, 5, 6}, 1, {0}, 0, 0, {0}, 0, 0, false},
    {R2C, 3, {3, 4, 6}, 2, {0}, 0, 0, {0}, 0, 0, false},
    {C2R, 3, {4, 3, 5}, 1, {0}, 0, 0, {0}, 0, 0, false},
    /* advanced layouts */
    {C2C, 1, {10}, 3, {0}, 2, 25, {0}, 3, 31, false},
    {C2C, 2, {5, 10}, 2, {0, 12}, 0, 0, {0, 11}, 0, 0, false},
    {C2C, 1, {12}, 4, {0}, 4, 1, {0}, 4, 1, false}, /* interleaved batches */
    {R2C, 3, {3, 4, 5}, 2, {0}, 2, 0, {0, 5, 4}, 1, 70, false},
    {C2R, 2, {3, 6}, 2, {0, 5}, 1, 17, {0, 7}, 2, 45, false},
    /* in place */
    {C2C, 3, {3, 4, 5}, 2, {0}, 0, 0, {0}, 0, 0, true},
    {R2C, 1, {16}, 2, {0}, 1, 18, {0}, 1, 9, true},
    {R2C, 2, {4, 6}, 2, {0, 8}, 1, 32, {0, 4}, 1, 16, true},
    {C2R, 2, {4, 6}, 2, {0, 4}, 1, 16, {0, 8}, 1, 32, true},
};

START_TEST(transforms) {
    REQUIRE_FFT();
    for (size_t i = 0; i < sizeof g_cases / sizeof g_cases[0]; i++)
        for (int p = 0; p < 2; p++) {
            const fcase_t *c = &g_cases[i];
            xdev_fft_precision_t prec = p ? XDEV_FFT_F64 : XDEV_FFT_F32;
            if (c->type == C2R) {
                run_fft(c, prec, XDEV_FFT_INVERSE, XDEV_FFT_NORM_NONE);
            } else {
                run_fft(c, prec, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE);
                if (c->type == C2C) run_fft(c, prec, XDEV_FFT_INVERSE, XDEV_FFT_NORM_NONE);
            }
        }
}
END_TEST

/* torch.fft's norm modes: the factor, and forward+inverse = identity
 * (N for NONE). */
START_TEST(normalisation) {
    REQUIRE_FFT();
    static const fcase_t c2c = {C2C, 2, {3, 4}, 2, {0}, 0, 0, {0}, 0, 0, false};
    static const fcase_t r2c = {R2C, 1, {10}, 1, {0}, 0, 0, {0}, 0, 0, false};
    static const fcase_t c2r = {C2R, 1, {10}, 1, {0}, 0, 0, {0}, 0, 0, false};
    xdev_fft_desc_t d = desc_of(&c2c, XDEV_FFT_F64);
    double s;
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, &s));
    ck_assert_double_eq(s, 1.0);
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_INVERSE, XDEV_FFT_NORM_BACKWARD, &s));
    ck_assert_double_eq_tol(s, 1.0 / 12, 1e-15);
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, &s));
    ck_assert_double_eq(s, 1.0);
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, XDEV_FFT_NORM_ORTHO, &s));
    ck_assert_double_eq_tol(s, 1.0 / sqrt(12.0), 1e-15);
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, XDEV_FFT_NORM_FORWARD, &s));
    ck_assert_double_eq_tol(s, 1.0 / 12, 1e-15);
    XT_OK(xdev_fft_norm_scale(&d, XDEV_FFT_INVERSE, XDEV_FFT_NORM_FORWARD, &s));
    ck_assert_double_eq(s, 1.0);
    for (int norm = XDEV_FFT_NORM_NONE; norm <= XDEV_FFT_NORM_FORWARD; norm++)
        for (int p = 0; p < 2; p++) {
            xdev_fft_precision_t prec = p ? XDEV_FFT_F64 : XDEV_FFT_F32;
            run_fft(&c2c, prec, XDEV_FFT_FORWARD, (xdev_fft_norm_t)norm);
            run_fft(&c2c, prec, XDEV_FFT_INVERSE, (xdev_fft_norm_t)norm);
            run_fft(&r2c, prec, XDEV_FFT_FORWARD, (xdev_fft_norm_t)norm);
            run_fft(&c2r, prec, XDEV_FFT_INVERSE, (xdev_fft_norm_t)norm);
        }
    /* Round trip with BACKWARD gives the input back. */
    enum { N = 16 };
    double h[2 * N], back[2 * N];
    for (int i = 0; i < 2 * N; i++)
        h[i] = rnd();
    int64_t n = N;
    xdev_fft_desc_t rd = xdev_fft_desc_basic(C2C, XDEV_FFT_F64, 1, &n, 1);
    double *dx = dalloc(0, sizeof h), *dy = dalloc(0, sizeof h);
    XT_OK(xdev_memcpy(dx, h, sizeof h));
    XT_OK(xdev_fft_exec(&rd, dx, dy, XDEV_FFT_FORWARD, XDEV_FFT_NORM_BACKWARD, NULL));
    XT_OK(xdev_fft_exec(&rd, dy, dy, XDEV_FFT_INVERSE, XDEV_FFT_NORM_BACKWARD, NULL));
    XT_OK(xdev_memcpy(back, dy, sizeof back));
    for (int i = 0; i < 2 * N; i++)
        ck_assert_double_eq_tol(back[i], h[i], 1e-13);
    XT_OK(xdev_free(dx));
    XT_OK(xdev_free(dy));
}
END_TEST

START_TEST(bad_input) {
    int64_t n8 = 8;
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 1, &n8, 1), b;
    void *in = dalloc(0, 1024), *out = dalloc(0, 1024);
    float host[128];
#define EXEC(desc, i, o, dir) xdev_fft_exec(desc, i, o, dir, XDEV_FFT_NORM_NONE, NULL)
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(NULL, in, out, XDEV_FFT_FORWARD), "desc");
    b = d, b.size = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "size");
    b = d, b.rank = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "rank 0");
    b = d, b.rank = 4;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "rank 4");
    b = d, b.n[0] = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "n[0] = 0");
    b = d, b.n[0] = -3;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "n[0] = -3");
    b = d, b.batch = 0;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "batch");
    b = d, b.type = (xdev_fft_type_t)7;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "type");
    b = d, b.precision = (xdev_fft_precision_t)3;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "precision");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&d, in, out, (xdev_fft_direction_t)0), "direction");
    XT_ERR(XDEV_ERROR_INVALID_VALUE,
           xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, (xdev_fft_norm_t)9, NULL), "norm");
    b = d, b.type = R2C;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_INVERSE), "r2c");
    b = d, b.type = C2R;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "c2r");
    int64_t n2[2] = {4, 8};
    b = xdev_fft_desc_basic(C2C, XDEV_FFT_F32, 2, n2, 1), b.inembed[1] = 6;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "inembed[1]");
    b = d, b.ostride = -1;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "ostride");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&d, NULL, out, XDEV_FFT_FORWARD), "'in'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&d, in, NULL, XDEV_FFT_FORWARD), "'out'");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&d, host, out, XDEV_FFT_FORWARD), "device memory");
    b = d, b.batch = 1000; /* 8 * 1000 complex floats do not fit in 1 KiB */
    XT_ERR(XDEV_ERROR_INVALID_VALUE, EXEC(&b, in, out, XDEV_FFT_FORWARD), "past the end");
    if (xt_has_devices(__func__, 2, "cross-device operands")) {
        void *other = dalloc(1, 1024);
        XT_ERR(XDEV_ERROR_CROSS_DEVICE, EXEC(&d, other, out, XDEV_FFT_FORWARD), "in", ":1");
        xdev_stream_t s1;
        XT_OK(xdev_stream_default(xt_dev(1), &s1));
        XT_ERR(XDEV_ERROR_CROSS_DEVICE,
               xdev_fft_exec(&d, in, out, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s1), "stream");
        XT_OK(xdev_free(other));
    }
    double s;
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fft_norm_scale(&d, XDEV_FFT_FORWARD, 0, NULL), "scale");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fft_plan_cache_set_max_size(xt_dev(0), -1), "negative");
    XT_ERR(XDEV_ERROR_INVALID_VALUE, xdev_fft_plan_cache_size(xt_dev(0), NULL), "out");
    XT_ERR(XDEV_ERROR_INVALID_DEVICE, xdev_fft_plan_cache_clear(xt_dev(99)), "99");
    (void)s;
    XT_OK(xdev_free(in));
    XT_OK(xdev_free(out));
}
END_TEST

/* Work goes on the stream given (or the output device's current stream)
 * in order with what is queued there. */
START_TEST(stream_ordered) {
    REQUIRE_FFT();
    if (xdev_launch_blocking()) /* every enqueue waits: the gate would block the call */
        XT_SKIP("XDEV_LAUNCH_BLOCKING=1 makes every enqueue wait for its stream");
    int64_t n = 4;
    xdev_fft_desc_t d = xdev_fft_desc_basic(C2C, XDEV_FFT_F64, 1, &n, 1);
    double h[8] = {1, 0, 0, 0, 0, 0, 0, 0}, out[8], poison[8];
    for (int i = 0; i < 8; i++)
        poison[i] = NAN;
    double *x = dalloc(0, sizeof h), *y = dalloc(0, sizeof h);
    XT_OK(xdev_memcpy(x, h, sizeof h));
    XT_OK(xdev_memcpy(y, poison, sizeof poison));
    xdev_stream_t s, other;
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &s));
    XT_OK(xdev_stream_create(xt_dev(0), XDEV_STREAM_PRIORITY_NORMAL, &other));
    /* Warm-up on s (the plan, and CUDA's lazy loading of the kernels' module
     * at their first launch, which can wait for the device). */
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, s));
    XT_OK(xdev_memcpy_async(y, poison, sizeof poison, s));
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_stream_set_current(s));
    xt_gate_t gate;
    xt_gate_init(&gate);
    xt_opener_t opener;
    xt_opener_start(&opener, &gate, 10000);
    XT_OK(xdev_launch_host_func(s, xt_gate_wait_fn, &gate));
    XT_OK(xdev_fft_exec(&d, x, y, XDEV_FFT_FORWARD, XDEV_FFT_NORM_NONE, NULL));
    ck_assert(xt_gate_wait_entered(&gate, 5000));
    XT_OK(xdev_memcpy_async(out, y, sizeof out, other));
    XT_OK(xdev_stream_synchronize(other));
    ck_assert_msg(isnan(out[0]), "the FFT ran before the work queued ahead of it");
    xt_gate_open(&gate);
    XT_OK(xdev_stream_synchronize(s));
    XT_OK(xdev_memcpy(out, y, sizeof out));
    for (int i = 0; i < 4; i++)
        ck_assert(out[2 * i] == 1.0 && out[2 * i + 1] == 0.0);
    xt_opener_join(&opener);
    xt_gate_destroy(&gate);
    xt_reset_state();
    XT_OK(xdev_stream_destroy(s));
    XT_OK(xdev_stream_destroy(other));
    XT_OK(xdev_free(x));
    XT_OK(xdev_free(y));
}
END_TEST

int main(int argc, char **argv) {
    Suite *s = suite_create("fft");
    TCase *tc = tcase_create("fft");
    tcase_add_checked_fixture(tc, fft_setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, transforms);
    tcase_add_test(tc, normalisation);
    tcase_add_test(tc, bad_input);
    fft_cache_tests(tc);
    tcase_add_test(tc, stream_ordered);
    suite_add_tcase(s, tc);
    fft_host_fn_tests(s);
    SRunner *sr = srunner_create(s);
    return xt_run(sr, "fft", argc, argv);
}
