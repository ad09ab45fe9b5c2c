#include "scale_rows.h"

int scale_rows(const struct params *p, const float *x, int64_t rows, int64_t cols, float *y) {
  if (p->version != SCALE_ROWS_VERSION) return SCALE_ROWS_BAD_VERSION;
  if (rows < 0 || cols < 0) return SCALE_ROWS_BAD_SHAPE;
  for (int64_t i = 0; i < rows; i++) {
    int skip = (p->flags & SCALE_ROWS_SKIP_ODD) && (i % 2 == 1);
    for (int64_t j = 0; j < cols; j++) {
      float v = x[i * cols + j];
      y[i * cols + j] = skip ? v : (float)(v * p->scale * p->taps[j % 5]) + (float)p->offset;
    }
  }
  return SCALE_ROWS_OK;
}
