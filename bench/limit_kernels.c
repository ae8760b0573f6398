/* Memory-bound reference kernels for bench/limit.py: what this machine sustains for the
 * streaming stages of a training epoch, written as plainly as a good C compiler vectorises
 * them (gcc -O3 -march=native -fopenmp; threads from OMP_NUM_THREADS).
 *
 *   triad N REPS         a = b + s*c over N floats (STREAM's triad, in f32; 12 bytes per
 *                        element counted, as STREAM counts: no write-allocate traffic)
 *   adagrad N REPS       cardinal's fused AdaGrad with weight decay over N weights:
 *                        g' = g - ms*cs + lambda*w; acc += g'^2; w -= lr*g'/sqrt(acc), with
 *                        the gradient g and the shift term cs read from a small row that
 *                        stays in L1 (most of W1's rows get no sparse gradient): 16 bytes per
 *                        weight (w and acc read and written)
 *   average N REPS       the weight average a = d*a + e*w over N weights: 12 bytes per weight
 *   gather ROWS NNZ D H REPS
 *                        the sparse first layer: for each of ROWS rows, o = b + sum over NNZ
 *                        random features d of a_d * W[d, :] (W is D x H): 2*NNZ*H flops and
 *                        4*NNZ*H bytes of W per row
 *
 * Prints one line: kernel, median seconds per repetition, and the element count. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *alloc(size_t n, float v) {
    float *p = aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) p[i] = v; /* first touch by the thread that uses it */
    return p;
}

#define ROW 2048 /* the L1-resident gradient row of the adagrad kernel */

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: see the header of limit_kernels.c\n");
        return 2;
    }
    const char *k = argv[1];
    int reps;
    double *t;
    size_t n;
    if (!strcmp(k, "gather")) {
        size_t rows = atol(argv[2]), nnz = atol(argv[3]), d = atol(argv[4]), h = atol(argv[5]);
        reps = atoi(argv[6]);
        float *w = alloc(d * h, 0.001f), *o = alloc(rows * h, 0.f), *b = alloc(h, 0.1f);
        unsigned *idx = malloc(rows * nnz * sizeof(unsigned));
        unsigned s = 12345;
        for (size_t i = 0; i < rows * nnz; i++) {
            s = s * 1103515245u + 12345u;
            idx[i] = (s >> 8) % d;
        }
        t = malloc(reps * sizeof(double));
        for (int r = 0; r < reps; r++) {
            double t0 = now();
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < rows; i++) {
                float *or = o + i * h;
                for (size_t j = 0; j < h; j++) or[j] = b[j];
                for (size_t q = 0; q < nnz; q++) {
                    const float *wr = w + (size_t)idx[i * nnz + q] * h;
                    float a = 0.5f + q;
                    for (size_t j = 0; j < h; j++) or[j] += a * wr[j];
                }
            }
            t[r] = now() - t0;
        }
        n = rows * nnz * h;
        if (o[h / 2] == 12345.f) puts("");
    } else {
        n = atol(argv[2]);
        reps = atoi(argv[3]);
        t = malloc(reps * sizeof(double));
        float *a = alloc(n, 1.f), *b = alloc(n, 2.f), *c = alloc(n, 0.5f);
        float g[ROW], cs[ROW];
        for (int j = 0; j < ROW; j++) g[j] = 0.f, cs[j] = 1e-3f * j;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            if (!strcmp(k, "triad")) {
                const float s = 1.0001f;
#pragma omp parallel for schedule(static)
                for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
            } else if (!strcmp(k, "adagrad")) {
                const float ms = 1e-3f, lambda = 1e-4f, lr = 0.1f;
#pragma omp parallel for schedule(static)
                for (size_t i0 = 0; i0 < n; i0 += ROW) {
                    size_t m = n - i0 < ROW ? n - i0 : ROW;
                    float *w = a + i0, *acc = b + i0;
                    for (size_t j = 0; j < m; j++) {
                        float gj = g[j] - ms * cs[j] + lambda * w[j];
                        acc[j] += gj * gj;
                        w[j] -= lr * gj / sqrtf(acc[j]);
                    }
                }
            } else if (!strcmp(k, "average")) {
                const float d = 0.99f, e = 0.01f;
#pragma omp parallel for schedule(static)
                for (size_t i = 0; i < n; i++) a[i] = d * a[i] + e * c[i];
            } else {
                fprintf(stderr, "unknown kernel %s\n", k);
                return 2;
            }
            t[r] = now() - t0;
        }
        if (a[n / 2] == 12345.f) puts("");
    }
    qsort(t, reps, sizeof(double), cmp);
    printf("%s %.9f %zu %d\n", k, t[reps / 2], n, omp_get_max_threads());
    return 0;
}
