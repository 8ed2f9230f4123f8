/* Small dense products of the tensor chart (tensor_chart.pyx), written out instead of calling
 * BLAS.
 *
 * Why not dgemv: the kernel runs one sentence per OpenMP thread, and SciPy's OpenBLAS takes a
 * global lock to allocate its work buffer whenever a gemv needs more than MAX_STACK_ALLOC bytes
 * (an L-PCFG rule with 16 latent states needs 16 * 16 * 16 doubles).  Measured on a 16-core
 * Xeon (docs/throughput.md): the tensor pass of Pivot+EM with 16 states ran only 1.6x faster on
 * 16 threads than on one while its CPU time grew 6x.  These loops hold no lock and call nothing.
 *
 * Each function is compiled twice on x86-64 GCC/Clang (target_clones): for AVX2 + FMA
 * (x86-64-v3) and for the baseline; the loader picks the clone the processor runs.  The
 * reductions use `omp simd` (the extensions are compiled with -fopenmp), which lets the compiler
 * keep several partial sums in vector lanes.
 */
#ifndef FASTSPECTRAL_SMALL_DENSE_H
#define FASTSPECTRAL_SMALL_DENSE_H

#include <stddef.h>

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(FASTSPECTRAL_NO_CLONES)
#define FS_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FS_CLONES
#endif

/* y[h] += sum_k A[h * n + k] * x[k]   for h < m   (A row-major m x n) */
FS_CLONES static void fs_gemv_rows(int m, int n, const double *A, const double *x, double *y)
{
    for (int h = 0; h < m; h++) {
        const double *row = A + (size_t)h * n;
        double acc = 0.0;
#pragma omp simd reduction(+:acc)
        for (int k = 0; k < n; k++)
            acc += row[k] * x[k];
        y[h] += acc;
    }
}

/* z[k] += sum_h w[h] * A[h * n + k]   for k < n   (A row-major m x n) */
FS_CLONES static void fs_gemv_cols(int m, int n, const double *A, const double *w, double *z)
{
    for (int h = 0; h < m; h++) {
        const double wh = w[h];
        if (wh == 0.0)
            continue;
        const double *row = A + (size_t)h * n;
#pragma omp simd
        for (int k = 0; k < n; k++)
            z[k] += wh * row[k];
    }
}

/* M[i * nc + j] += x[i] * y[j]   (rank-one update of an nb x nc matrix) */
FS_CLONES static void fs_outer_add(int nb, int nc, const double *x, const double *y, double *M)
{
    for (int i = 0; i < nb; i++) {
        const double xi = x[i];
        if (xi == 0.0)
            continue;
        double *row = M + (size_t)i * nc;
#pragma omp simd
        for (int j = 0; j < nc; j++)
            row[j] += xi * y[j];
    }
}

/* The outside step of one hyperedge with W = T^T beta (nb x nc):
 *   bx[i] += sum_j W[i, j] * y[j],    by[j] += sum_i W[i, j] * x[i]. */
FS_CLONES static void fs_bilinear_back(int nb, int nc, const double *W, const double *x,
                                       const double *y, double *bx, double *by)
{
    for (int i = 0; i < nb; i++) {
        const double *row = W + (size_t)i * nc;
        const double xi = x[i];
        double acc = 0.0;
#pragma omp simd reduction(+:acc)
        for (int j = 0; j < nc; j++) {
            acc += row[j] * y[j];
            by[j] += row[j] * xi;
        }
        bx[i] += acc;
    }
}

/* The same two products with a float32 matrix (the parse path's copy of the rule tensors: half
 * the memory traffic of float64; the vectors and the sums stay float64). */
FS_CLONES static void fs_gemv_rows_f(int m, int n, const float *A, const double *x, double *y)
{
    for (int h = 0; h < m; h++) {
        const float *row = A + (size_t)h * n;
        double acc = 0.0;
#pragma omp simd reduction(+:acc)
        for (int k = 0; k < n; k++)
            acc += (double)row[k] * x[k];
        y[h] += acc;
    }
}

FS_CLONES static void fs_gemv_cols_f(int m, int n, const float *A, const double *w, double *z)
{
    for (int h = 0; h < m; h++) {
        const double wh = w[h];
        if (wh == 0.0)
            continue;
        const float *row = A + (size_t)h * n;
#pragma omp simd
        for (int k = 0; k < n; k++)
            z[k] += wh * (double)row[k];
    }
}

/* ---- the dense coarse CKY (cky.pyx, _dense_*): sums over the split points of a chart cell ----
 *
 * A binary rule's inside sum over the split points k of cell [i, j) is a dot product when the
 * children's scores are stored by (start, symbol, end) and by (end, symbol, start): the left
 * child's row L[B] (ends i+1 .. j-1) against the right child's row R[C] (starts i+1 .. j-1), the
 * per-split exponent factor folded into L beforehand.  The rules are grouped by their
 * (left, right) child pair, so one dot product serves every parent of the pair. */

/* s[q] = sum_{d < K} L[pb[q] * ldl + d] * R[pc[q] * ldr + d]   for each pair q < np */
FS_CLONES static void fs_pair_dots(int np, const int *pb, const int *pc, const double *L,
                                   long ldl, const double *R, long ldr, int K, double *s)
{
    for (int q = 0; q < np; q++) {
        const double *x = L + (size_t)pb[q] * ldl;
        const double *y = R + (size_t)pc[q] * ldr;
        double acc = 0.0;
#pragma omp simd reduction(+:acc)
        for (int d = 0; d < K; d++)
            acc += x[d] * y[d];
        s[q] = acc;
    }
}

/* The outside step of the same pairs, with w[q] the pair's weight (sum over its parents of
 * rule probability times the parent's outside score):
 *   OL[pb[q] * ldo + d] += w[q] * Rf[pc[q] * ldf + d]   (outside of the left child, by start)
 *   OR[pc[q] * ldr + d] += w[q] * Lf[pb[q] * ldf + d]   (outside of the right child, by end)
 * for d < K; pairs whose weight is 0 are skipped. */
FS_CLONES static void fs_pair_push(int np, const int *pb, const int *pc, const double *w,
                                   const double *Lf, const double *Rf, long ldf, double *OL,
                                   long ldo, double *OR, long ldr, int K)
{
    for (int q = 0; q < np; q++) {
        const double wq = w[q];
        if (wq == 0.0)
            continue;
        const double *x = Lf + (size_t)pb[q] * ldf;
        const double *y = Rf + (size_t)pc[q] * ldf;
        double *ol = OL + (size_t)pb[q] * ldo;
        double *orr = OR + (size_t)pc[q] * ldr;
#pragma omp simd
        for (int d = 0; d < K; d++) {
            ol[d] += wq * y[d];
            orr[d] += wq * x[d];
        }
    }
}

/* out[d] = x[d] * f[d] for d < K, for the rows x = X + sym[t] * ldx (t < nsym), into
 * out = O + sym[t] * ldo */
FS_CLONES static void fs_scale_rows(int nsym, const int *sym, const double *X, long ldx,
                                    const double *f, int K, double *O, long ldo)
{
    for (int t = 0; t < nsym; t++) {
        const double *x = X + (size_t)sym[t] * ldx;
        double *o = O + (size_t)sym[t] * ldo;
#pragma omp simd
        for (int d = 0; d < K; d++)
            o[d] = x[d] * f[d];
    }
}

#endif
