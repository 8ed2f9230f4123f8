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

#endif
