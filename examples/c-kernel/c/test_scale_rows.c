/* The C library's own test: cc c/test_scale_rows.c c/scale_rows.c && ./a.out */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include "scale_rows.h"

int main(void) {
  struct params p = {SCALE_ROWS_SKIP_ODD, 2.0, SCALE_ROWS_VERSION, {1, 2, 3, 4, 5}, "rows", 1};
  float x[6] = {1, 1, 1, 1, 1, 1}, y[6];
  assert(scale_rows(&p, x, 2, 3, y) == SCALE_ROWS_OK);
  assert(y[0] == 3 && y[1] == 5 && y[2] == 7); /* 1 * 2 * tap + 1 */
  assert(y[3] == 1 && y[4] == 1 && y[5] == 1); /* odd row skipped */
  p.version = 2;
  assert(scale_rows(&p, x, 2, 3, y) == SCALE_ROWS_BAD_VERSION);
  p.version = SCALE_ROWS_VERSION;
  assert(scale_rows(&p, x, -1, 3, y) == SCALE_ROWS_BAD_SHAPE);
  assert(sizeof(struct params) == 56 && offsetof(struct params, offset) == 48);
  puts("scale_rows: C tests passed");
  return 0;
}
