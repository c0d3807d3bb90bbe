/* Runs the kernel of store_clipped_4x16.ll on a 3x11 float32 matrix and
 * reports the elements it did not write as 2 * x (see ../cpu_backend.md). */
#include <stdio.h>

void store_clipped_kernel(float *x, float *out, int M, int N, int pid_x, int pid_y,
                          int pid_z, int num_x, int num_y, int num_z);

int main(void) {
  enum { M = 3, N = 11 };
  float x[M * N], out[(M + 4) * N];
  for (int i = 0; i < M * N; i++)
    x[i] = (float)(i + 1);
  for (int i = 0; i < (M + 4) * N; i++)
    out[i] = -1.0f;
  store_clipped_kernel(x, out, M, N, 0, 0, 0, 1, 1, 1);
  int bad = 0;
  for (int i = 0; i < (M + 4) * N; i++) {
    float want = i < M * N ? 2.0f * x[i] : -1.0f;
    if (out[i] != want) {
      if (bad < 4)
        printf("row %d column %d: %g, expected %g\n", i / N, i % N, out[i], want);
      bad++;
    }
  }
  printf("%d wrong elements\n", bad);
  return bad != 0;
}
