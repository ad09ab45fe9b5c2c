/* A small C kernel library, as a team might already have it: a parameter struct of mixed
 * alignment and a function that takes it by pointer. customop wraps it without changing it. */
#ifndef SCALE_ROWS_H
#define SCALE_ROWS_H

#include <stdint.h>

/* How scale_rows scales: y[i][j] = x[i][j] * scale * taps[j % 5] + offset, rows with
 * `flags & SCALE_ROWS_SKIP_ODD` set and an odd index are left as x. */
struct params {
  uint8_t flags;
  double scale;
  uint16_t version;
  float taps[5];
  char name[8];
  int32_t offset;
};

#define SCALE_ROWS_SKIP_ODD 1u
#define SCALE_ROWS_VERSION 3

/* Error codes. */
#define SCALE_ROWS_OK 0
#define SCALE_ROWS_BAD_VERSION 1
#define SCALE_ROWS_BAD_SHAPE 2

/* Returns SCALE_ROWS_OK, or an error code with nothing written. */
int scale_rows(const struct params *p, const float *x, int64_t rows, int64_t cols, float *y);

#endif
